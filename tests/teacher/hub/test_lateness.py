"""Правило опоздания курса на JupyterHub — в одном модуле, и ``make collect`` судит по нему.

Новичок, которому нужно сменить правило (скажем, дать час форы), правит только
:mod:`feedback.teacher.hub.lateness`: больше нигде в комнате сервера курса и в его командах
срок сдачи не сравнивается, а подменённое правило меняет то, что печатает ``make collect``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from feedback.teacher.commands import hub as hub_command
from feedback.teacher.core.settings import COURSE_ID, ROOT, Settings
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.hub import lateness
from feedback.teacher.hub import release as hub_release
from feedback.teacher.intake import exchange
from feedback.teacher.records import gradebook

LAB = "lab_7_2_training_flops"
HUB_ROOM = ROOT / "feedback" / "teacher" / "hub"
COMMAND = ROOT / "feedback" / "teacher" / "commands" / "hub.py"


def test_only_the_lateness_module_knows_the_due_date():
    """Срок (``duedate``) читает и сравнивает лишь lateness.py — остальные берут его вердикт."""
    knowing = sorted(
        path.relative_to(ROOT).as_posix()
        for path in [*HUB_ROOM.glob("*.py"), COMMAND]
        if "duedate" in path.read_text(encoding="utf-8")
    )
    assert knowing == ["feedback/teacher/hub/lateness.py"]
    assert "lateness.late(" in COMMAND.read_text(encoding="utf-8")


def _submit(settings: Settings, student: str) -> None:
    """Сдача в inbound, как её кладёт ``nbgrader submit``."""
    stamp = "2026-12-01 10:00:00.000000 UTC"
    folder = settings.workspace.exchange / COURSE_ID / "inbound" / f"{student}+{LAB}+{stamp}+ab"
    folder.mkdir(parents=True)
    cell = {"cell_type": "code", "source": "x = 1", "metadata": {}, "outputs": []}
    notebook = {"cells": [cell], "metadata": {}, "nbformat": 4}
    (folder / f"{LAB}.ipynb").write_text(json.dumps(notebook))
    (folder / exchange.TIMESTAMP).write_text(stamp)
    (folder / exchange.SUBMISSION_SECRET).write_text("secret")


@pytest.mark.slow  # база оценок nbgrader: импорт — секунды
def test_make_collect_judges_by_the_rule_of_the_lateness_module(
    tmp_path: Path, monkeypatch, capsys
):
    """Сдача через 2 часа после срока: по правилу курса — опоздала; с правилом «3 часа форы»,
    подставленным в lateness.py, тот же ``make collect`` её опоздавшей не называет."""
    settings = replace(Settings(), work=tmp_path / "work")
    hub_release.prepare_exchange(settings)
    (settings.workspace.exchange / COURSE_ID / "outbound").mkdir(parents=True)
    due = datetime.now(UTC).replace(tzinfo=None) - timedelta(hours=2)
    with gradebook._open(Workspace(settings.work)) as gb:  # срок, как его ставит formgrader
        gb.update_or_create_assignment(LAB, duedate=due)
    _submit(settings, "ivanov")
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(settings.work))
    monkeypatch.delenv("COURSE7_EXCHANGE_DIR", raising=False)

    assert hub_command.main(["collect"]) == 0
    printed = capsys.readouterr().out
    assert "Сданы после срока" in printed and f"ivanov · {LAB}: сдана" in printed

    grace = timedelta(hours=3)
    monkeypatch.setattr(lateness, "is_late", lambda submitted, due: submitted > due + grace)
    assert hub_command.main(["collect"]) == 0
    printed = capsys.readouterr().out
    assert "Работы собраны" in printed and "Сданы после срока" not in printed
    assert (settings.workspace.submitted / "ivanov" / LAB / f"{LAB}.ipynb").is_file()

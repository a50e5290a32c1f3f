"""Выдача отчётов через exchange (``make feedback``): ``nbgrader release_feedback`` для каждой
сдачи из exchange, у которой готов отчёт о ней самой.

Учащиеся забирают отчёты во вкладке Assignments своего JupyterLab. Отчёт выдаётся той сдаче,
которая оценена: новее собранная и ещё не оценённая получила бы отчёт о другой работе.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from feedback.teacher.core import files
from feedback.teacher.core.console import safe_console
from feedback.teacher.core.settings import COURSE_ID, Settings
from feedback.teacher.hub.release import checked, nbgrader_api
from feedback.teacher.intake import exchange, uploads
from feedback.teacher.records import ledger


@dataclass(frozen=True)
class Feedback:
    """Отчёт, который можно выдать через exchange, или почему нельзя."""

    student: str
    lab: str
    submitted: Path
    report: Path
    problem: str | None = None


def _read_graded(path: Path) -> Any:
    try:
        return uploads.read_notebook(path.read_bytes())
    except (OSError, uploads.UnreadableUpload):
        return None


def hub_feedback(settings: Settings) -> list[Feedback]:
    """Отчёты работ, сданных через exchange, и можно ли их выдать.

    Отчёт выдаётся той сдаче, которая оценена: её тетрадка в ``submitted/`` та же, что в
    снимке баллов последнего ``make grade`` (``scores.json``). Собрали новую сдачу и ещё не
    оценили — отчёт не выдаётся: учащийся получил бы отчёт о другой работе.
    """
    graded = ledger.load_scores(settings.workspace) or {}
    found = []
    for secret in sorted(settings.workspace.submitted.glob(f"*/*/{exchange.SUBMISSION_SECRET}")):
        if not secret.is_file() or secret.is_symlink():
            continue  # make collect кладёт сюда только обычные файлы
        folder = secret.parent
        student, lab = folder.parent.name, folder.name
        report = settings.workspace.learner_report(student, lab)
        notebook = _read_graded(folder / f"{lab}.ipynb")
        before = graded.get((student, lab))
        problem = None
        if not report.is_file() or before is None:
            problem = "работа ещё не оценена: make grade"
        elif notebook is None or ledger.upload_fingerprint(notebook) != before.upload:
            problem = "собрана сдача новее оценённой: make grade, затем make feedback"
        found.append(Feedback(student, lab, folder, report, problem))
    return found


def release_feedback(settings: Settings) -> list[Feedback]:
    """``nbgrader release_feedback`` для каждой работы из exchange, у которой готов отчёт.

    nbgrader находит сдачу учащегося по её секрету и времени сдачи (их кладёт рядом с
    тетрадкой ``nbgrader submit``): они копируются к отчёту, как это делает
    ``nbgrader generate_feedback``. Курс не на JupyterHub — ничего не делается.
    """
    if not (settings.workspace.exchange / COURSE_ID).is_dir():
        return []
    ready = hub_feedback(settings)
    api = None
    for index, item in enumerate(ready):
        if item.problem:
            continue
        try:
            for name in (exchange.TIMESTAMP, exchange.SUBMISSION_SECRET):
                data = (item.submitted / name).read_bytes()
                files.write_bytes(item.report.parent / name, data)
        except OSError as error:  # сдача собрана прежней версией или испорчена: не выдаём ей
            why = f"нет файла сдачи {name} ({error.strerror or error}): make collect"
            ready[index] = replace(item, problem=why)
            continue
        api = api or nbgrader_api(settings)
        checked(api.release_feedback(item.lab, item.student), f"выдача отчёта {item.student}")
    return ready


def feedback_lines(released: list[Feedback]) -> list[str]:
    """Строки ``make feedback``: сколько отчётов выдано и какие нет и почему."""
    if not released:
        return []
    done = [item for item in released if not item.problem]
    lines = [
        f"Отчёты выданы через exchange: {len(done)} (учащиеся забирают их во вкладке Assignments)"
    ]
    for item in released:
        if item.problem:
            lines.append(safe_console(f"  не выдан {item.student} · {item.lab}: {item.problem}"))
    return lines

"""Настройки JupyterHub курса (feedback/teacher/hub/)  без запуска JupyterHub.

Учётные записи из списка учащихся, группа formgrader, вход, серверы в своих папках, настройки
nbgrader каждого сервера (id учащегося для exchange — ровно из списка), права exchange, пароли,
которые переживают перезапуск, и выбор отчётов, которые можно выдать через exchange. Весь
семестр в настоящем JupyterHub и Chromium — tests/teacher/hub/test_server_browser.py.
"""

from __future__ import annotations

import json
import stat
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from feedback.teacher.commands import hub as hub_command
from feedback.teacher.core.settings import COURSE_ID, ROOT, Settings
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.hub import collect as hub_collect
from feedback.teacher.hub import config as hub_config
from feedback.teacher.hub import handback, lateness
from feedback.teacher.hub import logins as hub_logins
from feedback.teacher.hub import prepare as hub_prepare
from feedback.teacher.hub import state as hub_state
from feedback.teacher.intake import exchange
from feedback.teacher.records import gradebook, ledger
from feedback.teacher.records.gradebook import TaskScore

ROSTER = (
    "id,first_name,last_name,email\n"
    "ivanov,Иван,Иванов,i@example.org\n"
    "Petrova,Мария,Петрова,p@example.org\n"
)
LAB = "lab_7_2_training_flops"


@pytest.fixture
def prepared_hub(tmp_path) -> hub_state.Hub:
    """Рабочая папка с JupyterHub курса, подготовленным без базы оценок и без npm."""
    proxy = tmp_path / "bin" / "configurable-http-proxy"
    proxy.parent.mkdir()
    proxy.write_text("#!/bin/sh\n")
    proxy.chmod(0o755)
    roster = tmp_path / "students.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    chosen = hub_state.Hub(replace(Settings(), work=tmp_path / "work"), port=18123)
    hub_prepare.prepare(chosen, roster, register=False, proxy=proxy)
    return chosen


def configured(prepared_hub: hub_state.Hub) -> Config:
    config = Config()
    hub_config.configure(config, prepared_hub.workspace)
    return config


def test_accounts_groups_and_login_come_from_the_roster(prepared_hub):
    c = configured(prepared_hub)
    assert c.Authenticator.allowed_users == {"teacher", "ivanov", "petrova"}
    assert c.Authenticator.admin_users == {"teacher"}
    assert c.JupyterHub.load_groups == {
        f"formgrade-{COURSE_ID}": {"users": ["teacher"]},
        f"nbgrader-{COURSE_ID}": {"users": ["ivanov", "petrova"]},
    }
    assert c.JupyterHub.authenticator_class == "shared-password"
    passwords = json.loads(prepared_hub.workspace.hub_passwords.read_text())
    assert c.SharedPasswordAuthenticator.user_password == passwords["learners"]
    assert c.SharedPasswordAuthenticator.admin_password == passwords["teacher"]
    # Пароли — только в passwords.json (читает лишь владелец), не в hub.json.
    assert passwords["learners"] not in prepared_hub.workspace.hub_state.read_text()
    # Всё состояние JupyterHub — в рабочей папке: остановка ничего не теряет.
    assert c.JupyterHub.db_url == f"sqlite:///{prepared_hub.folder / 'jupyterhub.sqlite'}"
    assert Path(c.JupyterHub.cookie_secret_file).parent == prepared_hub.folder
    assert c.SimpleLocalProcessSpawner.home_dir_template == str(prepared_hub.users / "{username}")
    assert c.JupyterHub.bind_url == "http://127.0.0.1:18123"
    assert c.ConfigurableHTTPProxy.command[0].endswith("configurable-http-proxy")


@pytest.mark.slow  # импорт JupyterHub — секунды
def test_jupyterhub_accepts_the_passwords_and_the_spawner(prepared_hub):
    """Пароли проходят проверки самого JupyterHub (длина пароля администратора — от 32)."""
    from jupyterhub.authenticators.shared import SharedPasswordAuthenticator
    from jupyterhub.spawner import SimpleLocalProcessSpawner

    c = configured(prepared_hub)
    auth = SharedPasswordAuthenticator(config=c)
    assert auth.admin_password and auth.user_password and auth.admin_password != auth.user_password
    spawner = SimpleLocalProcessSpawner(config=c, user=SimpleNamespace(name="petrova"))
    assert spawner.home_dir == str(prepared_hub.users / "petrova")


def _nbgrader(folder: Path) -> Config:
    return PyFileConfigLoader("nbgrader_config.py", path=str(folder)).load_config()


def _disabled(folder: Path) -> set[str]:
    page = json.loads((folder / "labconfig" / "page_config.json").read_text())
    return {name for name, off in page["disabledExtensions"].items() if off}


def _server_off(folder: Path) -> set[str]:
    server = json.loads((folder / "jupyter_server_config.json").read_text())
    extensions = server["ServerApp"]["jpserver_extensions"]
    return {name.rsplit(".", 1)[1] for name, on in extensions.items() if not on}


def test_each_learner_submits_under_the_roster_id(prepared_hub):
    """JupyterHub приводит имя входа к нижнему регистру, а exchange получает id из списка."""
    config = _nbgrader(prepared_hub.config / "petrova")
    assert config.CourseDirectory.student_id == "Petrova"
    assert config.CourseDirectory.course_id == COURSE_ID
    assert config.Exchange.root == str(prepared_hub.settings.workspace.exchange)
    assert config.Exchange.path_includes_course is True
    hidden = _disabled(prepared_hub.config / "petrova")
    assert "@jupyter/nbgrader:formgrader" in hidden
    assert "@jupyter/nbgrader:assignment-list" not in hidden
    assert _server_off(prepared_hub.config / "petrova") == {"formgrader", "course_list"}


def test_the_teacher_gets_formgrader_over_the_course(prepared_hub):
    folder = prepared_hub.config / "teacher"
    assert _nbgrader(folder).CourseDirectory.root == str(ROOT)
    hidden = _disabled(folder)
    assert "@jupyter/nbgrader:assignment-list" in hidden
    assert "@jupyter/nbgrader:formgrader" not in hidden
    assert "formgrader" not in _server_off(folder)
    # Вкладка Formgrader — фрейм сервера преподавателя: JupyterHub по умолчанию их запрещает.
    server = json.loads((folder / "jupyter_server_config.json").read_text())["ServerApp"]
    assert (
        server["tornado_settings"]["headers"]["Content-Security-Policy"] == hub_config.TEACHER_CSP
    )


def test_each_server_gets_its_own_settings_and_the_teacher_the_course(prepared_hub):
    spawner = SimpleNamespace(
        user=SimpleNamespace(name="teacher"),
        home_dir=str(prepared_hub.users / "teacher"),
        environment={"KEEP": "1"},
        notebook_dir="",
    )
    hub_config._pre_spawn_hook(spawner)
    assert spawner.notebook_dir == str(ROOT)  # formgrader: курс внутри корня сервера
    assert spawner.environment["COURSE7_GRADING_DIR"] == str(prepared_hub.settings.work)
    assert spawner.environment["COURSE7_EXCHANGE_DIR"] == str(
        prepared_hub.settings.workspace.exchange
    )
    assert spawner.environment["JUPYTER_CONFIG_PATH"] == str(prepared_hub.config / "teacher")
    assert spawner.environment["KEEP"] == "1"

    learner = hub_config.spawn_settings(
        "ivanov", hub_state.HubState.load(prepared_hub.workspace.hub_state)
    )
    assert learner["notebook_dir"] is None
    assert "COURSE7_GRADING_DIR" not in learner["environment"]
    assert learner["environment"]["JUPYTER_CONFIG_PATH"] == str(prepared_hub.config / "ivanov")


def test_a_restart_keeps_passwords_and_learners_files(prepared_hub, tmp_path):
    before = json.loads(prepared_hub.workspace.hub_passwords.read_text())
    mode = stat.S_IMODE(prepared_hub.workspace.hub_passwords.stat().st_mode)
    assert mode & 0o077 == 0
    work = prepared_hub.users / "ivanov" / "course7" / LAB / f"{LAB}.ipynb"
    work.parent.mkdir(parents=True)
    work.write_text("{}")
    hub_prepare.prepare(
        prepared_hub, register=False, proxy=tmp_path / "bin" / "configurable-http-proxy"
    )
    assert json.loads(prepared_hub.workspace.hub_passwords.read_text()) == before
    assert work.read_text() == "{}"


def test_the_exchange_is_open_to_every_learner(prepared_hub):
    mode = stat.S_IMODE(prepared_hub.settings.workspace.exchange.stat().st_mode)
    assert mode == 0o1777  # все сдают, но чужую папку не переименовать (бит sticky)


def test_the_committed_config_file_sets_up_the_hub(prepared_hub, monkeypatch):
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(prepared_hub.settings.work))
    c = PyFileConfigLoader("jupyterhub_config.py", path=str(ROOT / "hub")).load_config()
    assert c.Authenticator.allowed_users == {"teacher", "ivanov", "petrova"}
    assert c.JupyterHub.spawner_class == "jupyterhub.spawner.SimpleLocalProcessSpawner"


@pytest.mark.parametrize(
    ("ids", "teacher", "message"),
    [
        (["Ivanov", "ivanov"], "teacher", "не различает"),
        (["Teacher"], "teacher", "совпадает с именем преподавателя"),
    ],
)
def test_ids_jupyterhub_cannot_tell_apart_are_refused(ids, teacher, message):
    with pytest.raises(hub_state.HubError, match=message):
        hub_logins.learners(ids, teacher)


def test_no_hub_without_a_roster_or_a_proxy(tmp_path, monkeypatch):
    chosen = hub_state.Hub(replace(Settings(), work=tmp_path / "work"))
    with pytest.raises(hub_state.HubError, match="нет списка учащихся"):
        hub_prepare.prepare(chosen, register=False, proxy=tmp_path)
    roster = tmp_path / "students.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    monkeypatch.setattr(hub_prepare, "find_proxy", lambda: None)
    with pytest.raises(hub_state.HubError, match="configurable-http-proxy"):
        hub_prepare.prepare(chosen, roster, register=False)


def test_labs_are_named_by_id_or_number(capsys):
    settings = Settings()
    assert settings.find_lab("7.2").id == LAB
    assert settings.find_lab(LAB).id == LAB
    # make hub-release LAB=7.9: нет такой — сообщение преподавателю и код 2, не трассировка.
    assert hub_command.main(["release", "7.9"]) == 2
    assert "нет лабораторной «7.9»" in capsys.readouterr().err


def test_inbound_lists_every_attempt(tmp_path):
    settings = replace(Settings(), work=tmp_path)
    inbound = settings.workspace.exchange / COURSE_ID / "inbound"
    for name in (
        f"Petrova+{LAB}+2026-12-01 10:00:00.000000 UTC+abc",
        f"Petrova+{LAB}+2026-12-02 10:00:00.000000 UTC+def",
        f"ivanov+{LAB}+2026-12-01 11:00:00.000000 UTC",
    ):
        (inbound / name).mkdir(parents=True)
    found = [(item["student"], item["timestamp"][:10]) for item in hub_collect.inbound(settings)]
    assert found == [("Petrova", "2026-12-01"), ("Petrova", "2026-12-02"), ("ivanov", "2026-12-01")]


def _submission(settings: Settings, student: str, answer: str) -> dict:
    folder = settings.workspace.submitted / student / LAB
    folder.mkdir(parents=True)
    nb = {"cells": [{"cell_type": "code", "source": answer, "metadata": {}}], "metadata": {}}
    (folder / f"{LAB}.ipynb").write_text(json.dumps(nb))
    (folder / exchange.TIMESTAMP).write_text("2026-12-02 10:00:00.000000 UTC")
    (folder / exchange.SUBMISSION_SECRET).write_text(f"secret-{student}")
    report = settings.workspace.feedback_reports / student / LAB / f"{LAB}.html"
    report.parent.mkdir(parents=True)
    report.write_text("<html></html>")
    return nb


def test_feedback_goes_only_to_the_submission_that_was_graded(tmp_path):
    """Отчёт — той сдаче, которую оценил make grade; собранная позже ждёт нового make grade."""
    settings = replace(Settings(), work=tmp_path)
    graded = _submission(settings, "ivanov", "x = 1")
    newer = _submission(settings, "Petrova", "y = 1")
    scores = {
        (student, LAB): ledger.Graded(
            ledger.upload_fingerprint(nb), {"task": TaskScore(1.0, None, 1.0, False)}
        )
        for student, nb in (("ivanov", graded), ("Petrova", newer))
    }
    ledger.save_scores(settings.workspace, scores)
    resubmitted = settings.workspace.submitted / "Petrova" / LAB / f"{LAB}.ipynb"
    resubmitted.write_text(json.dumps({**newer, "cells": []}))
    found = {item.student: item.problem for item in handback.hub_feedback(settings)}
    assert found["ivanov"] is None
    assert "новее оценённой" in found["Petrova"]
    assert handback.release_feedback(settings) == []  # курс не на JupyterHub: exchange нет


def test_the_exchange_can_live_outside_the_work_folder(tmp_path):
    """На сервере exchange — общая папка (COURSE7_EXCHANGE_DIR): её видят и учащиеся, и сбор."""
    shared = tmp_path / "srv" / "exchange"
    env = {"COURSE7_GRADING_DIR": str(tmp_path / "work"), "COURSE7_EXCHANGE_DIR": str(shared)}
    settings = Settings.from_env(env)
    assert settings.workspace.exchange == shared
    assert (
        Settings.from_env({"COURSE7_GRADING_DIR": str(tmp_path)}).workspace.exchange
        == tmp_path / "exchange"
    )
    learner = _nbgrader(hub_config.write_user_config(tmp_path / "config", "ivanov", settings))
    assert learner.Exchange.root == str(shared)


def test_late_submissions_are_named_against_the_due_date(tmp_path):
    """Опоздавшие — по сроку лабораторной в базе nbgrader и timestamp.txt сдачи; сдача ровно в
    срок и работа без времени сдачи (архив Moodle) — не опоздание."""
    settings = replace(Settings(), work=tmp_path)
    assert lateness.late(settings) == []  # базы ещё нет: сроков нет
    with gradebook._open(Workspace(tmp_path)) as gb:
        gb.update_or_create_assignment(LAB, duedate="2026-12-01 23:59:00 UTC")
    stamps = {
        "ivanov": "2026-12-03 23:58:30.500000 UTC",
        "Petrova": "2026-12-01 23:59:00.000000 UTC",
        "sidorov": "2026-12-01 23:58:59.999999 UTC",
        "smirnov": "2026-12-02 00:00:01.000000 UTC",
    }
    for student, stamp in stamps.items():
        folder = settings.workspace.submitted / student / LAB
        folder.mkdir(parents=True)
        (folder / exchange.TIMESTAMP).write_text(stamp)
    (settings.workspace.submitted / "kuznetsov" / LAB).mkdir(parents=True)  # из архива Moodle
    found = {item.student: item.seconds for item in lateness.late(settings)}
    assert found == {"ivanov": 2 * 86400 - 29.5, "smirnov": 61}
    lines = lateness.late_lines(lateness.late(settings))
    assert lines[1:] == [
        f"  ivanov · {LAB}: сдана 2026-12-03 23:58 UTC, срок 2026-12-01 23:59 UTC — на 2 дня",
        f"  smirnov · {LAB}: сдана 2026-12-02 00:00 UTC, срок 2026-12-01 23:59 UTC — на 2 минуты",
    ]
    assert lateness.late_lines([]) == []


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (1, "на 1 минуту"),
        (5 * 3600 + 120, "на 5 часов 2 минуты"),
        (86400 + 3 * 3600 + 21 * 60, "на 1 день 3 часа 21 минуту"),
        (5 * 86400 + 60, "на 5 дней 1 минуту"),
    ],
)
def test_how_late_is_said_in_words(seconds, words):
    assert lateness.how_late(seconds) == words

"""Режим класса ``make hub`` (feedback/teacher/hub/accounts.py) без запуска JupyterHub.

Учётные записи Unix из списка учащихся (настоящие ``useradd`` с приставкой этого прогона и
``userdel -r`` в конце), свой пароль у каждого (его принимает PAM), список паролей только для
владельца, закрытые клон курса и рабочая папка, exchange nbgrader и настройки JupyterHub
(вход PAM, сервер каждого — его пользователь Unix). Два учащихся в настоящем JupyterHub и
Chromium — tests/teacher/hub/test_accounts_browser.py.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace

import pytest
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

from feedback.teacher.commands import hub as hub_command
from feedback.teacher.core.settings import COURSE_ID, Settings
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.hub import accounts as hub_users
from feedback.teacher.hub import config as hub_config
from feedback.teacher.hub import prepare as hub_prepare
from feedback.teacher.hub import state as hub_state

ROSTER = (
    "id,first_name,last_name,email\n"
    "ivanov,Иван,Иванов,i@example.org\n"
    'Petrova,Мария,"<b>Петрова</b>:1,\nx",p@example.org\n'
)
SOLUTION = "solutions/lab_7_2_training_flops/lab_7_2_training_flops.ipynb"

needs_root = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("useradd") is None,
    reason="режим класса заводит пользователей Unix: нужны root и useradd",
)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


# --------------------------------------------------------------------------- без root


def test_unix_names_carry_the_prefix_and_stay_distinct():
    assert hub_users.unix_name("ivanov") == "c7-ivanov"
    assert hub_users.unix_name("Petrova") == "c7-petrova"
    dotted, underscored = hub_users.unix_name("a.b"), hub_users.unix_name("a_b")
    assert dotted.startswith("c7-a_b-") and underscored == "c7-a_b" and dotted != underscored
    mail = hub_users.unix_name("ivan.ivanov.the.very.long.name@university.example.org")
    assert len(mail) <= hub_users.NAME_LIMIT and mail.startswith("c7-ivan_ivanov")
    assert hub_users.course_group() == "c7-hub"
    with pytest.raises(hub_users.ClassError, match="приставка"):
        hub_users.check_prefix("C7_")


def test_two_ids_with_one_unix_name_are_refused():
    with pytest.raises(hub_users.ClassError, match="одно имя Unix"):
        hub_users.class_accounts({"Ivanov": "", "ivanov": ""}, "teacher")
    chosen = hub_users.class_accounts({"ivanov": "Иванов Иван"}, "teacher")
    assert [(item.login, item.student_id) for item in chosen] == [
        ("c7-teacher", None),
        ("c7-ivanov", "ivanov"),
    ]


def test_passwords_are_long_enough_and_unambiguous():
    seen = {hub_users.new_password(hub_users.LEARNER_PASSWORD) for _ in range(50)}
    assert len(seen) == 50
    assert all(len(item) == 12 and not set(item) & set("0O1lI") for item in seen)


def test_the_printed_list_escapes_names_from_the_roster():
    account = hub_users.Account("c7-petrova", "Petrova", "<b>Петрова</b> Мария")
    page = hub_users.password_page([(account, "pw<&>")], "http://hub:8000/")
    assert "<b>Петрова" not in page and "&lt;b&gt;Петрова&lt;/b&gt; Мария" in page
    assert "pw&lt;&amp;&gt;" in page and "c7-petrova" in page
    assert "default-src 'none'" in page


def test_make_hub_is_the_class_for_root_and_the_trial_otherwise():
    assert hub_state.choose_mode(None, euid=0) == hub_state.CLASS
    assert hub_state.choose_mode(None, euid=1000) == hub_state.TRIAL
    assert hub_state.choose_mode("trial", euid=0) == hub_state.TRIAL
    with pytest.raises(hub_state.HubError, match="HUB_MODE"):
        hub_state.choose_mode("open", euid=0)


def test_a_python_closed_to_others_is_named(tmp_path):
    closed = tmp_path / "closed"
    (closed / "bin").mkdir(parents=True)
    python = closed / "bin" / "python"
    python.write_text("")
    python.chmod(0o755)
    closed.chmod(0o700)
    assert hub_users.unreachable(python) is not None  # tmp_path сам закрыт или closed
    with pytest.raises(hub_users.ClassError, match="не могут запустить Python"):
        hub_users.check_environment(python)


# --------------------------------------------------------------------------- от root


@pytest.fixture
def place():
    """Папка, куда «прочие» могут пройти (tmp_path pytest закрыт), и приставка этого прогона."""
    base = Path(tempfile.mkdtemp(prefix="course7-class-", dir="/tmp"))
    base.chmod(0o711)
    prefix = f"t{secrets.token_hex(3)}-"
    yield base, prefix
    folder = base / "course" / ".course-work" / Workspace.HUB
    try:
        hub_users.remove(folder, prefix)
    finally:
        for entry in pwd.getpwall():  # на случай упавшего теста: только пользователи прогона
            if entry.pw_name.startswith(prefix):
                subprocess.run(["userdel", "-r", entry.pw_name], capture_output=True)
        subprocess.run(["groupdel", hub_users.course_group(prefix)], capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


def make_course(base: Path) -> Path:
    """Маленький клон курса: решения, тетрадки учащихся, пакет и .venv с открытым Python."""
    root = base / "course"
    for name in ("solutions/lab_7_2_training_flops", "notebooks/lab", "feedback", "tests"):
        (root / name).mkdir(parents=True)
    (root / SOLUTION).write_text("{}")
    (root / "nbgrader_config.py").write_text("c = get_config()\n")
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "lib").mkdir()
    (root / ".venv" / "bin" / "python").symlink_to("/usr/bin/python3")
    for folder in (root, *[p for p in root.rglob("*") if p.is_dir()]):
        folder.chmod(0o755)
    return root


@pytest.fixture
def class_hub(place):
    base, prefix = place
    root = make_course(base)
    roster = base / "students.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    proxy = base / "configurable-http-proxy"
    proxy.write_text("#!/bin/sh\n")
    proxy.chmod(0o755)
    settings = replace(Settings(), root=root, work=root / ".course-work")
    chosen = hub_state.Hub(
        settings,
        port=18124,
        mode=hub_state.CLASS,
        prefix=prefix,
        shared=base / "srv",
        homes=base / "home",
        python=root / ".venv" / "bin" / "python",
    )
    state = hub_prepare.prepare(chosen, roster, register=False, proxy=proxy)
    return chosen, state, prefix


@needs_root
def test_each_learner_is_a_unix_user_with_a_closed_home(class_hub):
    chosen, state, prefix = class_hub
    assert state.learners == {f"{prefix}ivanov": "ivanov", f"{prefix}petrova": "Petrova"}
    assert state.teacher == f"{prefix}teacher"
    group = hub_users.course_group(prefix)
    for login in (*state.learners, state.teacher):
        entry = pwd.getpwnam(login)
        home = Path(entry.pw_dir)
        assert home.parent == chosen.homes
        assert (home.stat().st_uid, mode(home)) == (entry.pw_uid, 0o700)
        assert entry.pw_shell == hub_users.NOLOGIN
        assert login in hub_users._members(group)
    assert sorted(state.created) == sorted([*state.learners, state.teacher])
    # Имя из списка — в GECOS без разделителей полей /etc/passwd.
    assert pwd.getpwnam(f"{prefix}petrova").pw_gecos == "<b>Петрова</b> 1  x Мария"
    # Чья учётная запись: по этой таблице сбор сверяет владельца сдачи с id.
    assert hub_users.recorded(chosen.folder) == {state.teacher: None, **state.learners}


@needs_root
def test_each_learner_logs_in_with_an_own_password_from_a_list_only_the_owner_reads(class_hub):
    import pamela

    chosen, state, prefix = class_hub
    listing = chosen.folder / hub_users.PASSWORD_LIST
    with listing.open(encoding="utf-8") as fh:
        rows = {row["login"]: row for row in csv.DictReader(fh)}
    assert set(rows) == {*state.learners, state.teacher}
    assert rows[f"{prefix}petrova"]["id"] == "Petrova"
    assert rows[f"{prefix}teacher"]["id"] == ""  # преподаватель
    assert len({row["password"] for row in rows.values()}) == 3
    for name in (hub_users.PASSWORD_LIST, hub_users.PASSWORD_PAGE, hub_users.PASSWORD_STORE):
        assert mode(chosen.folder / name) == 0o600
    for login, row in rows.items():
        pamela.authenticate(login, row["password"], service="login")  # PAM его принимает

    # Повторный make hub: пароли и учётные записи те же, список тот же.
    before = listing.read_text(encoding="utf-8")
    again = hub_prepare.prepare(chosen, None, register=False, proxy=state.proxy)
    assert again.created == [] and listing.read_text(encoding="utf-8") == before


@needs_root
def test_the_course_and_the_work_folder_are_closed_to_learners(class_hub):
    chosen, state, _ = class_hub
    root, work = chosen.settings.root, chosen.settings.work
    assert mode(work) == 0o700 and mode(root) == 0o711
    for closed in ("solutions", "tests", "nbgrader_config.py"):
        assert mode(root / closed) & 0o077 == 0, closed
    for shared in ("notebooks", "feedback", ".venv"):
        assert mode(root / shared) & 0o005 == 0o005, shared
    assert root / "solutions" in state.closed


@needs_root
def test_the_exchange_is_as_nbgrader_wants_and_reachable_through_the_work_folder(class_hub):
    chosen, _, prefix = class_hub
    exchange = chosen.shared / "exchange"
    info = exchange.stat()
    assert (info.st_uid, mode(exchange)) == (0, 0o1777)
    link = chosen.settings.work / "exchange"
    assert link.is_symlink() and link.resolve() == exchange.resolve()
    assert hub_users.unreachable(exchange) is None
    # Папки курса — от root, с правами nbgrader: учащийся не займёт course7/ первым.
    course = exchange / COURSE_ID
    assert [(path.stat().st_uid, mode(path)) for path in (course, course / "inbound")] == [
        (0, 0o755),
        (0, 0o3733),
    ]
    # Настройки сервера учащегося: exchange по настоящему пути, читает только он сам.
    folder = chosen.config / f"{prefix}petrova"
    assert folder.parent == chosen.shared / "config"
    config = PyFileConfigLoader("nbgrader_config.py", path=str(folder)).load_config()
    assert config.CourseDirectory.student_id == "Petrova"
    assert config.CourseDirectory.course_id == COURSE_ID
    assert config.Exchange.root == str(exchange.resolve())
    petrova = pwd.getpwnam(f"{prefix}petrova")
    assert (folder.stat().st_uid, folder.stat().st_gid, mode(folder)) == (0, petrova.pw_gid, 0o750)
    server = json.loads((folder / "jupyter_server_config.json").read_text())["ServerApp"]
    assert server["terminado_settings"]["shell_command"] == [hub_users.TERMINAL]


@needs_root
def test_jupyterhub_logs_in_with_pam_and_runs_each_server_as_its_user(class_hub):
    chosen, state, prefix = class_hub
    c = Config()
    hub_config.configure(c, chosen.workspace)
    assert c.JupyterHub.authenticator_class == "pam"
    assert c.JupyterHub.spawner_class == "feedback.teacher.hub.spawner.CourseSpawner"
    assert c.Authenticator.allowed_users == {*state.learners, state.teacher}
    assert c.Authenticator.admin_users == {state.teacher}
    assert c.CourseSpawner.run_as == {state.teacher: pwd.getpwuid(os.geteuid()).pw_name}
    spawner = SimpleNamespace(
        user=SimpleNamespace(name=f"{prefix}ivanov"), environment={}, notebook_dir=""
    )
    c.Spawner.pre_spawn_hook(spawner)
    assert spawner.environment["JUPYTER_CONFIG_PATH"] == str(chosen.config / f"{prefix}ivanov")
    assert spawner.notebook_dir == ""  # учащийся — в своей домашней папке
    teacher = SimpleNamespace(user=SimpleNamespace(name=state.teacher), environment={})
    teacher.notebook_dir = ""
    c.Spawner.pre_spawn_hook(teacher)
    assert teacher.notebook_dir == str(chosen.settings.root)  # formgrader над курсом
    assert teacher.environment["COURSE7_GRADING_DIR"] == str(chosen.settings.work)
    assert teacher.environment["JUPYTER_CONFIG_PATH"] == str(chosen.config / state.teacher)


@needs_root
@pytest.mark.slow
def test_a_foreign_unix_user_with_the_same_name_is_never_taken(place):
    base, prefix = place
    subprocess.run(["useradd", "--no-create-home", f"{prefix}ivanov"], check=True)
    try:
        account = hub_users.Account(f"{prefix}ivanov", "ivanov")
        hub_users.ensure_group(hub_users.course_group(prefix))
        with pytest.raises(hub_users.ClassError, match="заведён не make hub"):
            hub_users.ensure_user(account, hub_users.course_group(prefix), base)
        with pytest.raises(hub_users.ClassError, match="не в группе"):
            hub_users.remove_user(account.login, hub_users.course_group(prefix))
        assert pwd.getpwnam(account.login)
    finally:
        subprocess.run(["userdel", f"{prefix}ivanov"], check=True)


@needs_root
def test_after_the_semester_the_users_and_their_passwords_are_removed(
    class_hub, monkeypatch, capsys
):
    chosen, state, prefix = class_hub
    homes = [Path(pwd.getpwnam(login).pw_dir) for login in state.learners]
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(chosen.settings.work))
    assert hub_command.main(["remove-users"]) == 1  # без --yes — только список
    assert f"{prefix}petrova" in capsys.readouterr().out
    assert all(home.is_dir() for home in homes)
    assert hub_command.main(["remove-users", "--yes"]) == 0  # приставка — та, что у make hub
    assert f"{prefix}petrova" in capsys.readouterr().out
    assert not [entry for entry in pwd.getpwall() if entry.pw_name.startswith(prefix)]
    assert not any(home.exists() for home in homes)
    assert not (chosen.folder / hub_users.PASSWORD_LIST).exists()


@needs_root
def test_the_trial_exchange_moves_to_the_class_whole(place):
    """exchange пробы (выпуски и сдачи) переезжает в общую папку класса целиком, а второй
    exchange рядом с ним не затирается: make hub просит свести их руками."""
    base, _ = place
    settings = replace(Settings(), root=base / "course", work=base / "work")
    submission = settings.work / "exchange" / COURSE_ID / "inbound" / "ivanov+lab+1"
    submission.mkdir(parents=True)
    (submission / "lab.ipynb").write_text("{}")
    target = hub_users.prepare_exchange_link(settings, base / "srv")
    assert target == (base / "srv" / "exchange").resolve()
    assert (target / COURSE_ID / "inbound" / "ivanov+lab+1" / "lab.ipynb").read_text() == "{}"
    assert (settings.work / "exchange").resolve() == target
    assert hub_users.prepare_exchange_link(settings, base / "srv") == target  # повтор — то же

    other = replace(settings, work=base / "work2")
    (other.work / "exchange").mkdir(parents=True)
    with pytest.raises(hub_users.ClassError, match="оба exchange"):
        hub_users.prepare_exchange_link(other, base / "srv")
    assert (target / COURSE_ID / "inbound" / "ivanov+lab+1").is_dir()


@needs_root
def test_a_course_folder_taken_by_a_learner_stops_make_hub(class_hub):
    chosen, _, prefix = class_hub
    course = chosen.shared / "exchange" / COURSE_ID
    shutil.rmtree(course)
    course.mkdir()
    learner = pwd.getpwnam(f"{prefix}ivanov")
    os.chown(course, learner.pw_uid, learner.pw_gid)
    with pytest.raises(hub_state.HubError, match="создал не root"):
        hub_prepare.prepare(chosen, None, register=False, proxy=Path(sys.executable))

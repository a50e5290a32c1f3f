"""Класс на одном сервере (``make hub`` от root): двое учащихся в настоящем JupyterHub и Chromium.

Режим класса (feedback/teacher/hub/accounts.py) заводит каждому учащемуся своего пользователя
Unix с приставкой этого прогона и своим паролем. Иванов не входит с паролем Петровой, входит
со своим, открывает в своём JupyterLab тетрадку и выполняет ячейку, которая пытается прочесть
чужое: тетрадку из домашней папки Петровой, решения курса, список паролей, базу JupyterHub и
настройки сервера Петровой, — всё «Permission denied», а тетрадки учащихся курса и свою папку
он читает. Петрова входит со своим паролем; сервер каждого — процесс его пользователя Unix.
Пользователи удаляются в конце (``userdel -r``).

Python окружения курса должен быть открыт учащимся; здесь он бывает в закрытом /root (pyenv) —
тогда тест на время открывает проход (``o+x``, без чтения) и возвращает права.

Без браузера — exchange nbgrader между пользователями Unix: преподаватель выпускает 7.2,
учащийся берёт и сдаёт её командами nbgrader от своего пользователя (как вкладка Assignments),
сосед не видит чужой сдачи, ``make collect`` кладёт её в submitted/ под id из списка.

Снимки — в .course-work/screenshots/hub_class/.
"""

from __future__ import annotations

import csv
import json
import os
import pwd
import re
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import pytest

from feedback.settings import REQUIRE_BROWSER
from feedback.teacher.core.settings import ROOT, Settings
from feedback.teacher.hub import accounts as hub_users
from feedback.teacher.hub import collect as hub_collect
from feedback.teacher.hub import prepare as hub_prepare
from feedback.teacher.hub import process as hub_process
from feedback.teacher.hub import release as hub_release
from feedback.teacher.hub import state as hub_state

from browser_support import (
    CHROMIUM_FLAGS,
    SCREENSHOTS,
    chromium_or_skip,
    open_notebook,
    run_all_cells,
)

pytestmark = [pytest.mark.slow, pytest.mark.browser]

SHOTS = SCREENSHOTS / "hub_class"
ROSTER = (
    "id,first_name,last_name,email\n"
    "ivanov,Иван,Иванов,ivanov@example.org\n"
    "Petrova,Мария,Петрова,petrova@example.org\n"
)
LAB = "lab_7_2_training_flops"
#: Ячейка учащегося: что из чужого она может прочесть (путь → ОТКРЫТ или ЗАКРЫТ).
PROBE = """\
import json, pathlib
found = {}
for label, path in json.loads(PATHS).items():
    try:
        pathlib.Path(path).read_bytes()
        found[label] = "ОТКРЫТ"
    except PermissionError:
        found[label] = "ЗАКРЫТ"
print("ИТОГ", json.dumps(found, ensure_ascii=False, sort_keys=True))
"""


def _open_for_others(path: Path) -> list[tuple[Path, int]]:
    """Проход ``o+x`` в папки на пути к ``path``, куда «прочим» нельзя; прежние права — списком."""
    changed = []
    for folder in reversed(Path(path).resolve().parents):
        mode = stat.S_IMODE(folder.stat().st_mode)
        if not mode & stat.S_IXOTH:
            changed.append((folder, mode))
            folder.chmod(mode | stat.S_IXOTH)
    return changed


@pytest.fixture
def python_for_learners():
    """Python и .venv курса, открытые учащимся на время теста (см. docstring модуля)."""
    python = Path(sys.executable)
    changed = []
    for path in (python.resolve(), python.parent.parent, Path(ROOT) / "feedback"):
        changed += _open_for_others(path)
    yield python
    for folder, mode in reversed(changed):
        folder.chmod(mode)


def _proxy_or_skip() -> Path:
    proxy = hub_prepare.find_proxy()
    if proxy is None:
        message = "нет configurable-http-proxy: make hub-proxy (npm ci из hub/package-lock.json)"
        if REQUIRE_BROWSER.read() is True:
            pytest.fail(message)
        pytest.skip(message)
    return proxy


def _course_copy(base: Path) -> Path:
    """Клон курса для класса: решения, тетрадки учащихся и настройки JupyterHub."""
    root = base / "course"
    for name in (f"solutions/{LAB}", f"notebooks/{LAB}", "hub"):
        shutil.copytree(ROOT / name, root / name)
    shutil.copy2(ROOT / "nbgrader_config.py", root / "nbgrader_config.py")
    return root


def _notebook(source: str) -> dict:
    return {
        "cells": [{"cell_type": "code", "metadata": {}, "source": source, "outputs": []}],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def _give(path: Path, login: str, text: str) -> Path:
    """Файл в домашней папке учащегося, как будто он сам его сохранил."""
    entry = pwd.getpwnam(login)
    path.write_text(text, encoding="utf-8")
    os.chown(path, entry.pw_uid, entry.pw_gid)
    return path


@contextmanager
def class_course(python: Path, work=None):
    """Клон курса в открытой папке /tmp, Hub в режиме класса с приставкой этого прогона;
    по выходе пользователи прогона удалены (``userdel -r``), папка — тоже.

    ``work(папка)`` — готовит рабочую папку (например, ``fresh_work``: лабораторные в базе)."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("режим класса заводит пользователей Unix: нужны root и useradd")
    base = Path(tempfile.mkdtemp(prefix="course7-classhub-", dir="/tmp"))
    base.chmod(0o711)
    prefix = f"t{secrets.token_hex(3)}-"
    root = _course_copy(base)
    if work is not None:
        work(root / ".course-work")
    roster = base / "students.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    settings = replace(Settings.from_env(), root=root, work=root / ".course-work")
    chosen = hub_state.Hub(
        settings,
        port=hub_prepare.free_port(),
        mode=hub_state.CLASS,
        prefix=prefix,
        shared=base / "srv",
        homes=base / "home",
        python=python,
    )
    try:
        yield chosen, roster, prefix
    finally:
        try:
            hub_users.remove(chosen.folder, prefix)
        finally:
            for entry in pwd.getpwall():  # и после упавшего prepare: только пользователи прогона
                if entry.pw_name.startswith(prefix):
                    subprocess.run(["userdel", "-r", entry.pw_name], capture_output=True)
            subprocess.run(["groupdel", hub_users.course_group(prefix)], capture_output=True)
            shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def class_hub(python_for_learners):
    with class_course(python_for_learners) as (chosen, roster, prefix):
        chromium = chromium_or_skip("класс на одном сервере")
        proxy = _proxy_or_skip()
        shutil.rmtree(SHOTS, ignore_errors=True)
        SHOTS.mkdir(parents=True)
        log = chosen.settings.root.parent / "jupyterhub.log"
        state = hub_prepare.prepare(chosen, roster, register=False, proxy=proxy)
        try:
            with hub_process.running(chosen, log):
                yield chosen, state, chromium, prefix, log
        finally:
            if log.is_file():
                shutil.copy2(log, SHOTS / "jupyterhub.log")


def _passwords(chosen: hub_state.Hub) -> dict[str, str]:
    with (chosen.folder / hub_users.PASSWORD_LIST).open(encoding="utf-8") as fh:
        return {row["login"]: row["password"] for row in csv.DictReader(fh)}


@contextmanager
def browser(chromium: str, url: str):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_FLAGS
        )

        def person():
            """Страница в своём контексте браузера (свои cookie): один человек."""
            context = launched.new_context(viewport={"width": 1280, "height": 800})
            context.set_default_timeout(60_000)
            context.route(
                "**/*",
                lambda route: (
                    route.continue_() if route.request.url.startswith(url + "/") else route.abort()
                ),
            )
            return context.new_page()

        try:
            yield person
        finally:
            launched.close()


def submit_login(page, url: str, login: str, password: str) -> bool:
    """Вход на странице JupyterHub; True — пароль принят (сервер запускается)."""
    page.goto(f"{url}/hub/login")
    page.fill("#username_input", login)
    page.fill("#password_input", password)
    page.click("#login_submit")
    page.wait_for_load_state()
    return "/hub/login" not in page.url


def wait_lab(page) -> None:
    """Сервер запущен, и его JupyterLab открылся."""
    page.wait_for_url(re.compile(r"/user/[^/]+/lab"), timeout=120_000)
    page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=120_000)


def run_probe(page, url: str, login: str) -> dict[str, str]:
    """Иванов открывает свою тетрадку и выполняет ячейку; её вывод — что ему открыто."""
    open_notebook(page, f"{url}/user/{login}/lab/tree/probe.ipynb", 90_000)
    run_all_cells(page)
    cell = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell").first
    output = cell.locator(".jp-OutputArea-output", has_text="ИТОГ")
    try:
        output.wait_for(timeout=90_000)
    except Exception:
        page.screenshot(path=str(SHOTS / "failed_probe.png"))
        raise
    page.screenshot(path=str(SHOTS / "ivanov_probe.png"))
    text = output.inner_text()
    return json.loads(text.split("ИТОГ", 1)[1].strip())


def _server_users() -> set[str]:
    """Пользователи Unix, от которых работают серверы JupyterLab (jupyterhub-singleuser)."""
    found = set()
    for proc in Path("/proc").iterdir():
        try:
            cmdline = (proc / "cmdline").read_bytes()
            uid = proc.stat().st_uid
        except OSError:
            continue
        if b"jupyterhub-singleuser" in cmdline:
            found.add(pwd.getpwuid(uid).pw_name)
    return found


def test_two_learners_on_one_server_see_only_their_own(class_hub):
    chosen, state, chromium, prefix, log = class_hub
    ivanov, petrova = f"{prefix}ivanov", f"{prefix}petrova"
    assert state.learners == {ivanov: "ivanov", petrova: "Petrova"}
    secret = chosen.shared / "config" / petrova / "nbgrader_config.py"
    own = _give(Path(pwd.getpwnam(ivanov).pw_dir) / "own.txt", ivanov, "моё")
    answer = _give(Path(pwd.getpwnam(petrova).pw_dir) / "answer.ipynb", petrova, "{}")
    answer.chmod(0o644)  # даже открытый файл закрыт её папкой
    paths = {
        "чужая тетрадка": str(answer),
        "решения курса": str(chosen.settings.root / "solutions" / LAB / f"{LAB}.ipynb"),
        "список паролей": str(chosen.folder / hub_users.PASSWORD_LIST),
        "база JupyterHub": str(chosen.folder / "jupyterhub.sqlite"),
        "настройки Петровой": str(secret),
        "тетрадка курса": str(chosen.settings.root / "notebooks" / LAB / f"{LAB}.ipynb"),
        "своё": str(own),
    }
    probe = "PATHS = " + repr(json.dumps(paths, ensure_ascii=False)) + "\n" + PROBE
    _give(Path(pwd.getpwnam(ivanov).pw_dir) / "probe.ipynb", ivanov, json.dumps(_notebook(probe)))
    chosen_passwords = _passwords(chosen)
    url = chosen.url.rstrip("/")

    with browser(chromium, url) as person:
        # Петрова входит со своим паролем; её сервер запускается, пока работает Иванов.
        her = person()
        assert submit_login(her, url, petrova, chosen_passwords[petrova])
        page = person()
        assert not submit_login(page, url, ivanov, chosen_passwords[petrova])  # чужой пароль
        page.screenshot(path=str(SHOTS / "ivanov_wrong_password.png"))
        assert submit_login(page, url, ivanov, chosen_passwords[ivanov])
        wait_lab(page)
        seen = run_probe(page, url, ivanov)
        wait_lab(her)
        her.screenshot(path=str(SHOTS / "petrova_lab.png"))
    assert seen == {
        "чужая тетрадка": "ЗАКРЫТ",
        "решения курса": "ЗАКРЫТ",
        "список паролей": "ЗАКРЫТ",
        "база JupyterHub": "ЗАКРЫТ",
        "настройки Петровой": "ЗАКРЫТ",
        "тетрадка курса": "ОТКРЫТ",
        "своё": "ОТКРЫТ",
    }
    assert {ivanov, petrova} <= _server_users()
    assert "Traceback" not in log.read_text(encoding="utf-8")


def as_learner(chosen: hub_state.Hub, login: str, *args: str) -> subprocess.CompletedProcess:
    """Команда nbgrader от пользователя Unix учащегося, с настройками его сервера."""
    entry = pwd.getpwnam(login)
    env = {
        "HOME": entry.pw_dir,
        "USER": login,
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "JUPYTER_CONFIG_PATH": str(chosen.config / login),
    }
    return subprocess.run(
        ["setpriv", "--reuid", login, "--regid", str(entry.pw_gid), "--init-groups", *args],
        cwd=entry.pw_dir,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_exchange_works_between_unix_users(python_for_learners, fresh_work):
    with class_course(python_for_learners, fresh_work) as (chosen, roster, prefix):
        proxy = Path(sys.executable)  # JupyterHub здесь не запускается
        state = hub_prepare.prepare(chosen, roster, register=False, proxy=proxy)
        ivanov, petrova = f"{prefix}ivanov", f"{prefix}petrova"
        assert state.learners[petrova] == "Petrova"
        settings = chosen.settings
        hub_release.release(settings, LAB)  # make hub-release LAB=7.2
        nbgrader = str(Path(sys.executable).with_name("nbgrader"))
        fetched = as_learner(chosen, petrova, nbgrader, "fetch_assignment", LAB)
        assert fetched.returncode == 0, fetched.stderr
        home = Path(pwd.getpwnam(petrova).pw_dir)
        copy = home / "course7" / LAB / f"{LAB}.ipynb"
        assert copy.stat().st_uid == pwd.getpwnam(petrova).pw_uid
        submitted = as_learner(chosen, petrova, nbgrader, "submit", LAB)
        assert submitted.returncode == 0, submitted.stderr
        inbound = settings.workspace.exchange / "course7" / "inbound"
        (folder,) = inbound.iterdir()
        assert folder.name.startswith(f"Petrova+{LAB}+")  # id из списка, а не логин Unix
        assert folder.stat().st_uid == pwd.getpwnam(petrova).pw_uid  # кто сдал на самом деле
        # Сосед не видит ни списка сдач, ни чужой сдачи.
        peek = as_learner(chosen, ivanov, "ls", str(inbound))
        assert peek.returncode != 0 and "Permission denied" in peek.stderr
        peek = as_learner(chosen, ivanov, "cat", str(home / "course7" / LAB / f"{LAB}.ipynb"))
        assert peek.returncode != 0 and "Permission denied" in peek.stderr
        hub_collect.collect(settings)  # make collect
        assert (settings.workspace.submitted / "Petrova" / LAB / f"{LAB}.ipynb").is_file()

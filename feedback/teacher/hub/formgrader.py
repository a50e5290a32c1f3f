"""Ручная проверка в formgrader: ``make formgrader``.

JupyterLab из окружения курса (``.venv/bin/jupyter`` — после ``make env`` его нет в PATH),
запущенный в папке курса: там nbgrader_config.py, и formgrader (расширение сервера nbgrader)
видит лабораторные, базу оценок и оценённые работы рабочей папки (``.course-work/`` или
``COURSE7_GRADING_DIR``). Браузер открывается сразу на formgrader, а адрес с токеном
печатается — его можно открыть и вручную. Сервер слушает только 127.0.0.1; токен передаётся
через окружение (``JUPYTER_TOKEN``), а не аргументом, который видят другие пользователи
машины в списке процессов.

В JupyterLab того же сервера (``/lab``) formgrader — меню Nbgrader → Formgrader. Пункт
«Formgrader (local)» расширение nbgrader показывает, только если в Settings → Nbgrader →
Formgrader включено «Allow local nbgrader config file»: он читает nbgrader_config.py из
папки, открытой в файловом браузере, а курсу нужен тот, что в корне.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

#: Расширение сервера nbgrader со страницами formgrader.
EXTENSION = "nbgrader.server_extensions.formgrader"
#: Страница, на которой открывается браузер: formgrader, а не JupyterLab.
START_PAGE = "/formgrader"
HOST = "127.0.0.1"
#: Порты, которые пробуются по порядку (как у Jupyter), прежде чем взять любой свободный.
PORTS = range(8888, 8898)


def jupyter() -> Path:
    """``jupyter`` окружения, в котором запущен этот Python (``.venv/bin/jupyter``)."""
    return Path(sys.executable).with_name("jupyter")


def free_port(candidates: range = PORTS) -> int:
    """Первый свободный порт из ``candidates`` на 127.0.0.1, иначе любой свободный."""
    for port in [*candidates, 0]:
        with socket.socket() as sock:
            try:
                sock.bind((HOST, port))
            except OSError:
                continue
            return sock.getsockname()[1]
    raise OSError("нет свободного порта")


def command(root: Path, port: int, open_browser: bool = True) -> list[str]:
    """Команда JupyterLab с formgrader в папке курса ``root`` на порту ``port``."""
    parts = [
        str(jupyter()),
        "lab",
        f"--ServerApp.root_dir={root}",
        f"--ServerApp.jpserver_extensions={EXTENSION}=True",
        f"--LabApp.default_url={START_PAGE}",
        f"--ServerApp.ip={HOST}",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
    ]
    if not open_browser:
        parts.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        parts.append("--allow-root")
    return parts


def environment(token: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """Окружение сервера: токен и папка скриптов .venv первой в PATH (nbgrader зовёт alembic)."""
    env = dict(os.environ if base is None else base)
    env["JUPYTER_TOKEN"] = token
    env["PATH"] = os.pathsep.join([str(jupyter().parent), env.get("PATH", "")])
    return env


def url(port: int, token: str) -> str:
    return f"http://{HOST}:{port}{START_PAGE}?token={token}"

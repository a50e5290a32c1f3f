"""Процесс JupyterHub курса: команда запуска, окружение, что сказать при запуске, остановка.

``make hub`` запускает настоящий JupyterHub на этой машине (``jupyterhub -f
hub/jupyterhub_config.py``; настройки он берёт из :mod:`feedback.teacher.hub.config`).
Остановка (Ctrl+C или ``make hub-stop``) ничего не теряет: база JupyterHub, пароли, папки
учащихся и exchange остаются в рабочей папке, следующий ``make hub`` продолжает с того же места.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from feedback.formatting import plural
from feedback.settings import EXCHANGE_DIR, GRADING_DIR
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.hub.logins import passwords
from feedback.teacher.hub.state import CLASS, Hub, HubError, HubState


def _config_file(root: Path) -> Path:
    return root / "hub" / "jupyterhub_config.py"


def command(hub: Hub) -> list[str]:
    """Команда JupyterHub курса (hub/jupyterhub_config.py читает hub.json рабочей папки)."""
    jupyterhub = Path(sys.executable).with_name("jupyterhub")
    return [str(jupyterhub), "-f", str(_config_file(hub.settings.root))]


def hub_env(hub: Hub) -> dict[str, str]:
    return {
        **os.environ,
        GRADING_DIR.name: str(hub.settings.work),
        EXCHANGE_DIR.name: str(hub.workspace.exchange),
    }


def banner(hub: Hub, state: HubState) -> str:
    """Что сказать преподавателю при запуске: адрес, как войти, где exchange, как остановить."""
    if state.mode == CLASS:
        return _class_banner(hub, state)
    count = len(state.learners)
    chosen = passwords(hub.workspace)
    return "\n".join(
        [
            "Проба: все серверы — один пользователь Unix, общий пароль учащихся "
            "(класс на сервере — sudo make hub).",
            f"JupyterHub курса: {hub.url}",
            f"  преподаватель: {state.teacher}, пароль {chosen['teacher']}",
            f"  учащиеся ({plural(count, 'учётная запись', 'учётные записи', 'учётных записей')}"
            f" из {hub.workspace.roster}): имя — id из списка, пароль "
            f"{chosen['learners']}",
            f"  exchange: {hub.workspace.exchange}",
            "Остановить: Ctrl+C здесь или make hub-stop в другом терминале; ничего не теряется —",
            f"  всё в {hub.folder}, следующий make hub продолжит с того же места.",
        ]
    )


def _class_banner(hub: Hub, state: HubState) -> str:
    count, teacher = len(state.learners), state.teacher
    return "\n".join(
        [
            "Класс: у каждого учащегося свой пользователь Unix и свой пароль "
            "(проба без них — make hub HUB_MODE=trial).",
            f"JupyterHub класса: {hub.url}",
            f"  учащиеся: {plural(count, 'пользователь', 'пользователя', 'пользователей')} Unix "
            f"из {hub.workspace.roster} (заведено сейчас: {len(state.created)}), у каждого "
            "свой пароль;",
            f"  преподаватель: {teacher} (его сервер работает от {state.run_as[teacher]})",
            f"  пароли для печати: {state.password_page} и {state.password_list} (0600)",
            f"  exchange: {hub.workspace.exchange}; учащимся закрыты рабочая папка и всё в",
            f"  {hub.settings.root}, кроме пакета проверок, notebooks/ и .venv",
            "Остановить: Ctrl+C здесь или make hub-stop; учётные записи после семестра убирает",
            "  sudo .venv/bin/python -m feedback.teacher.commands.hub remove-users --yes",
        ]
    )


def serve(hub: Hub) -> int:
    """JupyterHub курса в этом терминале, пока его не остановят (Ctrl+C — не ошибка)."""
    with contextlib.suppress(KeyboardInterrupt):
        return subprocess.call(command(hub), cwd=hub.folder, env=hub_env(hub))
    return 0


def stop(workspace: Workspace) -> bool:
    """SIGTERM JupyterHub курса по его pid-файлу: он сам останавливает серверы и прокси."""
    try:
        pid = int(workspace.hub_pid.read_text().strip())
        os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        return False
    return True


@contextlib.contextmanager
def running(hub: Hub, log: Path, timeout: float = 120) -> Iterator[subprocess.Popen]:
    """JupyterHub курса в фоне с журналом ``log``; по выходе — остановлен (для тестов)."""
    import time
    import urllib.request

    with log.open("w", encoding="utf-8") as log_file:
        process = subprocess.Popen(
            command(hub),
            cwd=hub.folder,
            env=hub_env(hub),
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if process.poll() is not None:
                raise HubError(f"JupyterHub завершился сам:\n{log.read_text()[-4000:]}")
            try:
                with urllib.request.urlopen(f"{hub.url}hub/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise HubError(f"JupyterHub не ответил за {timeout} с:\n{log.read_text()[-4000:]}")
            time.sleep(0.3)
        yield process
    finally:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(5)

"""Настройки, которые пишет make hub: JupyterHub курса и сервер Jupyter каждого пользователя.

- :func:`write_user_config` — папка настроек одного сервера (``JUPYTER_CONFIG_PATH``):
  nbgrader_config.py (курс, exchange, id учащегося), включённые расширения nbgrader и
  заголовки сервера. У учащегося включены Assignments, у преподавателя — formgrader; id
  учащегося для exchange (``CourseDirectory.student_id``) — ровно id из списка, даже если
  JupyterHub привёл имя входа к нижнему регистру. Настройки лежат не в папке учащегося:
  учащийся их не правит.
- :func:`configure` — настройки JupyterHub (``c`` из hub/jupyterhub_config.py) по сведениям
  о запуске (:class:`~feedback.teacher.hub.state.HubState`).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

from feedback.settings import EXCHANGE_DIR, GRADING_DIR
from feedback.teacher.core import files
from feedback.teacher.core.settings import COURSE_ID, Settings
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.hub.logins import passwords
from feedback.teacher.hub.state import CLASS, FORMGRADERS, LEARNERS, HubState

#: Расширения JupyterLab nbgrader (id плагинов) и сервера, которые каждому не нужны.
LEARNER_HIDDEN = (
    "@jupyter/nbgrader:formgrader",
    "@jupyter/nbgrader:create-assignment",
    "@jupyter/nbgrader:course-list",
)
TEACHER_HIDDEN = ("@jupyter/nbgrader:assignment-list", "@jupyter/nbgrader:course-list")
LEARNER_SERVER_OFF = ("formgrader", "course_list")
TEACHER_SERVER_OFF = ("assignment_list", "course_list")
#: formgrader открывается в JupyterLab во фрейме своего же сервера, а JupyterHub запрещает
#: серверам любые фреймы (``frame-ancestors 'none'``): без этого вкладка Formgrader пуста.
TEACHER_CSP = "frame-ancestors 'self'"
#: Новости JupyterLab спрашивают каждого нового пользователя, присылать ли их, — в классе не нужно.
ANNOUNCEMENTS = "@jupyterlab/apputils-extension:announcements"


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_text(path, json.dumps(data, ensure_ascii=False, indent=1))


def nbgrader_config(student_id: str | None, settings: Settings) -> str:
    """nbgrader_config.py сервера: учащемуся — курс, exchange и его id; преподавателю — курс.

    Преподавателю достаточно корня курса: nbgrader сам читает оттуда nbgrader_config.py (там
    и exchange, и рабочая папка — из ``COURSE7_GRADING_DIR`` его сервера).
    """
    lines = [
        '"""Создан make hub (feedback/teacher/hub/config.py) заново: не правьте."""',
        "",
        "c = get_config()  # noqa: F821",
    ]
    if student_id is None:
        lines.append(f"c.CourseDirectory.root = {str(settings.root)!r}")
    else:
        lines += [
            f"c.CourseDirectory.course_id = {COURSE_ID!r}",
            f"c.CourseDirectory.student_id = {student_id!r}",
            f"c.Exchange.root = {str(settings.workspace.exchange)!r}",
            "c.Exchange.path_includes_course = True",
        ]
    return "\n".join(lines) + "\n"


def write_user_config(folder: Path, student_id: str | None, settings: Settings) -> Path:
    """Папка настроек Jupyter одного сервера (``JUPYTER_CONFIG_PATH``): nbgrader и расширения.

    ``student_id`` — id учащегося; ``None`` — преподаватель (formgrader вместо Assignments).
    """
    teacher = student_id is None
    hidden = TEACHER_HIDDEN if teacher else LEARNER_HIDDEN
    off = TEACHER_SERVER_OFF if teacher else LEARNER_SERVER_OFF
    folder.mkdir(parents=True, exist_ok=True)
    files.write_text(folder / "nbgrader_config.py", nbgrader_config(student_id, settings))
    _write_json(
        folder / "labconfig" / "page_config.json",
        {"disabledExtensions": {name: True for name in (*hidden, ANNOUNCEMENTS)}},
    )
    server: dict[str, Any] = {
        "jpserver_extensions": {f"nbgrader.server_extensions.{name}": False for name in off}
    }
    if teacher:
        server["tornado_settings"] = {"headers": {"Content-Security-Policy": TEACHER_CSP}}
    _write_json(folder / "jupyter_server_config.json", {"ServerApp": server})
    return folder


def spawn_settings(name: str, state: HubState) -> dict[str, Any]:
    """Окружение и корень сервера пользователя ``name`` (для ``Spawner.pre_spawn_hook``)."""
    # nbgrader и ядра — из того же окружения, что и JupyterHub.
    path = os.pathsep.join([str(state.python.parent), os.environ.get("PATH", "/usr/bin:/bin")])
    env = {"JUPYTER_CONFIG_PATH": str(state.config / name), "PATH": path}
    notebook_dir = None
    if name == state.teacher:
        # formgrader работает, только если курс внутри корня сервера: корень — сам курс.
        env[GRADING_DIR.name] = str(state.work)
        env[EXCHANGE_DIR.name] = str(state.exchange)
        notebook_dir = str(state.root)
    return {"environment": env, "notebook_dir": notebook_dir}


def _pre_spawn_hook(spawner: Any, state_file: Path | None = None) -> None:
    """Окружение и корень сервера перед запуском (``state_file`` — hub.json; в пробе его можно
    найти и по папке учащегося ``hub/users/<имя>``)."""
    state_file = state_file or Path(spawner.home_dir).parent.parent / Workspace.HUB_STATE
    chosen = spawn_settings(spawner.user.name, HubState.load(state_file))
    spawner.environment = {**spawner.environment, **chosen["environment"]}
    if chosen["notebook_dir"]:
        spawner.notebook_dir = chosen["notebook_dir"]


def configure(c: Any, workspace: Workspace) -> None:
    """Настройки JupyterHub курса (``c`` — ``get_config()`` в hub/jupyterhub_config.py)."""
    state = HubState.load(workspace.hub_state)
    teacher, accounts = state.teacher, sorted(state.learners)
    c.JupyterHub.bind_url = f"http://{state.ip}:{state.port}"
    c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{state.hub_port}"
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{state.proxy_api_port}"
    c.ConfigurableHTTPProxy.command = [str(state.proxy)]
    c.ConfigurableHTTPProxy.pid_file = str(workspace.hub_proxy_pid)
    c.JupyterHub.db_url = f"sqlite:///{workspace.hub_database}"
    c.JupyterHub.cookie_secret_file = str(workspace.hub_cookie_secret)
    c.JupyterHub.pid_file = str(workspace.hub_pid)
    if state.mode == CLASS:
        # Вход: системный пароль своего пользователя Unix (PAM); серверы — процессы своих
        # пользователей, преподаватель — от владельца курса (feedback/teacher/hub/spawner.py).
        c.JupyterHub.authenticator_class = "pam"
        c.JupyterHub.spawner_class = "feedback.teacher.hub.spawner.CourseSpawner"
        c.CourseSpawner.run_as = state.run_as
    else:
        # Вход: общий пароль учащихся и пароль преподавателя (администратора JupyterHub).
        chosen = passwords(workspace)
        c.JupyterHub.authenticator_class = "shared-password"
        c.SharedPasswordAuthenticator.user_password = chosen["learners"]
        c.SharedPasswordAuthenticator.admin_password = chosen["teacher"]
        # Серверы — процессы этого же пользователя Unix в своих папках (проба, без изоляции).
        c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"
        c.SimpleLocalProcessSpawner.home_dir_template = str(workspace.hub_users / "{username}")
    c.Authenticator.admin_users = {teacher}
    c.Authenticator.allowed_users = {teacher, *accounts}
    c.JupyterHub.load_groups = {
        FORMGRADERS: {"users": [teacher]},
        LEARNERS: {"users": accounts},
    }
    c.Spawner.cmd = [str(state.python.with_name("jupyterhub-singleuser"))]
    c.Spawner.default_url = "/lab"
    c.Spawner.pre_spawn_hook = functools.partial(_pre_spawn_hook, state_file=workspace.hub_state)
    c.Spawner.start_timeout = 180
    c.Spawner.http_timeout = 180
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        c.Spawner.args = ["--ServerApp.allow_root=True"]
    login = (
        "имя и пароль — с листа от преподавателя"
        if state.mode == CLASS
        else "имя — ваш id из списка курса, пароль — от преподавателя"
    )
    c.JupyterHub.template_vars = {"announcement_login": f"Курс 7 «Ускорьте свою модель»: {login}."}

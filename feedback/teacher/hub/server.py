"""Курс на JupyterHub: ``make hub``, ``make hub-release``, ``make collect`` и отчёты в exchange.

Семестр идёт так, как его задумал nbgrader: преподаватель выпускает лабораторную в exchange
(``nbgrader release_assignment``), учащиеся берут её и сдают во вкладке Assignments своего
JupyterLab, преподаватель собирает работы (``nbgrader collect`` → ``submitted/``), оценивает их
``make grade`` в той же песочнице, что и архив Moodle, проверяет письменные ответы в formgrader
и выдаёт отчёты (``make feedback`` → ``nbgrader release_feedback``); учащиеся забирают их той
же вкладкой. Всё это делает сам nbgrader; здесь — только его настройка и связь с ``make grade``.
Пересдача, сдача после срока и учащийся без сдачи — как с архивом Moodle: оценивается последняя
сдача, опоздавшую ``make collect`` только называет (:func:`late`), несдавшего в таблицах нет.
Exchange — общая папка, в которую пишут учащиеся, поэтому собирает работы не ``nbgrader
collect``, а :mod:`feedback.teacher.intake.exchange`: чужие папки сдач, ссылки и время сдачи,
которое написал сам учащийся, там не принимаются, а права exchange проверяются, а не ставятся.

``make hub`` запускает настоящий JupyterHub на этой машине. От root — класс на одном сервере
(:mod:`feedback.teacher.hub.accounts`: у каждого учащегося свой пользователь Unix и свой пароль,
вход PAM, решения и рабочая папка закрыты); без root или с ``HUB_MODE=trial`` — проба, о ней
ниже:

- учётные записи — из списка учащихся (``students.csv``, тот же, что у ``make grade``) и
  преподаватель (``teacher``), который состоит в группе formgrader ``formgrade-course7``;
- вход — общий пароль учащихся и свой пароль преподавателя (``SharedPasswordAuthenticator``
  JupyterHub), пароли — в ``.course-work/hub/passwords.json``;
- серверы учащихся — ``SimpleLocalProcessSpawner``: процессы того же пользователя Unix, каждый
  в своей папке ``.course-work/hub/users/<имя>/``. Друг от друга и от файлов преподавателя они
  не изолированы — это проба, а не сервер класса (docs/teaching.md, «Курс на JupyterHub»);
- у учащегося включены Assignments, у преподавателя — formgrader; id учащегося для exchange
  (``CourseDirectory.student_id``) — ровно id из списка, даже если JupyterHub привёл имя входа
  к нижнему регистру. Настройки каждого — в ``.course-work/hub/config/<имя>/``
  (``JUPYTER_CONFIG_PATH`` его сервера), а не в его папке: учащийся их не правит.

Остановка (Ctrl+C или ``make hub-stop``) ничего не теряет: база JupyterHub, пароли, папки
учащихся и exchange остаются в рабочей папке, следующий ``make hub`` продолжает с того же места.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from feedback.formatting import plural
from feedback.settings import EXCHANGE_DIR, GRADING_DIR
from feedback.teacher.core import files
from feedback.teacher.core.console import safe_console
from feedback.teacher.core.settings import COURSE_ID, DEFAULT_WORK, Settings
from feedback.teacher.hub import accounts as hub_users
from feedback.teacher.intake import exchange, roster, uploads
from feedback.teacher.records import ledger

#: Папка JupyterHub в рабочей папке: база, пароли, настройки и папки учащихся.
HUB = "hub"
#: Сведения о запуске для hub/jupyterhub_config.py (порты, кто преподаватель, учащиеся).
STATE = "hub.json"
PASSWORDS = "passwords.json"
#: Группы JupyterHub, как в руководстве nbgrader «Using nbgrader with JupyterHub».
FORMGRADERS = f"formgrade-{COURSE_ID}"
LEARNERS = f"nbgrader-{COURSE_ID}"
TEACHER = "teacher"
#: configurable-http-proxy ставит ``make hub`` из hub/package-lock.json (npm ci) сюда.
PROXY_PREFIX = DEFAULT_WORK / HUB
PROXY_BIN = Path("node_modules") / ".bin" / "configurable-http-proxy"
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
#: Корень exchange, если его создаёт сам make hub: писать могут все, но переименовать или
#: удалить папку — только её владелец (бит sticky, как у /tmp). Существующий корень не
#: трогается: его права ставит администратор, а :func:`exchange.check_exchange` их проверяет.
EXCHANGE_MODE = 0o1777
#: Режимы make hub (HUB_MODE): проба на своей машине и класс на одном сервере.
TRIAL = "trial"
CLASS = "class"
MODES = (TRIAL, CLASS)


class HubError(RuntimeError):
    """JupyterHub не может начаться: что-то не так у преподавателя (код выхода 2)."""


# --------------------------------------------------------------------------- учётные записи


def hub_name(student_id: str) -> str:
    """Имя входа в JupyterHub: JupyterHub приводит имена к нижнему регистру."""
    return student_id.lower()


def learners(people: Iterable[str], teacher: str = TEACHER) -> dict[str, str]:
    """Имя входа → id учащегося из списка; два id с одним именем входа — :class:`HubError`."""
    found: dict[str, str] = {}
    for person in people:
        name = hub_name(person)
        if name == hub_name(teacher):
            raise HubError(
                f"id «{person}» из списка учащихся совпадает с именем преподавателя «{teacher}»: "
                "назовите преподавателя иначе (make hub TEACHER=имя)"
            )
        if name in found:
            raise HubError(
                f"id «{found[name]}» и «{person}» из списка учащихся JupyterHub не различает "
                "(имена входа — без учёта регистра): сделайте их разными"
            )
        found[name] = person
    return found


def passwords(folder: Path) -> dict[str, str]:
    """Пароли входа: один раз придумываются и дальше берутся из ``passwords.json``.

    ``learners`` — общий пароль учащихся (его раздаёт преподаватель), ``teacher`` — пароль
    преподавателя; JupyterHub требует для администратора не меньше 32 символов.
    """
    path = folder / PASSWORDS
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    chosen = {"learners": secrets.token_urlsafe(9), "teacher": secrets.token_urlsafe(24)}
    folder.mkdir(parents=True, exist_ok=True)
    files.write_text(path, json.dumps(chosen, indent=1), permissions=0o600)
    return chosen


# --------------------------------------------------------------------------- раскладка


@dataclass(frozen=True)
class Hub:
    """Где JupyterHub курса держит своё и на каких адресах слушает."""

    settings: Settings = field(default_factory=Settings.from_env)
    ip: str = "127.0.0.1"
    port: int = 8000
    teacher: str = TEACHER
    #: ``trial`` — проба (один пользователь Unix, общий пароль), ``class`` — класс на сервере
    #: (:mod:`feedback.teacher.hub.accounts`). ``make hub`` выбирает сам (:func:`choose_mode`).
    mode: str = TRIAL
    prefix: str = hub_users.PREFIX
    shared: Path = hub_users.SHARED
    homes: Path = hub_users.HOMES
    #: Python окружения курса: из него запускаются JupyterHub, серверы и ядра.
    python: Path = field(default_factory=lambda: Path(sys.executable))

    @property
    def folder(self) -> Path:
        return self.settings.work / HUB

    @property
    def users(self) -> Path:
        return self.folder / "users"

    @property
    def config(self) -> Path:
        """Настройки серверов: в пробе — в рабочей папке, в классе — в общей папке класса
        (рабочая папка закрыта для учащихся)."""
        return self.shared / "config" if self.mode == CLASS else self.folder / "config"

    @property
    def url(self) -> str:
        host = "localhost" if self.ip in ("127.0.0.1", "0.0.0.0", "") else self.ip
        return f"http://{host}:{self.port}/"


def find_proxy(prefix: Path = PROXY_PREFIX) -> Path | None:
    """configurable-http-proxy: поставленный ``make hub`` или уже есть в PATH (TLJH, сервер)."""
    local = prefix / PROXY_BIN
    if os.access(local, os.X_OK):
        return local
    found = shutil.which("configurable-http-proxy")
    return Path(found) if found else None


def free_port(ip: str = "127.0.0.1") -> int:
    with socket.socket() as sock:
        sock.bind((ip, 0))
        return sock.getsockname()[1]


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_text(path, json.dumps(data, ensure_ascii=False, indent=1))


def nbgrader_config(student_id: str | None, settings: Settings) -> str:
    """nbgrader_config.py сервера: учащемуся — курс, exchange и его id; преподавателю — курс.

    Преподавателю достаточно корня курса: nbgrader сам читает оттуда nbgrader_config.py (там
    и exchange, и рабочая папка — из ``COURSE7_GRADING_DIR`` его сервера).
    """
    lines = [
        '"""Создан make hub (feedback/teacher/hub/server.py) заново при каждом запуске."""',
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


def prepare_exchange(settings: Settings) -> Path:
    """Корень exchange nbgrader: новый — с правами :data:`EXCHANGE_MODE`, прежний — как есть.

    Exchange, который учащийся мог подменить (:func:`exchange.check_exchange`), —
    :class:`HubError` с тем, что исправить.
    """
    root = settings.workspace.exchange
    if not root.exists():
        root.mkdir(parents=True)
        os.chmod(root, EXCHANGE_MODE)  # mkdir не ставит sticky и урезает права по umask
    exchange.protect_inbound(root, COURSE_ID)  # inbound прежнего выпуска (nbgrader: 2733)
    try:
        exchange.check_exchange(root, COURSE_ID)
    except exchange.UnsafeExchange as error:
        raise HubError(str(error)) from None
    return root


def prepare(
    hub: Hub, roster_file: Path | None = None, register: bool = True, proxy: Path | None = None
) -> dict[str, Any]:
    """Всё, что нужно JupyterHub курса, и ``hub.json`` для hub/jupyterhub_config.py.

    Список учащихся — ``roster_file`` (копируется в рабочую папку, как у ``make grade``) или
    уже лежащий там. ``register`` — занести лабораторные и учащихся в базу оценок (formgrader
    показывает лабораторные из неё, ``make collect`` кладёт работы для ``make grade``).
    """
    work = hub.settings.work
    work.mkdir(parents=True, exist_ok=True)
    try:
        people = roster.prepare_roster(work, roster_file)
    except roster.RosterError as error:
        raise HubError(str(error)) from None
    if people is None:
        raise HubError(
            "нет списка учащихся: make hub ROSTER=students.csv (id,first_name,last_name,email) — "
            "по нему заводятся учётные записи"
        )
    accounts = learners(people.people, hub.teacher)
    proxy = proxy or find_proxy()
    if proxy is None:
        raise HubError(
            "нет configurable-http-proxy: его ставит make hub (npm ci из hub/package-lock.json в "
            f"{PROXY_PREFIX}); на сервере — npm install -g configurable-http-proxy"
        )
    if register:
        from feedback.teacher.records import gradebook

        gradebook.register(hub.settings)
        gradebook.import_students(
            hub.settings.workspace, [person.fields for person in people.people.values()]
        )
    teacher = hub_name(hub.teacher)
    extra: dict[str, Any] = {}
    if hub.mode == CLASS:
        titles = {
            person_id: f"{person.last_name} {person.first_name}".strip()
            for person_id, person in people.people.items()
        }
        teacher, accounts, extra = _prepare_class(hub, titles)
    else:
        prepare_exchange(hub.settings)
        for name, person in accounts.items():
            write_user_config(hub.config / name, person, hub.settings)
        write_user_config(hub.config / teacher, None, hub.settings)
        hub.users.mkdir(parents=True, exist_ok=True)
        passwords(hub.folder)  # пароли — только в passwords.json (его читает лишь владелец)
    state = {
        "mode": hub.mode,
        "root": str(hub.settings.root),
        "work": str(work),
        "exchange": str(hub.settings.workspace.exchange),
        "config": str(hub.config),
        "ip": hub.ip,
        "port": hub.port,
        "hub_port": free_port(),
        "proxy_api_port": free_port(),
        "proxy": str(proxy),
        "teacher": teacher,
        "learners": accounts,
        "python": str(hub.python),
        **extra,
    }
    _write_json(hub.folder / STATE, state)
    return state


def _prepare_class(
    hub: Hub, titles: Mapping[str, str]
) -> tuple[str, dict[str, str], dict[str, Any]]:
    """Режим класса: учётные записи Unix, пароли, закрытый клон, exchange и настройки серверов.

    Возвращает логин преподавателя, «логин → id» учащихся и добавки к ``hub.json``.
    """
    import pwd

    try:
        done = hub_users.setup(
            hub.settings,
            hub.folder,
            titles,
            hub.teacher,
            hub.url,
            prefix=hub.prefix,
            shared=hub.shared,
            homes=hub.homes,
            python=hub.python,
        )
    except hub_users.ClassError as error:
        raise HubError(str(error)) from None
    # Учащиеся видят exchange по настоящему пути: ссылка в рабочей папке им закрыта.
    learners_view = replace(hub.settings, exchange_dir=done.exchange)
    teacher = next(account.login for account in done.accounts if account.teacher)
    accounts = {
        account.login: account.student_id
        for account in done.accounts
        if account.student_id is not None
    }
    for login, person in accounts.items():
        hub_users.share_config(write_user_config(hub.config / login, person, learners_view), login)
    os.chmod(write_user_config(hub.config / teacher, None, hub.settings), 0o700)
    owner = pwd.getpwuid(os.geteuid()).pw_name
    extra = {
        "run_as": {teacher: owner},
        "prefix": hub.prefix,
        "password_list": str(done.password_list),
        "password_page": str(done.password_page),
        "created": done.created,
        "closed": [str(path) for path in done.closed],
    }
    return teacher, accounts, extra


# --------------------------------------------------------------------------- JupyterHub


def load_state(folder: Path) -> dict[str, Any]:
    path = folder / STATE
    if not path.is_file():
        raise HubError(f"нет {path}: JupyterHub курса запускают командой make hub")
    return json.loads(path.read_text(encoding="utf-8"))


def spawn_settings(name: str, state: Mapping[str, Any]) -> dict[str, Any]:
    """Окружение и корень сервера пользователя ``name`` (для ``Spawner.pre_spawn_hook``)."""
    folder = Path(state["work"]) / HUB
    python = Path(state["python"])
    env = {
        "JUPYTER_CONFIG_PATH": str(Path(state.get("config", folder / "config")) / name),
        # nbgrader и ядра — из того же окружения, что и JupyterHub.
        "PATH": os.pathsep.join([str(python.parent), os.environ.get("PATH", "/usr/bin:/bin")]),
    }
    notebook_dir = None
    if name == state["teacher"]:
        # formgrader работает, только если курс внутри корня сервера: корень — сам курс.
        env[GRADING_DIR.name] = state["work"]
        env[EXCHANGE_DIR.name] = state["exchange"]
        notebook_dir = state["root"]
    return {"environment": env, "notebook_dir": notebook_dir}


def _pre_spawn_hook(spawner: Any, folder: Path | None = None) -> None:
    """Окружение и корень сервера перед запуском (``folder`` — папка JupyterHub; в пробе её
    можно узнать и по папке учащегося)."""
    state = load_state(folder or Path(spawner.home_dir).parent.parent)
    chosen = spawn_settings(spawner.user.name, state)
    spawner.environment = {**spawner.environment, **chosen["environment"]}
    if chosen["notebook_dir"]:
        spawner.notebook_dir = chosen["notebook_dir"]


def configure(c: Any, folder: Path) -> None:
    """Настройки JupyterHub курса (``c`` — ``get_config()`` в hub/jupyterhub_config.py)."""
    state = load_state(folder)
    teacher, accounts = state["teacher"], sorted(state["learners"])
    python = Path(state["python"])
    c.JupyterHub.bind_url = f"http://{state['ip']}:{state['port']}"
    c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{state['hub_port']}"
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{state['proxy_api_port']}"
    c.ConfigurableHTTPProxy.command = [state["proxy"]]
    c.ConfigurableHTTPProxy.pid_file = str(folder / "proxy.pid")
    c.JupyterHub.db_url = f"sqlite:///{folder / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(folder / "jupyterhub_cookie_secret")
    c.JupyterHub.pid_file = str(folder / "jupyterhub.pid")
    if state.get("mode", TRIAL) == CLASS:
        # Вход: системный пароль своего пользователя Unix (PAM); серверы — процессы своих
        # пользователей, преподаватель — от владельца курса (feedback/teacher/hub/spawner.py).
        c.JupyterHub.authenticator_class = "pam"
        c.JupyterHub.spawner_class = "feedback.teacher.hub.spawner.CourseSpawner"
        c.CourseSpawner.run_as = state["run_as"]
    else:
        # Вход: общий пароль учащихся и пароль преподавателя (администратора JupyterHub).
        chosen = passwords(folder)
        c.JupyterHub.authenticator_class = "shared-password"
        c.SharedPasswordAuthenticator.user_password = chosen["learners"]
        c.SharedPasswordAuthenticator.admin_password = chosen["teacher"]
        # Серверы — процессы этого же пользователя Unix в своих папках (проба, без изоляции).
        c.JupyterHub.spawner_class = "jupyterhub.spawner.SimpleLocalProcessSpawner"
        c.SimpleLocalProcessSpawner.home_dir_template = str(folder / "users" / "{username}")
    c.Authenticator.admin_users = {teacher}
    c.Authenticator.allowed_users = {teacher, *accounts}
    c.JupyterHub.load_groups = {
        FORMGRADERS: {"users": [teacher]},
        LEARNERS: {"users": accounts},
    }
    c.Spawner.cmd = [str(python.with_name("jupyterhub-singleuser"))]
    c.Spawner.default_url = "/lab"
    c.Spawner.pre_spawn_hook = functools.partial(_pre_spawn_hook, folder=folder)
    c.Spawner.start_timeout = 180
    c.Spawner.http_timeout = 180
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        c.Spawner.args = ["--ServerApp.allow_root=True"]
    login = (
        "имя и пароль — с листа от преподавателя"
        if state.get("mode", TRIAL) == CLASS
        else "имя — ваш id из списка курса, пароль — от преподавателя"
    )
    c.JupyterHub.template_vars = {"announcement_login": f"Курс 7 «Ускорьте свою модель»: {login}."}


# --------------------------------------------------------------------------- nbgrader


def nbgrader_api(settings: Settings, **extra: Any) -> Any:
    """nbgrader с настройками курса, рабочей папкой и exchange из ``settings``."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(settings.root)).load_config()
    for name, value in settings.course_directory().items():
        setattr(config.CourseDirectory, name, value)
    config.Exchange.root = str(settings.workspace.exchange)
    for dotted, value in extra.items():
        section, name = dotted.split("__")
        setattr(getattr(config, section), name, value)
    return NbGraderAPI(config=config)


def lab_ids(settings: Settings) -> list[str]:
    return sorted(path.parent.name for path in settings.solutions.glob("*/*.ipynb"))


def resolve_lab(text: str, settings: Settings) -> str:
    """Лабораторная по id (``lab_7_2_training_flops``) или по номеру (``7.2``)."""
    labs = lab_ids(settings)
    if text in labs:
        return text
    prefix = "lab_" + text.strip().replace(".", "_") + "_"
    found = [lab for lab in labs if lab.startswith(prefix)]
    if len(found) != 1:
        raise HubError(f"нет лабораторной «{text}»: выберите одну из {', '.join(labs)}")
    return found[0]


def _checked(result: Mapping[str, Any], what: str) -> str:
    if not result.get("success"):
        raise HubError(f"{what} не удалось:\n{result.get('log', '')}{result.get('error', '')}")
    return result.get("log", "")


def release(settings: Settings, lab: str) -> Path:
    """``nbgrader release_assignment``: выпуск лабораторной из notebooks/ — в exchange."""
    prepare_exchange(settings)
    api = nbgrader_api(settings, ExchangeReleaseAssignment__force=True)
    _checked(api.release_assignment(lab), f"выпуск {lab} в exchange")
    prepare_exchange(settings)  # и sticky на inbound, который выпуск мог только что создать
    return settings.workspace.exchange / COURSE_ID / "outbound" / lab


#: Папка сдачи в inbound: ``<учащийся>+<лабораторная>+<время>+<случайное>`` (nbgrader submit).
_INBOUND = re.compile(r"^(?P<student>.+?)\+(?P<lab>[^+]+)\+(?P<timestamp>[^+]+)(?:\+[^+]*)?$")


def inbound(settings: Settings) -> list[dict[str, str]]:
    """Сданные работы в exchange: учащийся, лабораторная, время сдачи (все попытки)."""
    folder = settings.workspace.exchange / COURSE_ID / "inbound"
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.iterdir()):
        match = _INBOUND.match(path.name)
        if match and path.is_dir():
            found.append({**match.groupdict(), "path": str(path)})
    return found


def collect(settings: Settings) -> exchange.Collection:
    """Сбор exchange: последняя сдача каждого учащегося каждой лабораторной → ``submitted/``.

    Из нескольких сдач берётся последняя по времени, которое записало ядро, и сданная после
    срока тоже (так приходит последняя сдача и в архиве Moodle): опоздавших называет
    :func:`late`. ``make grade`` оценивает ``submitted/`` как папку ``<учащийся>/<лабораторная>/``.
    Чужие папки сдач, ссылки и всё, что не собрано, — строки problems.csv
    (:func:`record_problems`); exchange, который могли подменить, — :class:`HubError`.
    """
    try:
        found = exchange.collect(
            settings.workspace.exchange,
            COURSE_ID,
            settings.workspace.submitted,
            lab_ids(settings),
            accounts=hub_users.recorded(settings.work / HUB),
        )
    except exchange.UnsafeExchange as error:
        raise HubError(str(error)) from None
    except PermissionError as error:  # класс make hub: папки курса в exchange — root
        raise HubError(
            f"нет доступа к {error.filename}: в классе (sudo make hub) папки курса в exchange "
            "принадлежат root — соберите сдачи так же: sudo make collect"
        ) from None
    record_problems(settings.work, found.problems)
    return found


def record_problems(work: Path, problems: list[uploads.Problem]) -> None:
    """Строки сбора exchange в problems.csv: прежние строки сбора заменяются, остальные — нет."""
    from feedback.teacher.core.tables import read_rows, write_rows
    from feedback.teacher.records.class_tables import natural

    path = work / uploads.Problem.FILE
    earlier = read_rows(path, uploads.Problem, exact=True)
    kept = [row for row in earlier if not row.file.startswith(exchange.FILE_PREFIX)]
    if not problems and len(kept) == len(earlier):
        return
    work.mkdir(parents=True, exist_ok=True)
    write_rows(path, uploads.Problem, sorted(kept + problems, key=natural))


def collect_lines(found: exchange.Collection) -> list[str]:
    """Строки ``make collect``: что собрано, что нет и почему (имена — без управляющих знаков)."""
    lines = [
        f"  {item.student} · {item.lab}: сдача {item.time:%Y-%m-%d %H:%M:%S} UTC"
        for item in found.collected
    ]
    for problem in found.problems:
        lines.append(f"  не собрано: {problem.file} — {problem.problem}")
    return [safe_console(line) for line in lines]


@dataclass(frozen=True)
class Late:
    """Собранная сдача, сданная после срока лабораторной (время — UTC, как у nbgrader)."""

    student: str
    lab: str
    timestamp: datetime
    duedate: datetime

    @property
    def seconds(self) -> float:
        return (self.timestamp - self.duedate).total_seconds()


def _duedates(settings: Settings) -> dict[str, datetime]:
    """Сроки лабораторных из базы оценок nbgrader (ставит преподаватель в formgrader)."""
    if not (settings.work / "gradebook.db").is_file():
        return {}
    from nbgrader.api import Gradebook

    with Gradebook(settings.workspace.gradebook_url, COURSE_ID) as gb:
        return {item.name: item.duedate for item in gb.assignments if item.duedate is not None}


def late(settings: Settings) -> list[Late]:
    """Собранные сдачи (``submitted/``) позже срока своей лабораторной.

    Срок — ``duedate`` лабораторной в базе nbgrader: его ставит преподаватель в formgrader
    (Manage Assignments → карандаш у лабораторной → Due date) или ``nbgrader db assignment add
    --duedate``; без срока опоздавших нет. Время сдачи — ``timestamp.txt``, который пишет
    ``make collect`` по времени ядра (:mod:`feedback.teacher.intake.exchange`), а не учащийся;
    сравнивает их так же сам nbgrader (``SubmittedAssignment.total_seconds_late``).
    Такие работы оцениваются как все, без штрафа, как и с Moodle: nbgrader по умолчанию
    опоздание не штрафует (``LateSubmissionPlugin.penalty_method = "none"``).
    """
    due = _duedates(settings)
    if not due:
        return []
    from nbgrader.utils import parse_utc

    found = []
    for stamp in sorted(settings.workspace.submitted.glob(f"*/*/{TIMESTAMP}")):
        folder = stamp.parent
        student, lab = folder.parent.name, folder.name
        if lab not in due:
            continue
        try:
            submitted = parse_utc(stamp.read_text(encoding="utf-8").strip() or None)
        except (OSError, ValueError, OverflowError):
            continue
        if submitted is not None and submitted > due[lab]:
            found.append(Late(student, lab, submitted, due[lab]))
    return found


def _how_late(seconds: float) -> str:
    """«на 2 дня 3 часа», «на 1 час 5 минут», «на 1 минуту»: с точностью до минуты, вверх."""
    minutes = max(1, int(-(-seconds // 60)))
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [
        plural(value, *words)
        for value, words in (
            (days, ("день", "дня", "дней")),
            (hours, ("час", "часа", "часов")),
            (minutes, ("минуту", "минуты", "минут")),
        )
        if value
    ]
    return "на " + " ".join(parts)


def late_lines(found: list[Late]) -> list[str]:
    """Строки ``make collect`` об опоздавших: кто, какая лабораторная, когда и насколько."""
    if not found:
        return []
    lines = [
        "Сданы после срока (оцениваются как все, без штрафа; срок — в formgrader, Manage "
        "Assignments):"
    ]
    for item in found:
        lines.append(
            f"  {safe_console(item.student)} · {item.lab}: сдана {item.timestamp:%Y-%m-%d %H:%M} "
            f"UTC, срок {item.duedate:%Y-%m-%d %H:%M} UTC — {_how_late(item.seconds)}"
        )
    return lines


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
    for secret in sorted(settings.workspace.submitted.glob(f"*/*/{SUBMISSION_SECRET}")):
        if not secret.is_file() or secret.is_symlink():
            continue  # make collect кладёт сюда только обычные файлы
        folder = secret.parent
        student, lab = folder.parent.name, folder.name
        report = settings.workspace.feedback_reports / student / lab / f"{lab}.html"
        notebook = _read_graded(folder / f"{lab}.ipynb")
        before = graded.get((student, lab))
        problem = None
        if not report.is_file() or before is None:
            problem = "работа ещё не оценена: make grade"
        elif notebook is None or ledger.upload_fingerprint(notebook) != before.upload:
            problem = "собрана сдача новее оценённой: make grade, затем make feedback"
        found.append(Feedback(student, lab, folder, report, problem))
    return found


SUBMISSION_SECRET = exchange.SUBMISSION_SECRET
TIMESTAMP = exchange.TIMESTAMP


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
            for name in (TIMESTAMP, SUBMISSION_SECRET):
                data = (item.submitted / name).read_bytes()
                files.write_bytes(item.report.parent / name, data)
        except OSError as error:  # сдача собрана прежней версией или испорчена: не выдаём ей
            why = f"нет файла сдачи {name} ({error.strerror or error}): make collect"
            ready[index] = replace(item, problem=why)
            continue
        api = api or nbgrader_api(settings)
        _checked(api.release_feedback(item.lab, item.student), f"выдача отчёта {item.student}")
    return ready


# --------------------------------------------------------------------------- запуск


def _config_file(root: Path) -> Path:
    return root / "hub" / "jupyterhub_config.py"


def command(hub: Hub) -> list[str]:
    """Команда JupyterHub курса (hub/jupyterhub_config.py читает hub.json из ``hub.folder``)."""
    jupyterhub = Path(sys.executable).with_name("jupyterhub")
    return [str(jupyterhub), "-f", str(_config_file(hub.settings.root))]


def hub_env(hub: Hub) -> dict[str, str]:
    return {
        **os.environ,
        GRADING_DIR.name: str(hub.settings.work),
        EXCHANGE_DIR.name: str(hub.settings.workspace.exchange),
    }


def choose_mode(asked: str | None, euid: int | None = None) -> str:
    """Режим ``make hub``: названный (``HUB_MODE``) или сам — класс, если запущен от root.

    root может завести каждому учащемуся своего пользователя Unix, и тогда проба без изоляции
    не нужна; не root — только проба.
    """
    if asked:
        if asked not in MODES:
            raise HubError(f"HUB_MODE={asked}: выберите {' или '.join(MODES)}")
        return asked
    euid = os.geteuid() if euid is None else euid
    return CLASS if euid == 0 else TRIAL


def banner(hub: Hub, state: Mapping[str, Any]) -> str:
    count = len(state["learners"])
    if state.get("mode", TRIAL) == CLASS:
        return _class_banner(hub, state)
    chosen = passwords(hub.folder)
    return "\n".join(
        [
            "Проба: все серверы — один пользователь Unix, общий пароль учащихся "
            "(класс на сервере — sudo make hub).",
            f"JupyterHub курса: {hub.url}",
            f"  преподаватель: {state['teacher']}, пароль {chosen['teacher']}",
            f"  учащиеся ({plural(count, 'учётная запись', 'учётные записи', 'учётных записей')}"
            f" из {hub.settings.work / roster.ROSTER}): имя — id из списка, пароль "
            f"{chosen['learners']}",
            f"  exchange: {hub.settings.workspace.exchange}",
            "Остановить: Ctrl+C здесь или make hub-stop в другом терминале; ничего не теряется —",
            f"  всё в {hub.folder}, следующий make hub продолжит с того же места.",
        ]
    )


def _class_banner(hub: Hub, state: Mapping[str, Any]) -> str:
    count, teacher = len(state["learners"]), state["teacher"]
    created = len(state.get("created", []))
    return "\n".join(
        [
            "Класс: у каждого учащегося свой пользователь Unix и свой пароль "
            "(проба без них — make hub HUB_MODE=trial).",
            f"JupyterHub класса: {hub.url}",
            f"  учащиеся: {plural(count, 'пользователь', 'пользователя', 'пользователей')} Unix "
            f"из {hub.settings.work / roster.ROSTER} (заведено сейчас: {created}), у каждого "
            "свой пароль;",
            f"  преподаватель: {teacher} (его сервер работает от {state['run_as'][teacher]})",
            f"  пароли для печати: {state['password_page']} и {state['password_list']} (0600)",
            f"  exchange: {hub.settings.workspace.exchange}; учащимся закрыты рабочая папка и "
            "всё в",
            f"  {hub.settings.root}, кроме пакета проверок, notebooks/ и .venv",
            "Остановить: Ctrl+C здесь или make hub-stop; учётные записи после семестра убирает",
            "  sudo .venv/bin/python -m feedback.teacher.hub.server remove-users --yes",
        ]
    )


def stop(folder: Path) -> bool:
    """SIGTERM JupyterHub курса по его pid-файлу: он сам останавливает серверы и прокси."""
    pid_file = folder / "jupyterhub.pid"
    try:
        pid = int(pid_file.read_text().strip())
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


def _print_feedback(released: list[Feedback]) -> None:
    done = [item for item in released if not item.problem]
    if not released:
        return
    print(
        f"Отчёты выданы через exchange: {len(done)} (учащиеся забирают их во вкладке Assignments)"
    )
    for item in released:
        if item.problem:
            print(safe_console(f"  не выдан {item.student} · {item.lab}: {item.problem}"))


def _remove_users(folder: Path, prefix: str, sure: bool) -> int:
    """Учётные записи Unix класса — прочь (``userdel -r``); без ``--yes`` — только список."""
    logins = hub_users.recorded(folder)
    if not sure:
        print(
            f"Будут удалены пользователи Unix ({len(logins)}) с домашними папками; сдачи в "
            f"exchange и submitted/ остаются: {', '.join(logins) or 'их нет'}.\n"
            "Удалить: .venv/bin/python -m feedback.teacher.hub.server remove-users --yes"
        )
        return 1
    try:
        removed = hub_users.remove(folder, prefix)
    except hub_users.ClassError as error:
        raise HubError(str(error)) from None
    print(f"Удалены: {', '.join(removed) or 'никто'}.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="JupyterHub курса 7 и exchange nbgrader.")
    sub = parser.add_subparsers(dest="action")
    start = sub.add_parser("start", help="запустить JupyterHub (по умолчанию)")
    start.add_argument("--roster", type=Path, default=None, help="список учащихся students.csv")
    start.add_argument("--ip", default="127.0.0.1", help="адрес (0.0.0.0 — вся сеть)")
    start.add_argument("--port", type=int, default=8000)
    start.add_argument("--teacher", default=TEACHER, help="имя входа преподавателя")
    start.add_argument(
        "--mode", choices=MODES, default=None, help="class (от root — по умолчанию) или trial"
    )
    start.add_argument("--prefix", default=hub_users.PREFIX, help="приставка имён Unix класса")
    sub.add_parser("stop", help="остановить JupyterHub курса")
    removing = sub.add_parser("remove-users", help="после семестра: удалить учётные записи класса")
    removing.add_argument("--prefix", default=None, help="приставка (по умолчанию — из make hub)")
    removing.add_argument("--yes", action="store_true", help="да, и их домашние папки")
    released = sub.add_parser("release", help="выпустить лабораторную в exchange")
    released.add_argument("lab", help="id лабораторной или её номер (7.2)")
    sub.add_parser("collect", help="собрать сданные работы в submitted/")
    sub.add_parser("feedback", help="выдать готовые отчёты через exchange")
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv or ["start"])
    settings = Settings.from_env()
    try:
        if args.action == "stop":
            stopped = stop(settings.work / HUB)
            print("JupyterHub курса остановлен." if stopped else "JupyterHub курса не запущен.")
            return 0
        if args.action == "remove-users":
            folder = settings.work / HUB
            state = load_state(folder) if (folder / STATE).is_file() else {}
            prefix = args.prefix or state.get("prefix", hub_users.PREFIX)
            return _remove_users(folder, prefix, args.yes)
        if args.action == "release":
            lab = resolve_lab(args.lab, settings)
            print(f"{lab} выпущена: {release(settings, lab)}")
            return 0
        if args.action == "collect":
            found = collect(settings)
            for line in collect_lines(found):
                print(line)
            if not found.collected and not found.problems:
                print(f"Сданных работ нет ({settings.workspace.exchange / COURSE_ID / 'inbound'}).")
            else:
                print(exchange.summary(found))
                print(f"Работы собраны в {settings.workspace.submitted}: теперь make grade")
            for line in late_lines(late(settings)):
                print(line)
            return 0
        if args.action == "feedback":
            _print_feedback(release_feedback(settings))
            return 0
        hub = Hub(settings, args.ip, args.port, args.teacher, choose_mode(args.mode), args.prefix)
        state = prepare(hub, args.roster)
    except HubError as error:
        print(f"JupyterHub курса: {error}", file=sys.stderr)
        return 2
    print(banner(hub, state), flush=True)
    with contextlib.suppress(KeyboardInterrupt):
        return subprocess.call(command(hub), cwd=hub.folder, env=hub_env(hub))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Подготовка к ``make hub``: учётные записи, пароли, exchange, настройки серверов и
``hub.json`` (:class:`~feedback.teacher.hub.state.HubState`) для hub/jupyterhub_config.py.

Проба (не root или ``HUB_MODE=trial``): входят по id из списка и общему паролю
(:mod:`feedback.teacher.hub.logins`), серверы — процессы того же пользователя Unix в своих
папках ``hub/users/<имя>/``. Класс (root): у каждого учащегося свой пользователь Unix и свой
пароль (:mod:`feedback.teacher.hub.accounts`).
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from feedback.teacher.core.settings import DEFAULT_WORK
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.hub import accounts as hub_users
from feedback.teacher.hub.config import write_user_config
from feedback.teacher.hub.logins import hub_name, learners, passwords
from feedback.teacher.hub.release import prepare_exchange
from feedback.teacher.hub.state import CLASS, Hub, HubError, HubState
from feedback.teacher.intake import roster

#: configurable-http-proxy ставит ``make hub`` из hub/package-lock.json (npm ci) сюда.
PROXY_PREFIX = Workspace(DEFAULT_WORK).hub
PROXY_BIN = Path("node_modules") / ".bin" / "configurable-http-proxy"


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


def prepare(
    hub: Hub, roster_file: Path | None = None, register: bool = True, proxy: Path | None = None
) -> HubState:
    """Всё, что нужно JupyterHub курса, и ``hub.json`` для hub/jupyterhub_config.py.

    Список учащихся — ``roster_file`` (копируется в рабочую папку, как у ``make grade``) или
    уже лежащий там. ``register`` — занести лабораторные и учащихся в базу оценок (formgrader
    показывает лабораторные из неё, ``make collect`` кладёт работы для ``make grade``).
    """
    work = hub.settings.work
    work.mkdir(parents=True, exist_ok=True)
    try:
        people = roster.prepare_roster(hub.settings.workspace, roster_file)
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
    state = HubState(
        mode=hub.mode,
        root=hub.settings.root,
        work=work,
        exchange=hub.workspace.exchange,
        config=hub.config,
        ip=hub.ip,
        port=hub.port,
        hub_port=free_port(),
        proxy_api_port=free_port(),
        proxy=proxy,
        teacher=hub_name(hub.teacher),
        learners=accounts,
        python=hub.python,
    )
    if hub.mode == CLASS:
        titles = {
            person_id: f"{person.last_name} {person.first_name}".strip()
            for person_id, person in people.people.items()
        }
        state = _prepare_class(hub, titles, state)
    else:
        prepare_exchange(hub.settings)
        for name, person in accounts.items():
            write_user_config(hub.config / name, person, hub.settings)
        write_user_config(hub.config / state.teacher, None, hub.settings)
        hub.users.mkdir(parents=True, exist_ok=True)
        passwords(hub.workspace)  # пароли — только в passwords.json (его читает лишь владелец)
    state.save(hub.workspace.hub_state)
    return state


def _prepare_class(hub: Hub, titles: Mapping[str, str], state: HubState) -> HubState:
    """Режим класса: учётные записи Unix, пароли, закрытый клон, exchange и настройки серверов.

    Возвращает ``state`` с логинами класса (преподаватель и «логин → id» учащихся) и тем, что
    знает только класс (от кого сервер преподавателя, листы паролей, закрытые папки).
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
    return replace(
        state,
        teacher=teacher,
        learners=accounts,
        run_as={teacher: owner},
        prefix=hub.prefix,
        password_list=done.password_list,
        password_page=done.password_page,
        created=list(done.created),
        closed=list(done.closed),
    )

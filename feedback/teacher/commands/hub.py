"""Курс на JupyterHub: ``make hub``, ``make hub-stop``, ``make hub-release``, ``make collect``,
``make feedback`` и удаление учётных записей класса после семестра.

Семестр идёт так, как его задумал nbgrader: преподаватель выпускает лабораторную в exchange
(``nbgrader release_assignment``), учащиеся берут её и сдают во вкладке Assignments своего
JupyterLab, преподаватель собирает работы (``make collect`` → ``submitted/``), оценивает их
``make grade`` в той же песочнице, что и архив Moodle, проверяет письменные ответы в formgrader
и выдаёт отчёты (``make feedback`` → ``nbgrader release_feedback``); учащиеся забирают их той
же вкладкой. Пересдача, сдача после срока и учащийся без сдачи — как с архивом Moodle:
оценивается последняя сдача, опоздавшую ``make collect`` только называет
(:mod:`feedback.teacher.hub.lateness`), несдавшего в таблицах нет.

Здесь — только разбор аргументов и печать; каждая стадия — в своём модуле комнаты
:mod:`feedback.teacher.hub`: подготовка (``prepare``), настройки серверов и JupyterHub
(``config``), процесс (``process``), выпуск (``release``), сбор (``collect``), правило
опоздания (``lateness``), выдача отчётов (``handback``), учётные записи класса (``accounts``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from feedback.teacher.commands import settings_from_env
from feedback.teacher.core.labs import UnknownLab
from feedback.teacher.core.settings import COURSE_ID, Settings
from feedback.teacher.hub import accounts as hub_users
from feedback.teacher.hub import collect, handback, lateness, process, release
from feedback.teacher.hub.prepare import prepare
from feedback.teacher.hub.state import MODES, TEACHER, Hub, HubError, choose_mode
from feedback.teacher.intake import exchange

REMOVE_USERS = "sudo .venv/bin/python -m feedback.teacher.commands.hub remove-users --yes"


def remove_users(settings: Settings, prefix: str | None, sure: bool) -> int:
    """Учётные записи Unix класса — прочь (``userdel -r``); без ``--yes`` — только список.

    Приставка имён — названная или та, с которой их заводил make hub (``hub.json``).
    """
    folder = settings.workspace.hub
    if prefix is None and settings.workspace.hub_state.is_file():
        # Только приставка и мягко: hub.json прошлого семестра мог быть неполным.
        state = json.loads(settings.workspace.hub_state.read_text(encoding="utf-8"))
        prefix = state.get("prefix") if isinstance(state, dict) else None
    logins = hub_users.recorded(folder)
    if not sure:
        print(
            f"Будут удалены пользователи Unix ({len(logins)}) с домашними папками; сдачи в "
            f"exchange и submitted/ остаются: {', '.join(logins) or 'их нет'}.\n"
            f"Удалить: {REMOVE_USERS}"
        )
        return 1
    try:
        removed = hub_users.remove(folder, prefix or hub_users.PREFIX)
    except hub_users.ClassError as error:
        raise HubError(str(error)) from None
    print(f"Удалены: {', '.join(removed) or 'никто'}.")
    return 0


def collect_command(settings: Settings) -> None:
    """``make collect``: собрать сдачи, сказать, что собрано и что нет, назвать опоздавших."""
    found = collect.collect(settings)
    for line in collect.collect_lines(found):
        print(line)
    if not found.collected and not found.problems:
        print(f"Сданных работ нет ({settings.workspace.exchange / COURSE_ID / 'inbound'}).")
    else:
        print(exchange.summary(found))
        print(f"Работы собраны в {settings.workspace.submitted}: теперь make grade")
    for line in lateness.late_lines(lateness.late(settings)):
        print(line)


def release_command(settings: Settings, text: str) -> None:
    """``make hub-release LAB=7.2``: лабораторная по id или номеру — в exchange."""
    try:
        lab = settings.find_lab(text)
    except UnknownLab as error:
        raise HubError(str(error)) from None
    print(f"{lab.id} выпущена: {release.release(settings, lab.id)}")


def parser() -> argparse.ArgumentParser:
    found = argparse.ArgumentParser(description="JupyterHub курса 7 и exchange nbgrader.")
    sub = found.add_subparsers(dest="action")
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
    return found


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv or ["start"])
    settings = settings_from_env()
    if settings is None:
        return 2
    try:
        if args.action == "stop":
            stopped = process.stop(settings.workspace)
            print("JupyterHub курса остановлен." if stopped else "JupyterHub курса не запущен.")
            return 0
        if args.action == "remove-users":
            return remove_users(settings, args.prefix, args.yes)
        if args.action == "release":
            release_command(settings, args.lab)
            return 0
        if args.action == "collect":
            collect_command(settings)
            return 0
        if args.action == "feedback":
            for line in handback.feedback_lines(handback.release_feedback(settings)):
                print(line)
            return 0
        hub = Hub(settings, args.ip, args.port, args.teacher, choose_mode(args.mode), args.prefix)
        state = prepare(hub, args.roster)
    except HubError as error:
        print(f"JupyterHub курса: {error}", file=sys.stderr)
        return 2
    print(process.banner(hub, state), flush=True)
    return process.serve(hub)


if __name__ == "__main__":
    sys.exit(main())

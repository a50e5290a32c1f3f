"""Класс на одном сервере: ``make hub`` в режиме класса (root и список учащихся).

Проба (:mod:`feedback.teacher.hub.prepare`, ``HUB_MODE=trial``) запускает серверы всех учащихся
одним пользователем Unix с общим паролем. В режиме класса у каждого свой пользователь Unix:

- **учётные записи** — из ``students.csv``: ``useradd`` с приставкой курса (``c7-ivanov``),
  домашняя папка ``/home/c7-ivanov`` с правами 0700, оболочка входа ``nologin`` (по SSH не
  войти; терминал JupyterLab открывает ``bash`` сам). Все — в группе Unix курса (``c7-hub``):
  по ней удаление после семестра (``python -m feedback.teacher.commands.hub remove-users``)
  узнаёт своих и никогда не тронет чужого пользователя с тем же именем;
- **пароли** — у каждого свой, заводится ``chpasswd`` один раз; вход — ``PAMAuthenticator``
  JupyterHub (системный пароль). Список для печати — ``passwords.html`` и ``passwords.csv`` в
  папке JupyterHub рабочей папки, права 0600;
- **что закрыто**: рабочая папка оценивания — 0700 (база оценок, сдачи, пароли), в клоне курса
  учащиеся могут пройти только к публичной части (``public.PUBLIC``: пакет проверок,
  ``notebooks/``) и к ``.venv`` (ядра), остальное (``solutions/``, ``.git``, тесты) — 0700;
- **exchange** — в общей папке класса (``/srv/course7/exchange``, 1777, владелец root), как
  его ждёт nbgrader; ``<рабочая папка>/exchange`` — ссылка на неё, поэтому ``make collect`` и
  ``make hub-release`` работают как прежде. Настройки Jupyter каждого — там же,
  ``config/<имя>/``: владелец root, читать может только сам учащийся (группа — его).

Сервер преподавателя работает от того, кто запустил ``make hub`` (владелец курса): formgrader
пишет ту же базу оценок, что и ``make grade``.
"""

from __future__ import annotations

import contextlib
import csv
import grp
import hashlib
import html
import io
import json
import os
import pwd
import re
import secrets
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from feedback.teacher.core import files
from feedback.teacher.core.settings import COURSE_ID, Settings
from feedback.teacher.course import public

#: Приставка имён Unix учётных записей курса (``c7-ivanov``): сразу видно, чьи они.
PREFIX = "c7-"
#: Общая папка класса: exchange и настройки серверов — там, куда учащиеся могут пройти.
SHARED = Path("/srv/course7")
#: Где заводятся домашние папки учащихся.
HOMES = Path("/home")
#: Список паролей для печати и их хранилище (всё — 0600, в закрытой рабочей папке).
PASSWORD_STORE = "class_passwords.json"
PASSWORD_LIST = "passwords.csv"
PASSWORD_PAGE = "passwords.html"
#: Кто заведён в Unix (логин → id из списка, у преподавателя — ``null``) — для ``remove``.
ACCOUNTS = "class_accounts.json"
#: Оболочка входа учащегося: по SSH и ``su`` не войти; JupyterLab открывает свою (TERMINAL).
NOLOGIN = "/usr/sbin/nologin"
TERMINAL = "/bin/bash"
#: Буквы паролей — без похожих (0/O, 1/l/I): пароль переписывают с листа.
ALPHABET = "abcdefghjkmnpqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
#: 12 знаков — около 70 бит; у преподавателя (его сервер — владелец курса) — 24.
LEARNER_PASSWORD = 12
TEACHER_PASSWORD = 24
#: Предел длины имени пользователя Unix (useradd, utmp).
NAME_LIMIT = 32
_PREFIX_RULE = re.compile(r"^[a-z][a-z0-9]{0,7}-$")
_NAME_CHARS = re.compile(r"[^a-z0-9_-]")
#: Имя из списка в поле GECOS /etc/passwd: без разделителей полей и управляющих знаков.
_GECOS_UNSAFE = re.compile(r"[:,=\x00-\x1f\x7f]")


class ClassError(RuntimeError):
    """Режим класса не может начаться: что-то не так на сервере (код выхода 2)."""


# --------------------------------------------------------------------------- имена и пароли


def check_prefix(prefix: str) -> str:
    if not _PREFIX_RULE.match(prefix):
        raise ClassError(
            f"приставка «{prefix}» не годится: строчная латинская буква, до 7 букв или цифр и "
            "дефис в конце (например, c7-)"
        )
    return prefix


def unix_name(student_id: str, prefix: str = PREFIX) -> str:
    """Имя пользователя Unix для id из списка: приставка и id строчными.

    Знаки, которых нет в именах Unix (``@``, ``.``), — ``_``; если id пришлось изменить или
    укоротить, в конце — 6 знаков его отпечатка, чтобы ``a.b`` и ``a_b`` не совпали.
    """
    base = student_id.lower()
    cleaned = _NAME_CHARS.sub("_", base)
    name = prefix + cleaned
    if cleaned != base or len(name) > NAME_LIMIT:
        digest = hashlib.sha256(student_id.encode("utf-8")).hexdigest()[:6]
        name = f"{name[: NAME_LIMIT - 7]}-{digest}"
    return name


def course_group(prefix: str = PREFIX) -> str:
    """Группа Unix всех учётных записей курса (``c7-hub``): по ней узнаются свои."""
    return prefix + "hub"


def new_password(length: int) -> str:
    return "".join(secrets.choice(ALPHABET) for _ in range(length))


@dataclass(frozen=True)
class Account:
    """Учётная запись класса: логин Unix (он же имя входа) и id (у преподавателя — None)."""

    login: str
    student_id: str | None
    title: str = ""

    @property
    def teacher(self) -> bool:
        return self.student_id is None


def class_accounts(people: Mapping[str, str], teacher: str, prefix: str = PREFIX) -> list[Account]:
    """Учётные записи по списку (id → «Фамилия Имя») и преподаватель; одно имя на двоих —
    :class:`ClassError`."""
    check_prefix(prefix)
    chosen = [Account(unix_name(teacher, prefix), None, "преподаватель")]
    chosen += [Account(unix_name(sid, prefix), sid, title) for sid, title in people.items()]
    seen: dict[str, Account] = {}
    for account in chosen:
        if account.login in seen:
            other = seen[account.login].student_id or teacher
            raise ClassError(
                f"id «{other}» и «{account.student_id or teacher}» дают одно имя Unix "
                f"«{account.login}»: сделайте их разными"
            )
        seen[account.login] = account
    return chosen


# --------------------------------------------------------------------------- пользователи Unix


def _run(args: list[str], stdin: str | None = None) -> None:
    result = subprocess.run(args, input=stdin, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise ClassError(f"{' '.join(args[:1])}: {(result.stderr or result.stdout).strip()}")


def _members(group: str) -> set[str]:
    """Члены группы Unix: перечисленные в ней и те, у кого она основная."""
    try:
        entry = grp.getgrnam(group)
    except KeyError:
        return set()
    primary = {user.pw_name for user in pwd.getpwall() if user.pw_gid == entry.gr_gid}
    return set(entry.gr_mem) | primary


def _exists(login: str) -> bool:
    try:
        pwd.getpwnam(login)
    except KeyError:
        return False
    return True


def ensure_group(group: str) -> None:
    try:
        grp.getgrnam(group)
    except KeyError:
        _run(["groupadd", "--system", group])


def ensure_user(account: Account, group: str, homes: Path = HOMES) -> bool:
    """Пользователь Unix учётной записи (True — заведён сейчас).

    Уже существующий пользователь годится, только если он в группе курса (его завёл прежний
    ``make hub``): чужую учётную запись с тем же именем режим класса не присваивает.
    """
    if _exists(account.login):
        if account.login not in _members(group):
            raise ClassError(
                f"пользователь Unix «{account.login}» уже есть и заведён не make hub (не в "
                f"группе {group}): переименуйте его или выберите другую приставку "
                "(make hub HUB_PREFIX=…)"
            )
        return False
    home = homes / account.login
    _run(
        [
            "useradd",
            "--create-home",
            "--home-dir",
            str(home),
            "--shell",
            NOLOGIN,
            "--groups",
            group,
            "--comment",
            _GECOS_UNSAFE.sub(" ", account.title)[:60],
            account.login,
        ]
    )
    os.chmod(home, 0o700)
    return True


def set_password(login: str, password: str) -> None:
    """Системный пароль (его проверяет PAM при входе в JupyterHub)."""
    _run(["chpasswd"], stdin=f"{login}:{password}\n")


def remove_user(login: str, group: str) -> bool:
    """``userdel -r`` — только пользователя из группы курса; False — его уже нет."""
    if not _exists(login):
        return False
    if login not in _members(group):
        raise ClassError(f"«{login}» не в группе {group}: его завёл не make hub, он не удаляется")
    _run(["userdel", "--remove", login])
    return True


# --------------------------------------------------------------------------- список паролей


def _read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}


def password_page(rows: Iterable[tuple[Account, str]], url: str) -> str:
    """Лист для печати: по карточке на человека (id и имя из списка экранированы)."""
    cards = []
    for account, password in rows:
        who = account.title or account.student_id or ""
        cards.append(
            "<div class='card'>"
            f"<p class='who'>{html.escape(who)}"
            f"{'' if account.teacher else ' · id ' + html.escape(account.student_id or '')}</p>"
            f"<p>Адрес: <b>{html.escape(url)}</b></p>"
            f"<p>Имя входа: <b>{html.escape(account.login)}</b></p>"
            f"<p>Пароль: <b class='pw'>{html.escape(password)}</b></p></div>"
        )
    return (
        "<!DOCTYPE html><html lang='ru'><head><meta charset='utf-8'>"
        "<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
        "style-src 'unsafe-inline'\"><title>JupyterHub курса: пароли</title><style>"
        "body{font-family:sans-serif}.card{border:1px dashed #888;padding:6px 12px;"
        "margin:6px;display:inline-block;width:20em;vertical-align:top}"
        ".pw{font-family:monospace;font-size:120%}.who{font-weight:bold}</style></head><body>"
        + "".join(cards)
        + "</body></html>\n"
    )


def password_rows(rows: Iterable[tuple[Account, str]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["id", "name", "login", "password"])
    for account, password in rows:
        writer.writerow([account.student_id or "", account.title, account.login, password])
    return out.getvalue()


# --------------------------------------------------------------------------- права


def _others(mode: int, bits: int) -> bool:
    return mode & bits == bits


def unreachable(path: Path, need: int = stat.S_IXOTH) -> Path | None:
    """Первая папка на пути к ``path`` (и сам ``path`` с правами ``need``), куда «прочие»
    пользователи Unix не могут пройти; None — путь открыт."""
    path = Path(path).resolve()
    for folder in reversed(path.parents):
        if not _others(folder.stat().st_mode, stat.S_IXOTH):
            return folder
    return None if _others(path.stat().st_mode, need) else path


def check_environment(python: Path) -> None:
    """Учащиеся запускают JupyterLab и ядра из того же окружения: Python и .venv им открыты,
    но писать туда они не могут."""
    prefix = python.parent.parent
    real = python.resolve()
    base = real.parent.parent  # стандартная библиотека: <base>/lib/python3.X
    for path, need in (
        (real, stat.S_IXOTH),
        (prefix, stat.S_IXOTH | stat.S_IROTH),
        (base, stat.S_IXOTH | stat.S_IROTH),
    ):
        closed = unreachable(path, need)
        if closed is not None:
            raise ClassError(
                f"учащиеся не могут запустить Python курса ({real}): к {closed} им нет доступа. "
                "Поставьте Python и .venv туда, куда открыт путь всем (например, клон курса в "
                "/opt и Python из apt или uv python install в /opt), или откройте проход: "
                f"chmod o+x {closed}"
            )
    for path in (prefix, prefix / "lib", real.parent):
        if path.stat().st_mode & (stat.S_IWOTH | stat.S_IWGRP):
            raise ClassError(f"{path} открыт на запись не только вам: chmod go-w {path}")


def lock_course(settings: Settings, venv: Path | None) -> list[Path]:
    """Клон курса: учащийся проходит только к публичной части и к ``.venv``; рабочая папка — 0700.

    Корень клона — 0711 (пройти можно, список не прочесть), каждая его запись не из
    ``public.PUBLIC`` (и не ``.venv``) — без прав для группы и прочих. Возвращает закрытое.
    """
    root, work = settings.root.resolve(), settings.work.resolve()
    closed = []
    work.mkdir(parents=True, exist_ok=True)
    os.chmod(work, 0o700)
    closed.append(work)
    open_names = set(public.PUBLIC)
    if venv is not None and venv.resolve().parent == root:
        open_names.add(venv.resolve().name)
    os.chmod(root, 0o711)
    for entry in root.iterdir():
        if entry.name in open_names or entry.is_symlink():
            continue
        mode = entry.stat().st_mode
        os.chmod(entry, stat.S_IMODE(mode) & 0o700)
        closed.append(entry)
    return closed


def _owned_by_root(path: Path, mode: int, group: int = 0) -> None:
    os.chown(path, 0, group)
    os.chmod(path, mode)


def prepare_exchange_link(settings: Settings, shared: Path) -> Path:
    """exchange класса: ``shared/exchange`` (root, 1777), а ``<рабочая папка>/exchange`` — ссылка
    на неё (если ``COURSE7_EXCHANGE_DIR`` не задан). Возвращает настоящий путь exchange."""
    if settings.exchange_dir is not None:
        target = settings.exchange_dir
    else:
        target = shared / "exchange"
        link = settings.workspace.exchange  # COURSE7_EXCHANGE_DIR не задан: в рабочей папке
        if link.is_dir() and not link.is_symlink():
            # exchange пробы переезжает целиком: выпуски и сдачи не теряются.
            target.parent.mkdir(parents=True, exist_ok=True)
            if target.exists():
                raise ClassError(
                    f"{link} и {target} — оба exchange: перенесите сдачи из одного в другой"
                )
            shutil.move(str(link), str(target))
        if not link.is_symlink():
            link.symlink_to(target)
    target.mkdir(parents=True, exist_ok=True)
    _owned_by_root(target, 0o1777)
    _course_folders(target / COURSE_ID)
    closed = unreachable(target)
    if closed is not None:
        raise ClassError(
            f"учащиеся не могут пройти к exchange {target}: к {closed} нет доступа (chmod o+x)"
        )
    return target.resolve()


def _course_folders(course: Path) -> None:
    """Папки курса в exchange — сразу, от root и с правами nbgrader: корень exchange открыт
    всем на запись, и учащийся, создавший ``course7/`` первым, стал бы его владельцем."""
    # inbound — 3733, как после make hub-release: сдавать могут все, читать и переименовать
    # чужую папку (бит sticky) — никто; иначе make collect отказался бы собирать (exchange.py).
    for path, mode in (
        (course, 0o755),
        (course / "outbound", 0o755),
        (course / "inbound", 0o3733),
        (course / "feedback", 0o711),
    ):
        with contextlib.suppress(FileExistsError):
            os.mkdir(path, 0o700)
        # Права ставятся через дескриптор той самой папки (не по ссылке): между проверкой и
        # chmod учащийся не подменит её ссылкой на чужую папку.
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            fd = None
        try:
            if fd is None or os.fstat(fd).st_uid != 0:
                raise ClassError(
                    f"{path} создал не root: его мог занять учащийся. Посмотрите, что там, и "
                    "удалите его — make hub создаст заново"
                )
            os.fchmod(fd, mode)
        finally:
            if fd is not None:
                os.close(fd)


def share_config(folder: Path, login: str, terminal: bool = True) -> None:
    """Настройки сервера учащегося: владелец root, читает только он сам (группа — его).

    ``terminal`` — терминал JupyterLab открывает ``bash``, хотя оболочка входа — nologin.
    """
    server_file = folder / "jupyter_server_config.json"
    if terminal and server_file.is_file():
        server = json.loads(server_file.read_text(encoding="utf-8"))
        server["ServerApp"]["terminado_settings"] = {"shell_command": [TERMINAL]}
        files.write_text(server_file, json.dumps(server, ensure_ascii=False, indent=1))
    gid = pwd.getpwnam(login).pw_gid
    for path in [folder, *folder.rglob("*")]:
        _owned_by_root(path, 0o750 if path.is_dir() else 0o640, gid)


# --------------------------------------------------------------------------- всё вместе


@dataclass(frozen=True)
class ClassSetup:
    """Что сделал режим класса: учётные записи, кто заведён сейчас, exchange, список паролей."""

    accounts: list[Account]
    created: list[str]
    exchange: Path
    password_list: Path
    password_page: Path
    closed: list[Path]


def setup(
    settings: Settings,
    folder: Path,
    people: Mapping[str, str],
    teacher: str,
    url: str,
    prefix: str = PREFIX,
    shared: Path = SHARED,
    homes: Path = HOMES,
    python: Path | None = None,
) -> ClassSetup:
    """Учётные записи Unix, пароли, права клона и exchange — для JupyterHub класса.

    Повторный запуск ничего не меняет у тех, кто уже заведён: пароль и домашняя папка
    остаются; новый учащийся в списке — новая учётная запись и строка в списке паролей.
    """
    if os.geteuid() != 0:
        raise ClassError(
            "режим класса заводит пользователей Unix — нужен root: sudo make hub ROSTER=…; "
            "посмотреть без этого — make hub HUB_MODE=trial"
        )
    if shutil.which("useradd") is None or shutil.which("chpasswd") is None:
        raise ClassError("нет useradd и chpasswd (пакет passwd): режим класса — только на Linux")
    python = python or Path(sys.executable)
    check_environment(python)
    chosen = class_accounts(people, teacher, prefix)
    group = course_group(prefix)
    for account in chosen:  # сначала проверить всех: чужой пользователь — до первого useradd
        if _exists(account.login) and account.login not in _members(group):
            ensure_user(account, group, homes)
    folder.mkdir(parents=True, exist_ok=True)
    closed = lock_course(settings, python.parent.parent)
    ensure_group(group)
    homes.mkdir(parents=True, exist_ok=True)
    store = folder / PASSWORD_STORE
    known: dict[str, str] = _read_json(store)
    recorded: dict[str, str | None] = _read_json(folder / ACCOUNTS)
    created = []
    for account in chosen:
        if ensure_user(account, group, homes):
            created.append(account.login)
        recorded[account.login] = account.student_id
        files.write_text(folder / ACCOUNTS, json.dumps(recorded, indent=1), permissions=0o600)
        if account.login in created or account.login not in known:
            size = TEACHER_PASSWORD if account.teacher else LEARNER_PASSWORD
            known[account.login] = new_password(size)
            set_password(account.login, known[account.login])
            files.write_text(store, json.dumps(known, indent=1), permissions=0o600)
    rows = [(account, known[account.login]) for account in chosen]
    listing = files.write_text(folder / PASSWORD_LIST, password_rows(rows), permissions=0o600)
    page = files.write_text(folder / PASSWORD_PAGE, password_page(rows, url), permissions=0o600)
    shared.mkdir(parents=True, exist_ok=True)
    _owned_by_root(shared, 0o755)
    (shared / "config").mkdir(exist_ok=True)
    _owned_by_root(shared / "config", 0o755)
    exchange = prepare_exchange_link(settings, shared)
    return ClassSetup(chosen, created, exchange, listing, page, closed)


def recorded(folder: Path) -> dict[str, str | None]:
    """Логины, которые заводил режим класса, и чьи они: id из списка, у преподавателя — None.

    По этой таблице сбор сдач может сверить владельца папки в inbound с id учащегося
    (``c7-ivanov`` сдаёт только как ``ivanov``).
    """
    return dict(_read_json(folder / ACCOUNTS))


def remove(folder: Path, prefix: str = PREFIX) -> list[str]:
    """Учётные записи класса — прочь вместе с домашними папками (``userdel -r``) и паролями.

    Удаляются только записанные в ``class_accounts.json`` и состоящие в группе курса.
    """
    recorded = _read_json(folder / ACCOUNTS)
    group = course_group(prefix)
    removed = [login for login in recorded if remove_user(login, group)]
    if not _members(group):
        try:
            grp.getgrnam(group)
        except KeyError:
            pass
        else:
            _run(["groupdel", group])
    for name in (ACCOUNTS, PASSWORD_STORE, PASSWORD_LIST, PASSWORD_PAGE):
        (folder / name).unlink(missing_ok=True)
    return removed

"""Exchange nbgrader, которому курс не верит: безопасный ли он и что в нём сдано на самом деле.

На JupyterHub у каждого учащегося есть терминал, а exchange — общая папка: всё в ней, кроме
папок, которые создал преподаватель, пишет учащийся. Поэтому ``make collect`` не зовёт
``nbgrader collect`` (тот идёт по ссылкам, чужую сдачу только предупреждает «cheating
attempt?», а время сдачи берёт из имени папки, которое пишет учащийся), а собирает сам, по
раскладке nbgrader (``<id>+<лабораторная>+<время>+<случайное>`` в ``<курс>/inbound``):

- **exchange и папка курса** — такие, как их оставил администратор (никаких ``chmod``): корень
  принадлежит преподавателю (или root) и, если писать в него могут все, — с битом sticky
  (иначе любой учащийся переименует папку курса и подложит свою); папка курса и inbound —
  не ссылки, принадлежат преподавателю, папка курса не открыта на запись всем, inbound
  открыт только со sticky. Не так — :class:`UnsafeExchange` с тем, что исправить
  (:func:`check_exchange`), и ни выпуска, ни сбора;
- **чья сдача** — папку ``ivanov+…`` должен был создать пользователь Unix ``ivanov``
  (JupyterHub приводит имя входа к нижнему регистру — годится и оно) или сам преподаватель
  (пробный ``make hub``: серверы всех учащихся — его процессы). Чужая папка не собирается
  вовсе, а становится строкой problems.csv (:func:`scan`);
- **что собирается** — только обычные файлы, которые лежат в папке сдачи и принадлежат её
  владельцу, с одной жёсткой ссылкой: ссылка на тетрадку решений, жёсткая ссылка на чужой
  файл, FIFO и устройство не открываются никогда (``os.open`` с ``O_NOFOLLOW | O_NONBLOCK``
  от дескриптора папки, после открытия — ``fstat``: тот ли это файл и обычный ли он);
- **когда сдано** — по времени изменения inode (ctime) папки сдачи и всего в ней: ctime ставит
  ядро, пользователь не может ни отвести его назад, ни поставить в будущее, а правка файла
  после срока его сдвигает. ``timestamp.txt`` и время в имени папки пишет учащийся — им не
  верится: выдуманный 2099 год не перебьёт настоящую пересдачу, а 2019-й не спрячет опоздание.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pwd
import re
import secrets
import shutil
import stat
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from feedback.formatting import plural
from feedback.teacher.core import files
from feedback.teacher.core.settings import UPLOAD_LIMITS
from feedback.teacher.core.tables import Problem
from feedback.teacher.intake.names import clean_name
from feedback.teacher.intake.roster import valid_id

#: Папка сдачи в inbound (``nbgrader submit``): id, лабораторная, время и (если
#: ``add_random_string``) случайная приписка. В id курса «+» не бывает (:func:`valid_id`),
#: поэтому имя делится однозначно.
_INBOUND = re.compile(r"^(?P<student>[^+]+)\+(?P<lab>[^+]+)\+(?P<timestamp>[^+]+)(?:\+[^+]*)?$")
#: Что nbgrader не копирует при сдаче и сборе (``CourseDirectory.ignore``).
IGNORED = (".ipynb_checkpoints", "__pycache__", "feedback")
#: Вложенность папок и число записей в одной сдаче: тетрадка с парой файлов данных — это
#: единицы записей и одна-две папки; тысячи — попытка заставить сбор ходить вечно.
MAX_DEPTH = 8
MAX_ENTRIES = 1000
#: Сколько папок в inbound читается от одного пользователя Unix: у честного учащегося — по
#: несколько сдач каждой из шести лабораторных; сотни тысяч папок одного владельца — попытка
#: остановить сбор всего класса (остальные не читаются, о них — одна строка problems.csv).
MAX_FOLDERS_PER_OWNER = 300
#: Начало столбца file строк problems.csv о сдачах в exchange: их пишет только make collect
#: (каждый раз заново), и make grade их не стирает.
FILE_PREFIX = "exchange/inbound/"
#: Время сдачи в ``timestamp.txt`` — в формате nbgrader (его читает ``nbgrader.utils.parse_utc``).
TIME_FORMAT = "%Y-%m-%d %H:%M:%S.%f UTC"
#: Время сдачи рядом с собранной тетрадкой (имя — как у nbgrader submit и collect). Своё,
#: которое написал учащийся, не копируется: его заменяет время по ctime.
TIMESTAMP = "timestamp.txt"
#: Секрет сдачи nbgrader: по нему make feedback находит сдачу (обычный файл в корне сдачи).
SUBMISSION_SECRET = "submission_secret.txt"
#: Запись сдачи, которую не копируют и о которой не пишут строку: timestamp.txt учащегося.
SKIP = "skip"


class UnsafeExchange(RuntimeError):
    """Exchange открыт для подмены: что не так и что исправить (по-русски)."""


def teacher_uids() -> set[int]:
    """Чьим папкам exchange можно верить: того, кто запустил make, и root."""
    return {os.geteuid(), 0}


def _owner(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return f"uid {uid}"


def _mode(info: os.stat_result) -> str:
    return f"{stat.S_IMODE(info.st_mode):04o}"


def check_exchange(root: Path, course: str) -> None:
    """Корень exchange, папка курса и её inbound такие, что учащийся не подменит ни одну.

    Ничего не меняет: права и владельцев ставит администратор. Папки, которой ещё нет, не
    проверяет (её создаст выпуск). Не так — :class:`UnsafeExchange`.
    """
    trusted = teacher_uids()
    try:
        info = os.stat(root)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeExchange(f"exchange {root} — не папка: уберите этот файл")
    if info.st_uid not in trusted:
        raise UnsafeExchange(
            f"корень exchange {root} принадлежит «{_owner(info.st_uid)}», а не преподавателю или "
            f"root: его мог подменить учащийся. Администратору: sudo chown root {root} "
            f"&& sudo chmod 1777 {root}"
        )
    if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        raise UnsafeExchange(
            f"в корень exchange {root} могут писать все, а бита sticky нет (права "
            f"{_mode(info)}): любой учащийся переименует папку курса и подложит свою. "
            f"Исправьте: chmod +t {root} (права 1777, как у /tmp)"
        )
    for folder, open_to_all in ((root / course, False), (root / course / "inbound", True)):
        try:
            info = os.lstat(folder)
        except FileNotFoundError:
            return
        if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
            raise UnsafeExchange(
                f"{folder} — ссылка или файл, а не папка, которую создал выпуск: её подменили. "
                f"Уберите её (rm {folder}) и выпустите лабораторные заново (make hub-release)"
            )
        if info.st_uid not in trusted:
            raise UnsafeExchange(
                f"папка {folder} принадлежит «{_owner(info.st_uid)}», а не преподавателю: её "
                "подменили (учащийся переименовал папку курса и положил свою). Уберите её, "
                f"проверьте права корня exchange (chmod +t {root}) и выпустите лабораторные "
                "заново (make hub-release)"
            )
        writable = info.st_mode & stat.S_IWOTH or (info.st_mode & stat.S_IWGRP and info.st_gid)
        if writable and not (open_to_all and info.st_mode & stat.S_ISVTX):
            fix = "chmod +t" if open_to_all else "chmod o-w"
            raise UnsafeExchange(
                f"в папку {folder} могут писать все (права {_mode(info)}): учащиеся переименуют "
                f"и подменят чужие папки. Исправьте: {fix} {folder}"
            )


def protect_inbound(root: Path, course: str) -> None:
    """Бит sticky на inbound, который создал выпуск nbgrader (права 2733): без него любой
    учащийся, угадав имя чужой папки сдачи, переименовал бы или удалил её."""
    with contextlib.suppress(OSError):  # нет папки, ссылка, нет прав — скажет check_exchange
        folder = os.lstat(root / course)
        if stat.S_ISLNK(folder.st_mode) or folder.st_uid not in teacher_uids():
            return  # папку курса подменили: об этом скажет check_exchange, а не chmod
        fd = os.open(root / course / "inbound", os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            info = os.fstat(fd)
            if (
                info.st_uid == os.geteuid()
                and info.st_mode & stat.S_IWOTH
                and not info.st_mode & stat.S_ISVTX
            ):
                os.fchmod(fd, stat.S_IMODE(info.st_mode) | stat.S_ISVTX)
        finally:
            os.close(fd)


# --------------------------------------------------------------------------- сдачи


@dataclass(frozen=True)
class Entry:
    """Запись в папке сдачи: путь внутри неё и что о ней сказал ``lstat``."""

    parts: tuple[str, ...]
    info: os.stat_result

    @property
    def path(self) -> str:
        return "/".join(self.parts)


@dataclass
class Attempt:
    """Одна сдача в inbound, которой можно верить: чья, какая лабораторная, когда сдана."""

    name: str
    student: str
    lab: str
    uid: int
    device: int
    inode: int
    time: datetime
    entries: list[Entry] = field(default_factory=list)

    @property
    def file(self) -> str:
        return FILE_PREFIX + clean_name(self.name)


@dataclass
class Collected:
    """Сдача, собранная в ``submitted/<id>/<лабораторная>/``."""

    student: str
    lab: str
    folder: str
    time: datetime
    files: list[str]


@dataclass
class Collection:
    """Итог сбора: собранные сдачи и строки problems.csv обо всём, что не собрано."""

    collected: list[Collected] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)


def _time(nanoseconds: int) -> datetime:
    """Время по ctime, не позже «сейчас» (часы сервера файлов могут спешить)."""
    moment = datetime.fromtimestamp(nanoseconds / 1e9, UTC)
    return min(moment, datetime.now(UTC)).replace(tzinfo=None)


def _accepts(uid: int, student: str, accounts: Mapping[str, str | None]) -> bool:
    """Сдача от имени ``student`` от пользователя ``uid``: он сам или преподаватель.

    ``accounts`` — логины класса ``make hub`` и чьи они (``c7-ivanov`` → ``ivanov``): такой
    логин сдаёт только под своим id из списка.
    """
    if uid in teacher_uids():
        return True  # пробный make hub: все серверы — процессы преподавателя
    owner = _owner(uid)
    if accounts:  # класс make hub: кто есть кто — только по class_accounts.json
        return owner in accounts and accounts[owner] == student
    return owner in (student, student.lower())  # JupyterHub: имя входа — в нижнем регистре


@contextlib.contextmanager
def _opened_dir(name: str, parent: int, expected: os.stat_result) -> Iterator[int]:
    """Папка ``name`` из папки-дескриптора ``parent``: не по ссылке и та самая, что в lstat."""
    fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=parent)
    try:
        info = os.fstat(fd)
        if (info.st_dev, info.st_ino) != (expected.st_dev, expected.st_ino):
            raise OSError(0, "папку подменили во время сбора")
        yield fd
    finally:
        os.close(fd)


def _walk(fd: int, prefix: tuple[str, ...], found: list[Entry], problems: list[str]) -> None:
    """Записи папки сдачи без открытия файлов (``lstat`` от дескриптора), папки — вглубь."""
    # Не больше MAX_ENTRIES записей читается вовсе: миллион пустых файлов не держит сбор.
    listed = itertools.islice(os.scandir(fd), MAX_ENTRIES - len(found) + 1)
    for item in sorted(listed, key=lambda item: item.name):
        name = item.name
        if name in IGNORED or name.endswith(".pyc"):
            continue
        if len(found) >= MAX_ENTRIES:
            note = f"в сдаче больше {MAX_ENTRIES} записей — остальные не собраны"
            if note not in problems:
                problems.append(note)
            return
        info = item.stat(follow_symlinks=False)
        entry = Entry((*prefix, name), info)
        found.append(entry)
        if stat.S_ISDIR(info.st_mode):
            if len(prefix) + 1 >= MAX_DEPTH:
                problems.append(f"{entry.path}: вложенность больше {MAX_DEPTH} папок — не собрана")
                continue
            with _opened_dir(name, fd, info) as inner:
                _walk(inner, entry.parts, found, problems)


def scan(
    inbound: Path, labs: Iterable[str], accounts: Mapping[str, str | None] | None = None
) -> tuple[list[Attempt], list[Problem]]:
    """Сдачи в ``inbound``, которым можно верить, и строки problems.csv об остальных.

    Не собирается (строка problems.csv): не папка (ссылка, файл), имя не по раскладке
    nbgrader, id, который не годится в имя папки, чужая лабораторная и — главное — папка,
    владелец которой не тот учащийся, чьим id она названа (``accounts`` — логины класса
    ``make hub`` и их id, :func:`feedback.teacher.hub.accounts.recorded`).
    """
    labs = set(labs)
    accounts = dict(accounts or {})
    attempts: list[Attempt] = []
    problems: list[Problem] = []
    seen: dict[int, int] = {}  # папок в inbound от каждого владельца
    teachers = teacher_uids()
    fd = os.open(inbound, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        for item in sorted(os.scandir(fd), key=lambda item: item.name):
            name = item.name
            shown = FILE_PREFIX + clean_name(name)
            match = _INBOUND.match(name)
            student = match["student"] if match else "?"
            lab = match["lab"] if match and match["lab"] in labs else "?"
            info = item.stat(follow_symlinks=False)
            seen[info.st_uid] = seen.get(info.st_uid, 0) + 1
            if seen[info.st_uid] > MAX_FOLDERS_PER_OWNER and info.st_uid not in teachers:
                if seen[info.st_uid] == MAX_FOLDERS_PER_OWNER + 1:
                    problems.append(
                        Problem(
                            "?",
                            "?",
                            FILE_PREFIX + clean_name(_owner(info.st_uid)),
                            f"у пользователя «{_owner(info.st_uid)}» в inbound больше "
                            f"{MAX_FOLDERS_PER_OWNER} папок — остальные его папки не читались",
                        )
                    )
                continue
            why = _refusal(info, match, lab, accounts)
            entries: list[Entry] = []
            notes: list[str] = []
            if why is None:
                try:
                    with _opened_dir(name, fd, info) as inner:
                        _walk(inner, (), entries, notes)
                except OSError as error:
                    why = f"папка сдачи не читается ({error.strerror or error}) — не собрана"
            if why is not None:
                problems.append(Problem(student if match else "?", lab, shown, why))
                continue
            problems.extend(Problem(student, lab, shown, note) for note in notes)
            newest = max([info.st_ctime_ns, *(entry.info.st_ctime_ns for entry in entries)])
            attempts.append(
                Attempt(name, student, lab, info.st_uid, info.st_dev, info.st_ino, _time(newest))
            )
            attempts[-1].entries = entries
    finally:
        os.close(fd)
    return attempts, problems


def _refusal(
    info: os.stat_result,
    match: re.Match[str] | None,
    lab: str,
    accounts: Mapping[str, str | None],
) -> str | None:
    """Почему папку в inbound нельзя собрать (по lstat, не открывая её), или ``None``."""
    if not stat.S_ISDIR(info.st_mode):
        return "не папка сдачи (ссылка или файл) — не открыта и не собрана"
    if match is None or not valid_id(match["student"]):
        return "имя папки не похоже на сдачу nbgrader (id+лабораторная+время) — не собрана"
    if lab == "?":
        return f"лабораторной «{match['lab']}» в курсе нет — сдача не собрана"
    student, owner = match["student"], _owner(info.st_uid)
    if not _accepts(info.st_uid, student, accounts):
        return (
            f"папка сдачи названа id «{student}», а создал её пользователь «{owner}» — похоже "
            f"на подлог: не собрана. Удалите её из exchange и поговорите с «{owner}»"
        )
    return None


def latest(attempts: Iterable[Attempt]) -> dict[tuple[str, str], Attempt]:
    """Последняя сдача каждого (учащийся, лабораторная) — по времени, которое записало ядро."""
    chosen: dict[tuple[str, str], Attempt] = {}
    for attempt in sorted(attempts, key=lambda item: (item.time, item.name)):
        chosen[(attempt.student, attempt.lab)] = attempt
    return chosen


def _entry_problem(entry: Entry, attempt: Attempt) -> str | None:
    """Почему запись не копируется (по lstat, до открытия), или ``None``.

    :data:`SKIP` — ``timestamp.txt`` учащегося: его заменит время сдачи по ctime.
    Имена, которые пишет nbgrader (``timestamp.txt``, ``submission_secret.txt``), в корне
    сдачи могут быть только обычными файлами: папка с таким именем сломала бы сбор и выдачу
    отчётов всему классу.
    """
    info = entry.info
    if entry.parts[0] in (TIMESTAMP, SUBMISSION_SECRET):
        if len(entry.parts) > 1:
            return None  # внутри папки с таким именем: её саму не открыли, о ней сказано
        if not stat.S_ISREG(info.st_mode):
            return f"«{entry.parts[0]}» пишет nbgrader, это должен быть обычный файл — не собран"
        if entry.parts[0] == TIMESTAMP:
            return SKIP
    if stat.S_ISDIR(info.st_mode):
        return None
    if stat.S_ISLNK(info.st_mode):
        return "ссылка — не открыта и не собрана"
    if not stat.S_ISREG(info.st_mode):
        return "не обычный файл (FIFO, устройство, сокет) — не открыт и не собран"
    if info.st_nlink > 1:
        return "жёсткая ссылка (у файла есть другое имя вне сдачи) — не открыта и не собрана"
    if info.st_uid != attempt.uid:
        return f"файл принадлежит «{_owner(info.st_uid)}», а не сдавшему — не собран"
    if info.st_size > UPLOAD_LIMITS.notebook_bytes:
        return "файл больше предела тетрадки — не собран"
    return None


def _read(parent: int, entry: Entry) -> bytes:
    """Обычный файл из папки-дескриптора: без ссылок, без ожидания FIFO, тот же, что в lstat."""
    fd = os.open(entry.parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=parent)
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fh.fileno())
        same = (info.st_dev, info.st_ino) == (entry.info.st_dev, entry.info.st_ino)
        if not (stat.S_ISREG(info.st_mode) and same and info.st_nlink == 1):
            raise OSError(0, "файл подменили во время сбора")
        data = fh.read(UPLOAD_LIMITS.notebook_bytes + 1)
    if len(data) > UPLOAD_LIMITS.notebook_bytes:
        raise OSError(0, "файл вырос во время сбора")
    return data


def _copy(inbound: Path, attempt: Attempt, target: Path, problems: list[Problem]) -> list[str]:
    """Обычные файлы сдачи — в новую папку ``target``; что не скопировано — строки problems."""
    copied: list[str] = []
    total = 0
    root = os.open(inbound, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        info = os.stat(attempt.name, dir_fd=root, follow_symlinks=False)
        if (info.st_dev, info.st_ino) != (attempt.device, attempt.inode):
            raise OSError(0, "папку сдачи подменили во время сбора")
        with _opened_dir(attempt.name, root, info) as top:
            opened: dict[tuple[str, ...], int] = {(): top}
            try:
                for entry in attempt.entries:
                    why = _entry_problem(entry, attempt)
                    if why == SKIP:
                        continue
                    parent = opened.get(entry.parts[:-1])
                    if parent is None:
                        continue  # папка выше не открыта: о ней уже сказано
                    if why is None and stat.S_ISDIR(entry.info.st_mode):
                        fd = os.open(
                            entry.parts[-1],
                            os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK,
                            dir_fd=parent,
                        )
                        opened[entry.parts] = fd
                        (target / entry.path).mkdir()
                        continue
                    if why is None and total + entry.info.st_size > UPLOAD_LIMITS.archive_bytes:
                        why = "сдача больше предела папки с работами — файл не собран"
                    if why is None:
                        try:
                            data = _read(parent, entry)
                        except OSError as error:
                            why = f"файл не читается ({error.strerror or error}) — не собран"
                    if why is not None:
                        problems.append(
                            Problem(
                                attempt.student,
                                attempt.lab,
                                f"{attempt.file}/{clean_name(entry.path)}",
                                why,
                            )
                        )
                        continue
                    total += len(data)
                    files.write_bytes(target / entry.path, data)
                    copied.append(entry.path)
            finally:
                for parts, fd in opened.items():
                    if parts:
                        os.close(fd)
    finally:
        os.close(root)
    return copied


def _recover(submitted: Path) -> None:
    """Следы сбора, оборванного на полпути (kill -9, сбой питания): недособранная папка
    ``.<лаб>.collecting-*`` — прочь, а прежняя собранная ``.<лаб>.old-*`` возвращается на
    место, если новая так и не встала (иначе — прочь)."""
    for leftover in sorted(submitted.glob("*/.*.collecting-*")):
        shutil.rmtree(leftover, ignore_errors=True)
    for leftover in sorted(submitted.glob("*/.*.old-*")):
        final = leftover.parent / leftover.name[1:].split(".old-")[0]
        if final.exists():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.rename(final)


def collect(
    exchange: Path,
    course: str,
    submitted: Path,
    labs: Iterable[str],
    accounts: Mapping[str, str | None] | None = None,
) -> Collection:
    """Последняя сдача каждого учащегося каждой лабораторной — в ``submitted/<id>/<лаб>/``.

    Сначала проверяется exchange (:func:`check_exchange`); потом сдачи (:func:`scan`), из
    них последняя по времени ядра (:func:`latest`), и её обычные файлы копируются в новую
    папку, которая заменяет прежнюю целиком. ``timestamp.txt`` в ней — время сдачи по ctime
    (его читают :func:`feedback.teacher.hub.lateness.late` и база оценок), а не то, что написал
    учащийся.
    """
    check_exchange(exchange, course)
    result = Collection()
    inbound = exchange / course / "inbound"
    if not inbound.is_dir():
        return result
    _recover(submitted)
    attempts, result.problems = scan(inbound, labs, accounts)
    for (student, lab), attempt in sorted(latest(attempts).items()):
        final = submitted / student / lab
        final.parent.mkdir(parents=True, exist_ok=True)
        fresh = final.parent / f".{lab}.collecting-{secrets.token_hex(4)}"
        fresh.mkdir()
        old = final.parent / f".{lab}.old-{secrets.token_hex(4)}"
        try:
            copied = _copy(inbound, attempt, fresh, result.problems)
            files.write_text(fresh / TIMESTAMP, attempt.time.strftime(TIME_FORMAT))
            if final.exists():
                final.rename(old)
            try:
                fresh.rename(final)
            except OSError:
                if old.exists():
                    old.rename(final)  # прежняя собранная сдача — на своё место
                raise
        except OSError as error:
            shutil.rmtree(fresh, ignore_errors=True)
            result.problems.append(
                Problem(
                    student,
                    lab,
                    attempt.file,
                    f"сдача не собрана ({error.strerror or error}); прежняя собранная осталась",
                )
            )
            continue
        shutil.rmtree(old, ignore_errors=True)
        result.collected.append(Collected(student, lab, attempt.name, attempt.time, copied))
    return result


def summary(collection: Collection) -> str:
    """Строка итога: сколько собрано и сколько строк problems.csv."""
    line = f"Собрано: {plural(len(collection.collected), 'сдача', 'сдачи', 'сдач')}"
    if collection.problems:
        rows = plural(len(collection.problems), "строка", "строки", "строк")
        line += f"; не собрано или собрано не всё — {rows} в problems.csv"
    return line

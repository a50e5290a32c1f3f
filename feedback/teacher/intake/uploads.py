"""Что сдали учащиеся: папка или архив LMS → работы «учащийся, лабораторная, тетрадка».

Всё, что приходит от учащихся, считается недоверенным: архив может содержать пути
наружу (``../``) и ссылки, файл — быть пустым, битым или чужой лабораторной. Здесь
всё это превращается либо в работу для оценивания, либо в строку списка проблем
(:class:`Problem`) — но никогда в исключение, которое остановило бы оценивание
остальных.

Кто сдал: папка учащегося первого уровня или, если папок нет, начало имени файла до
названия лабораторной (``ivanov_1234_lab_7_2_training_flops.ipynb`` → ``ivanov_1234``).
Со списком учащихся это имя сопоставляется с ним (:mod:`feedback.teacher.intake.roster`), без
списка папка Moodle даёт id по имени (``Иванов Иван_123_assignsubmission_file_/`` →
``иванов_иван``, :func:`feedback.teacher.intake.names.by_name`), а тёзки одного задания
разводятся (:func:`route`). Какая лабораторная: по ``grade_id`` ячеек, а если разметки
нет — по совпадающему тексту ячеек; имя файла — лишь подсказка. Имена папок и файлов
приводятся к NFC: «Й» одной буквой и «И» с надстрочным знаком — один и тот же учащийся;
имена в архиве без флага UTF-8 читаются в кодировке архиватора (:func:`zip_names`).

Память родительского процесса на работу ограничена до разбора JSON
(:func:`check_structure`): 32 МиБ пустых списков развернулись бы в гигабайт объектов.
"""

from __future__ import annotations

import json
import os
import re
import stat
import struct
import zipfile
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Protocol

from feedback.formatting import plural
from feedback.teacher.core.settings import UPLOAD_LIMITS
from feedback.teacher.core.tables import Problem
from feedback.teacher.intake.names import (
    Match,
    apart,
    by_name,
    clean_name,
    parse_lms_name,
    student_id,  # noqa: F401 — его берут отсюда
)
from feedback.teacher.notebook.assemble import cell_source, normalize

#: Пределы одной тетрадки и всего прочитанного за запуск — настройка преподавателя
#: (:class:`feedback.teacher.core.settings.UploadLimits`).
MAX_NOTEBOOK_BYTES = UPLOAD_LIMITS.notebook_bytes
MAX_ARCHIVE_BYTES = UPLOAD_LIMITS.archive_bytes
#: Пределы JSON тетрадки (:func:`check_structure`). Выполненные эталонные решения курса:
#: глубина 7–8, списков и словарей 144–438, значений 881–2295. Сотни уровней
#: вложенности ломают рекурсивный разбор дальше (nbformat, json); на пределах списков и
#: значений разобранная тетрадка занимает меньше 100 МиБ (без них 32 МиБ пустых списков —
#: больше 700 МиБ).
MAX_JSON_DEPTH = 100
MAX_JSON_CONTAINERS = 100_000
#: Значение — строка, число, литерал, список или словарь (строка вывода — тоже значение).
MAX_JSON_VALUES = 1_000_000


@dataclass
class Upload:
    """Один файл из папки или архива: путь внутри него и содержимое."""

    parts: tuple[str, ...]
    data: bytes

    @property
    def path(self) -> str:
        return "/".join(self.parts)


@dataclass
class Submission:
    """Работа, готовая к оцениванию."""

    student: str
    lab: str
    file: str
    notebook: dict[str, Any]
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- сбор файлов


def _skipped(parts: tuple[str, ...]) -> bool:
    return any(part == "__MACOSX" or part.startswith(".") for part in parts)


def _bytes(size: int) -> str:
    for unit, scale in (("ГиБ", 1024**3), ("МиБ", 1024**2), ("КиБ", 1024)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return plural(size, "байт", "байта", "байт")


def _too_big() -> str:
    return f"файл больше {_bytes(MAX_NOTEBOOK_BYTES)} — не похоже на тетрадку курса"


def _over_total(kind: str) -> str:
    return (
        f"{kind} больше {_bytes(MAX_ARCHIVE_BYTES)} — этот файл не прочитан; "
        "разделите работы на части и оцените их отдельно"
    )


LINK = "ссылка вместо файла — не открыта"
DIR_LINK = "ссылка вместо папки — не открыта"


def from_folder(folder: Path) -> tuple[list[Upload], list[Problem]]:
    """Тетрадки из папки; ссылки и необычные файлы — в проблемы, скрытые папки пропускаются.

    Ссылки не разыменовываются ни на файлы, ни на папки: папка учащегося-ссылка тоже даёт
    строку проблем, а не пропадает молча. Файл читается не больше предела, и FIFO с
    именем ``.ipynb`` не останавливает чтение.
    """
    uploads: list[Upload] = []
    problems: list[Problem] = []
    total = 0

    def row(path: str | Path, problem: str) -> None:
        parts = Path(path).relative_to(folder).parts
        problems.append(Problem("?", "?", "/".join(clean_name(part) for part in parts), problem))

    def unreadable(error: OSError) -> None:
        row(error.filename or folder, f"папка не читается ({error.strerror}) — не открыта")

    folder = folder.absolute()
    for root, dirs, files in os.walk(folder, onerror=unreadable):
        base = Path(root)
        prefix = base.relative_to(folder).parts
        dirs.sort()
        for name in list(dirs):
            if _skipped((name,)):
                dirs.remove(name)
            elif (base / name).is_symlink():
                dirs.remove(name)  # os.walk в неё и не зашёл бы: без строки работа пропала бы
                row(base / name, DIR_LINK)
        for name in sorted(files):
            if _skipped((*prefix, name)) or not name.lower().endswith(".ipynb"):
                continue
            path = base / name
            problem, data = _read_file(path)
            if problem is None and total + len(data) > MAX_ARCHIVE_BYTES:
                problem, total = _over_total("папка с работами"), MAX_ARCHIVE_BYTES + 1
            if problem is not None:
                row(path, problem)
                continue
            total += len(data)
            parts = tuple(clean_name(part) for part in (*prefix, name))
            uploads.append(Upload(parts, data))
    return uploads, problems


def _read_file(path: Path) -> tuple[str | None, bytes]:
    """Содержимое обычного файла не больше предела или причина, почему его нет."""
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return LINK, b""
        if not stat.S_ISREG(info.st_mode):
            return "это не обычный файл — не открыт", b""
        if info.st_size > MAX_NOTEBOOK_BYTES:
            return _too_big(), b""
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # подменили после lstat
                return "это не обычный файл — не открыт", b""
            data = fh.read(MAX_NOTEBOOK_BYTES + 1)
    except OSError as error:
        return f"файл не читается ({error.strerror or error}) — не открыт", b""
    if len(data) > MAX_NOTEBOOK_BYTES:
        return _too_big(), b""
    return None, data


class BrokenArchive(ValueError):
    """Архив целиком не открывается (не zip, обрезан); текст — русское объяснение."""


#: Бит «зашифровано» в флагах записи zip.
_ENCRYPTED = 0x1
#: Бит «имя в UTF-8» (APPNOTE.TXT, бит 11 флагов).
_UTF8_NAME = 0x800
#: Поле Info-ZIP Unicode Path: имя в UTF-8 и CRC-32 имени, рядом с которым оно записано.
_UNICODE_PATH = 0x7075
#: Старые кодовые страницы Windows для кириллицы: OEM (Проводник) и ANSI; при равенстве — первая.
_LEGACY = ("cp866", "cp1251")
#: Имя, которое правдоподобно прочитано: печатные знаки ASCII (латиница, цифры, пробел и
#: знаки, из которых Moodle и учащиеся составляют имена папок и файлов), русские, украинские
#: и белорусские буквы и «№». В чужой кодовой странице кириллица становится знаками рамок
#: (cp1251, прочитанная как cp866) или «€», «‰», «Ђ» и т. п. (cp866, прочитанная как cp1251).
_PLAUSIBLE = re.compile(r"[ -~А-Яа-яЁёЄєІіЇїЎўҐґ№]*")


def _raw_name(info: zipfile.ZipInfo) -> bytes | None:
    """Байты имени записи без флага UTF-8 (zipfile читает их как cp437) или ``None``."""
    if info.flag_bits & _UTF8_NAME:
        return None
    try:
        return info.filename.encode("cp437")
    except UnicodeEncodeError:  # zipfile уже взял имя из поля Unicode Path (Python ≥ 3.12)
        return None


def _unicode_path(info: zipfile.ZipInfo, raw: bytes | None) -> str | None:
    """Имя из поля Info-ZIP Unicode Path, если оно относится к этому имени (CRC сходится)."""
    extra = info.extra
    while len(extra) >= 4:
        kind, size = struct.unpack("<HH", extra[:4])
        data, extra = extra[4 : 4 + size], extra[4 + size :]
        if kind != _UNICODE_PATH or len(data) < 5 or data[0] != 1:
            continue
        try:
            text = data[5:].decode("utf-8")
        except UnicodeDecodeError:
            return None
        crc = struct.unpack("<L", data[1:5])[0]
        if text == info.filename or (raw is not None and zlib.crc32(raw) == crc):
            return text
    return None


def _plausible(raw: bytes, encoding: str) -> bool:
    try:
        return _PLAUSIBLE.fullmatch(raw.decode(encoding)) is not None
    except UnicodeDecodeError:
        return False


def legacy_encoding(raws: Iterable[bytes]) -> str:
    """Кодировка имён без флага UTF-8 — одна на архив: её выбрал архиватор, а не учащийся.

    UTF-8, если все такие имена — правильный UTF-8 (так пишут Info-ZIP ``zip -r`` в Linux и
    архиватор macOS). Иначе архив сделан в Windows старой кодовой страницей: «Отправить →
    Сжатая ZIP-папка» пишет OEM — cp866, другие программы — ANSI, cp1251. Из двух берётся та,
    в которой правдоподобно больше имён (:data:`_PLAUSIBLE`: только буквы кириллицы и
    латиницы, цифры и печатные знаки ASCII); поровну — cp866, как у Проводника. Так же
    решает и человек с ``unzip -O CP866`` или ``-O CP1251``: какая из них даёт читаемые имена.
    """
    raws = [raw for raw in raws if not raw.isascii()]
    try:
        for raw in raws:
            raw.decode("utf-8")
    except UnicodeDecodeError:
        return max(_LEGACY, key=lambda encoding: sum(_plausible(raw, encoding) for raw in raws))
    return "utf-8"


def zip_names(infos: list[zipfile.ZipInfo]) -> list[str]:
    """Имена записей архива, прочитанные так, как их записал архиватор.

    С флагом UTF-8 (Moodle, 7-Zip, Windows 11) — как есть; с полем Info-ZIP Unicode Path —
    из него; остальные — в кодировке :func:`legacy_encoding`, а не в cp437, которую zipfile
    подставляет по стандарту и которой кириллицу не пишет ни один архиватор.
    """
    raws = [_raw_name(info) for info in infos]
    unicode = [
        _unicode_path(info, raw) if raw is not None else None
        for info, raw in zip(infos, raws, strict=True)
    ]
    encoding = legacy_encoding(
        raw for raw, text in zip(raws, unicode, strict=True) if raw is not None and text is None
    )
    names = []
    for info, raw, text in zip(infos, raws, unicode, strict=True):
        if text is None and raw is not None:
            text = raw.decode(encoding, "replace")
        names.append(info.filename if text is None else text)
    return names


def from_zip(archive: Path) -> tuple[list[Upload], list[Problem]]:
    """Тетрадки из архива LMS; пути наружу, ссылки, битые и огромные файлы — в проблемы.

    Имена записей читаются в кодировке, которой их записал архиватор (:func:`zip_names`).
    Запись, которую не удаётся распаковать (неверная CRC, испорченные сжатые данные,
    шифрование), — строка проблем, остальные читаются. Каждая тетрадка после предела
    всего архива — тоже своя строка. Не открывается сам архив — :class:`BrokenArchive`.
    """
    uploads, problems = [], []
    total = 0
    try:
        zf = zipfile.ZipFile(archive)
    except Exception as error:  # архив целиком: любой сбой zipfile значит «не zip»
        raise BrokenArchive(
            f"архив {archive} не открывается: это не zip или он обрезан при скачивании "
            f"({type(error).__name__}: {error}). Нужна папка или архив .zip из LMS — "
            "скачайте архив заново."
        ) from None
    with zf:
        infos = zf.infolist()
        for info, decoded in zip(infos, zip_names(infos), strict=True):
            name = clean_name(decoded.replace("\\", "/"))
            pure = PurePosixPath(name)
            link = stat.S_ISLNK(info.external_attr >> 16)
            if info.is_dir() or not (link or name.lower().endswith(".ipynb")):
                continue
            if pure.is_absolute() or ".." in pure.parts or re.match(r"^[A-Za-z]:", name):
                problems.append(Problem("?", "?", name, "путь ведёт за пределы архива — отказано"))
                continue
            if _skipped(pure.parts):
                continue
            if link:
                problems.append(Problem("?", "?", name, LINK))
                continue
            if info.file_size > MAX_NOTEBOOK_BYTES:
                problems.append(Problem("?", "?", name, _too_big()))
                continue
            if total + info.file_size > MAX_ARCHIVE_BYTES:
                total = MAX_ARCHIVE_BYTES + 1  # и все следующие: порядок — как в архиве
                problems.append(Problem("?", "?", name, _over_total("архив")))
                continue
            if info.flag_bits & _ENCRYPTED:
                problems.append(
                    Problem(
                        "?", "?", name, "файл зашифрован паролем — не открыт; сдайте без пароля"
                    )
                )
                continue
            problem, data = _unpack(zf, info)
            if problem is not None:
                problems.append(Problem("?", "?", name, problem))
                continue
            total += len(data)
            uploads.append(Upload(tuple(pure.parts), data))
    return uploads, problems


def _unpack(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> tuple[str | None, bytes]:
    """Распакованная запись не больше предела или причина, почему её нет."""
    try:
        with zf.open(info) as fh:
            data = fh.read(MAX_NOTEBOOK_BYTES + 1)
    except NotImplementedError as error:
        return f"файл сжат способом, который не поддерживается ({error}) — не открыт", b""
    except RuntimeError as error:  # так zipfile говорит о шифровании
        return f"файл зашифрован — не открыт ({error})", b""
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as error:
        return (
            f"архив повреждён: файл не распаковывается ({type(error).__name__}: {error}) — "
            "скачайте архив заново или попросите сдать файл ещё раз",
            b"",
        )
    if len(data) > MAX_NOTEBOOK_BYTES:
        return _too_big(), b""
    return None, data


# --------------------------------------------------------------------------- кто сдал


def _strip_wrappers(uploads: list[Upload], labs: Iterable[str]) -> None:
    """Убирает общую папку-обёртку (``export/ivanov/…`` → ``ivanov/…``)."""
    labs = set(labs)
    while uploads and all(len(upload.parts) >= 3 for upload in uploads):
        first = {upload.parts[0] for upload in uploads}
        if len(first) != 1 or any(upload.parts[1] in labs for upload in uploads):
            return
        for upload in uploads:
            upload.parts = upload.parts[1:]


#: Начало имени файла из архива Moodle без папок: ``Иванов Иван_123_assignsubmission_file_``.
_MOODLE_PREFIX = re.compile(r"^.+?_\d+_assignsubmission_[A-Za-z0-9]+_")


def owner_name(upload: Upload, labs: Iterable[str]) -> str | None:
    """Владелец, как он написан: папка первого уровня, префикс Moodle или начало имени файла."""
    if len(upload.parts) >= 2:
        return clean_name(upload.parts[0])
    stem = upload.parts[0][: -len(".ipynb")]
    moodle = _MOODLE_PREFIX.match(stem)
    if moodle:
        return moodle[0]
    for lab in sorted(labs, key=len, reverse=True):
        position = stem.find(lab)
        if position > 0:
            return stem[:position]
    return None


def owner(upload: Upload, labs: Iterable[str]) -> str | None:
    """Чья это работа без списка учащихся: :func:`owner_name` → id (:func:`by_name`)."""
    name = owner_name(upload, labs)
    return by_name(name).student if name is not None else None


# --------------------------------------------------------------------------- что сдал


class UnreadableUpload(ValueError):
    """Файл не удаётся прочитать как тетрадку; текст — русское объяснение."""


TOO_DEEP = "слишком глубокая вложенность JSON"

#: Лексемы JSON по порядку: строка (до закрывающей кавычки или до конца файла), открытие,
#: закрытие, число или литерал. Повторы — сверхжадные (``*+``): обычный повтор группы
#: копит состояние возврата на каждый экранированный символ (гигабайты на 32 МиБ «\\n»),
#: а незакрытая строка без ``\Z`` сканировалась бы заново с каждой кавычки — квадратично.
_TOKEN = re.compile(
    rb'(")[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)|([\[{])|([\]}])|([^\s\[\]{}",:]++)', re.S
)
_OPEN, _CLOSE = 2, 3


def _number(value: int) -> str:
    return f"{value:,}".replace(",", "\u00a0")


def check_structure(data: bytes) -> None:
    """Отказ до разбора, если JSON слишком глубок или в нём абсурдно много значений.

    ``json.loads`` строит все объекты сразу: файл из пустых списков занимает в памяти
    в 20 раз больше, чем на диске, а сотни уровней вложенности ломают рекурсивный разбор
    дальше по цепочке (``RecursionError``, которую легко принять за другую беду). Здесь
    лексемы только считаются, без построения объектов: память — постоянная, время —
    линейное и кончается на первом превышенном пределе. Синтаксис не проверяется — это
    дело ``json.loads``.
    """
    depth = containers = values = 0
    for token in _TOKEN.finditer(data):
        kind = token.lastindex
        if kind == _CLOSE:
            depth -= 1
            continue
        values += 1
        if values > MAX_JSON_VALUES:
            raise UnreadableUpload(
                f"не похоже на тетрадку курса: больше {_number(MAX_JSON_VALUES)} значений JSON "
                "(в тетрадке с выводами их тысячи) — очистите выводы и сдайте заново"
            )
        if kind != _OPEN:
            continue
        depth += 1
        containers += 1
        if depth > MAX_JSON_DEPTH:
            raise UnreadableUpload(
                f"файл повреждён: {TOO_DEEP} (больше {MAX_JSON_DEPTH} уровней, "
                "в тетрадке Jupyter их меньше десяти)"
            )
        if containers > MAX_JSON_CONTAINERS:
            raise UnreadableUpload(
                f"не похоже на тетрадку курса: больше {_number(MAX_JSON_CONTAINERS)} списков "
                "и словарей JSON (в тетрадке с выводами их сотни) — очистите выводы и сдайте "
                "заново"
            )


#: Экранированная половина суррогатной пары (``\ud83d``): после разбора может остаться
#: одиночной, а одиночный суррогат не записать в UTF-8 — ни в задание единицы, ни в CSV.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def read_notebook(data: bytes, notes: list[str] | None = None) -> dict[str, Any]:
    """Тетрадка из байтов: любой формат 4.x (Colab, Kaggle), без строгой проверки схемы.

    Одиночные суррогаты UTF-16 из JSON (обрезанный эмодзи) заменяются на «�»; о замене
    дописывается заметка в ``notes``.
    """
    if not data.strip():
        raise UnreadableUpload("пустой файл")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableUpload("файл не в кодировке UTF-8 — это не тетрадка Jupyter") from None
    check_structure(data)
    try:
        nb = json.loads(text)
    except RecursionError:
        raise UnreadableUpload(f"файл повреждён: {TOO_DEEP}") from None
    except ValueError as error:
        raise UnreadableUpload(f"файл повреждён: это не JSON ({error})") from None
    del text
    if _SURROGATE_ESCAPE.search(data):
        dumped = json.dumps(nb, ensure_ascii=False)
        if _SURROGATE.search(dumped):
            nb = json.loads(_SURROGATE.sub("\ufffd", dumped))
            if notes is not None:
                notes.append(
                    "В файле были недопустимые символы (одиночные суррогаты): заменены на «�»."
                )
    if not isinstance(nb, dict):
        raise UnreadableUpload("это не тетрадка Jupyter: в файле нет ячеек")
    if "worksheets" in nb and "cells" not in nb:  # формат 3
        worksheets = nb.get("worksheets") or [{}]
        nb = {"cells": worksheets[0].get("cells", []) if isinstance(worksheets[0], dict) else []}
        for cell in nb["cells"]:
            if isinstance(cell, dict) and "input" in cell:
                cell["source"] = cell.pop("input")
    if not isinstance(nb.get("cells"), list):
        raise UnreadableUpload("это не тетрадка Jupyter: в файле нет ячеек")
    return nb


def _cells(nb: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [cell for cell in nb.get("cells", []) if isinstance(cell, dict)]


def grade_ids(nb: Mapping[str, Any]) -> set[str]:
    ids = set()
    for cell in _cells(nb):
        metadata = cell.get("metadata")
        grading = metadata.get("nbgrader") if isinstance(metadata, dict) else None
        if isinstance(grading, dict) and isinstance(grading.get("grade_id"), str):
            ids.add(grading["grade_id"])
    return ids


def _texts(nb: Mapping[str, Any]) -> set[str]:
    texts = set()
    for cell in _cells(nb):
        source = cell_source(cell)
        if len(source.strip()) > 20:
            texts.add(normalize(source))
    return texts


def identify_lab(
    nb: Mapping[str, Any], releases: Mapping[str, Mapping[str, Any]], hint: str | None
) -> str | None:
    """Лабораторная работы: по grade_id, иначе по тексту ячеек, иначе по имени файла."""
    ids = grade_ids(nb)
    by_ids = {lab: len(ids & grade_ids(release)) for lab, release in releases.items()}
    best = max(by_ids.values(), default=0)
    winners = [lab for lab, count in by_ids.items() if count == best]
    if best > 0 and len(winners) == 1:
        return winners[0]
    texts = _texts(nb)
    by_text = {lab: len(texts & _texts(release)) for lab, release in releases.items()}
    best = max(by_text.values(), default=0)
    winners = [lab for lab, count in by_text.items() if count == best]
    if best >= 3 and len(winners) == 1:
        return winners[0]
    return hint if hint in releases else None


def _hint(upload: Upload, labs: Iterable[str]) -> str | None:
    parts = [clean_name(part) for part in upload.parts]
    for lab in sorted(labs, key=len, reverse=True):
        if any(lab in part for part in parts):
            return lab
    return None


class Identifies(Protocol):
    """Кто сдал, по владельцу и лабораторной (:class:`feedback.teacher.intake.roster.Matcher`).

    ``seen`` — номера участников этого запуска, (id, лабораторная) → номер (lms_ids.csv).
    """

    seen: dict[tuple[str, str], str]

    def identify(self, text: str, lab: str | None) -> Match: ...


class _ByName:
    """Без списка учащихся и без :class:`feedback.teacher.intake.roster.Matcher`: id — по имени."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], str] = {}

    def identify(self, text: str, lab: str | None) -> Match:
        return by_name(text)


def _joined(problem: str, other: str | None) -> str:
    return f"{problem}; {other}" if other else problem


Routed = Submission | Problem


def _namesakes(
    entries: list[tuple[Routed, Match | None, str]],
    labs: Iterable[str],
    seen: dict[tuple[str, str], str],
) -> list[Problem]:
    """Разводит тёзок: разные участники одного задания, чьё id взято из одного имени.

    Без списка учащихся id — имя (:func:`feedback.teacher.intake.names.by_name`), и у двух Ивановых
    Иванов одной лабораторной оно одно; их работы смешались бы (или обе стали бы «несколько
    файлов»). Каждый получает id с номером участника (:func:`feedback.teacher.intake.names.apart`),
    а problems.csv — строку о каждом: в других лабораторных номера другие, и свести их
    лабораторные может только список учащихся. ``entries`` и ``seen`` правятся на месте.
    """
    labs = set(labs)
    numbers: dict[tuple[str, str], set[str]] = defaultdict(set)
    for item, match, _ in entries:
        if match and match.by_name and match.participant and item.lab in labs:
            numbers[(item.student, item.lab)].add(match.participant)
    clashes = {key: sorted(found, key=int) for key, found in numbers.items() if len(found) > 1}
    notes = []
    for index, (item, match, name) in enumerate(entries):
        key = (item.student, item.lab)
        if key not in clashes or not (match and match.by_name and match.participant):
            continue
        student = apart(item.student, match.participant)
        entries[index] = (replace(item, student=student), match, name)
        seen.pop(key, None)
        seen[(student, item.lab)] = match.participant
        lms = parse_lms_name(name)
        people = plural(len(clashes[key]), "участник", "участника", "участников")
        notes.append(
            Problem(
                student,
                item.lab,
                item.file,
                f"в этом задании Moodle {people} с именем «{lms.name if lms else name}» "
                f"(номера {', '.join(clashes[key])}) — это разные люди: "
                f"работа участника {match.participant} оценена под id «{student}», а не "
                f"«{item.student}». В других лабораторных номера у них другие, и свести их "
                "работы по имени нельзя: дайте список учащихся (make grade ROSTER=students.csv) "
                "и оцените заново",
            )
        )
    return notes


def route(
    uploads: list[Upload],
    releases: Mapping[str, Mapping[str, Any]],
    matcher: Identifies | None = None,
) -> tuple[list[Submission], list[Problem]]:
    """Работы для оценивания и проблемы: чьи, какой лабораторной, одна ли на лабораторную.

    ``matcher`` (список учащихся, :mod:`feedback.teacher.intake.roster`) решает, чья работа, когда
    лабораторная уже известна; не нашёл — строка проблем с id «?», и работа не оценивается.
    Без списка id — имя из папки Moodle или папка целиком
    (:func:`feedback.teacher.intake.names.by_name`); тёзки одного задания разводятся
    (:func:`_namesakes`).
    """
    labs = list(releases)
    _strip_wrappers(uploads, labs)
    identifies: Identifies = matcher if matcher is not None else _ByName()
    entries: list[tuple[Routed, Match | None, str]] = []

    def add(item: Routed, match: Match | None = None, name: str = "") -> None:
        entries.append((item, match, name))

    for upload in uploads:
        name = owner_name(upload, labs)
        hint = _hint(upload, labs)
        if name is None or (matcher is None and owner(upload, labs) is None):
            add(Problem("?", hint or "?", upload.path, "не удалось понять, чья это работа"))
            continue
        notes: list[str] = []
        try:
            nb = read_notebook(upload.data, notes)
        except UnreadableUpload as error:
            match = identifies.identify(name, hint)
            add(
                Problem(
                    match.student or "?",
                    hint or "?",
                    upload.path,
                    _joined(str(error), match.problem),
                ),
                match,
                name,
            )
            continue
        lab = identify_lab(nb, releases, hint)
        match = identifies.identify(name, lab or hint)
        student, unknown = match.student, match.problem
        if lab is None:
            add(
                Problem(
                    student or "?",
                    hint or "?",
                    upload.path,
                    _joined("не удалось понять, какая это лабораторная", unknown),
                ),
                match,
                name,
            )
            continue
        if student is None:
            add(Problem("?", lab, upload.path, unknown or "не удалось понять, чья это работа"))
            continue
        if hint and hint != lab:
            notes.append(f"Файл {upload.path} назван как {hint}, но это {lab}: оценен как {lab}.")
        add(Submission(student, lab, upload.path, nb, notes), match, name)
    problems = _namesakes(entries, labs, identifies.seen)
    found: dict[tuple[str, str], list[Submission]] = defaultdict(list)
    for item, _, _ in entries:
        if isinstance(item, Submission):
            found[(item.student, item.lab)].append(item)
        else:
            problems.append(item)
    submissions = []
    for (student, lab), items in sorted(found.items()):
        if len(items) == 1:
            submissions.append(items[0])
            continue
        files = ", ".join(item.file for item in items)
        for item in items:
            problems.append(
                Problem(
                    student,
                    lab,
                    item.file,
                    f"у учащегося несколько файлов этой лабораторной ({files}) — ни один не "
                    "оценён; оставьте один и оцените заново",
                )
            )
    return submissions, problems

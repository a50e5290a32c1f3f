"""Чтение сданного: папка или архив zip из LMS → файлы тетрадок с путями, без разбора JSON.

Всё, что приходит от учащихся, недоверенное: архив может содержать пути наружу (``../``),
ссылки, шифрованные и испорченные записи, записи-бомбы (мегабайт, распаковывающийся в
гигабайты), а папка — ссылки и FIFO с именем ``.ipynb``. Каждая такая вещь — строка
``problems.csv`` (:class:`Problem`), а не исключение и не зависание. Сколько читать — пределы
:class:`feedback.teacher.core.settings.UploadLimits` (одна тетрадка и всё за запуск):
их задают в одном месте, в настройках, а здесь только применяют. Кто и что сдал, решает
:mod:`feedback.teacher.intake.uploads`.
"""

from __future__ import annotations

import os
import re
import stat
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from feedback.formatting import plural
from feedback.teacher.core import settings
from feedback.teacher.core.settings import UploadLimits
from feedback.teacher.core.tables import Problem
from feedback.teacher.intake.names import clean_name
from feedback.teacher.intake.zip_names import zip_names


@dataclass
class Upload:
    """Один файл из папки или архива: путь внутри него и содержимое."""

    parts: tuple[str, ...]
    data: bytes

    @property
    def path(self) -> str:
        return "/".join(self.parts)


def _limits(limits: UploadLimits | None) -> UploadLimits:
    """Пределы чтения: заданные явно или из настроек (:data:`settings.UPLOAD_LIMITS`) сейчас."""
    return settings.UPLOAD_LIMITS if limits is None else limits


def _skipped(parts: tuple[str, ...]) -> bool:
    return any(part == "__MACOSX" or part.startswith(".") for part in parts)


def _bytes(size: int) -> str:
    for unit, scale in (("ГиБ", 1024**3), ("МиБ", 1024**2), ("КиБ", 1024)):
        if size >= scale:
            return f"{size / scale:g} {unit}"
    return plural(size, "байт", "байта", "байт")


def _too_big(limits: UploadLimits) -> str:
    return f"файл больше {_bytes(limits.notebook_bytes)} — не похоже на тетрадку курса"


def _over_total(kind: str, limits: UploadLimits) -> str:
    return (
        f"{kind} больше {_bytes(limits.archive_bytes)} — этот файл не прочитан; "
        "разделите работы на части и оцените их отдельно"
    )


LINK = "ссылка вместо файла — не открыта"
DIR_LINK = "ссылка вместо папки — не открыта"


def from_folder(
    folder: Path, limits: UploadLimits | None = None
) -> tuple[list[Upload], list[Problem]]:
    """Тетрадки из папки; ссылки и необычные файлы — в проблемы, скрытые папки пропускаются.

    Ссылки не разыменовываются ни на файлы, ни на папки: папка учащегося-ссылка тоже даёт
    строку проблем, а не пропадает молча. Файл читается не больше предела, и FIFO с
    именем ``.ipynb`` не останавливает чтение. ``limits`` — пределы чтения (по умолчанию —
    из настроек).
    """
    limits = _limits(limits)
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
            problem, data = _read_file(path, limits)
            if problem is None and total + len(data) > limits.archive_bytes:
                problem, total = _over_total("папка с работами", limits), limits.archive_bytes + 1
            if problem is not None:
                row(path, problem)
                continue
            total += len(data)
            parts = tuple(clean_name(part) for part in (*prefix, name))
            uploads.append(Upload(parts, data))
    return uploads, problems


def _read_file(path: Path, limits: UploadLimits) -> tuple[str | None, bytes]:
    """Содержимое обычного файла не больше предела или причина, почему его нет."""
    try:
        info = path.lstat()
        if stat.S_ISLNK(info.st_mode):
            return LINK, b""
        if not stat.S_ISREG(info.st_mode):
            return "это не обычный файл — не открыт", b""
        if info.st_size > limits.notebook_bytes:
            return _too_big(limits), b""
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):  # подменили после lstat
                return "это не обычный файл — не открыт", b""
            data = fh.read(limits.notebook_bytes + 1)
    except OSError as error:
        return f"файл не читается ({error.strerror or error}) — не открыт", b""
    if len(data) > limits.notebook_bytes:
        return _too_big(limits), b""
    return None, data


class BrokenArchive(ValueError):
    """Архив целиком не открывается (не zip, обрезан); текст — русское объяснение."""


#: Бит «зашифровано» в флагах записи zip.
_ENCRYPTED = 0x1


def from_zip(
    archive: Path, limits: UploadLimits | None = None
) -> tuple[list[Upload], list[Problem]]:
    """Тетрадки из архива LMS; пути наружу, ссылки, битые и огромные файлы — в проблемы.

    Имена записей читаются в кодировке, которой их записал архиватор (:func:`zip_names`).
    Запись, которую не удаётся распаковать (неверная CRC, испорченные сжатые данные,
    шифрование), — строка проблем, остальные читаются. Каждая тетрадка после предела
    всего архива — тоже своя строка. Не открывается сам архив — :class:`BrokenArchive`.
    ``limits`` — пределы чтения (по умолчанию — из настроек).
    """
    limits = _limits(limits)
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
            if info.file_size > limits.notebook_bytes:
                problems.append(Problem("?", "?", name, _too_big(limits)))
                continue
            if total + info.file_size > limits.archive_bytes:
                total = limits.archive_bytes + 1  # и все следующие: порядок — как в архиве
                problems.append(Problem("?", "?", name, _over_total("архив", limits)))
                continue
            if info.flag_bits & _ENCRYPTED:
                problems.append(
                    Problem(
                        "?", "?", name, "файл зашифрован паролем — не открыт; сдайте без пароля"
                    )
                )
                continue
            problem, data = _unpack(zf, info, limits)
            if problem is not None:
                problems.append(Problem("?", "?", name, problem))
                continue
            total += len(data)
            uploads.append(Upload(tuple(pure.parts), data))
    return uploads, problems


def _unpack(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo, limits: UploadLimits
) -> tuple[str | None, bytes]:
    """Распакованная запись не больше предела или причина, почему её нет."""
    try:
        with zf.open(info) as fh:
            data = fh.read(limits.notebook_bytes + 1)
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
    if len(data) > limits.notebook_bytes:
        return _too_big(limits), b""
    return None, data

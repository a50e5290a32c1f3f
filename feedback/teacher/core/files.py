"""Файлы преподавателя пишутся целиком или никак: временный файл рядом, затем переименование.

Таблицы, отчёты и снимки баллов — то, что преподаватель хранит весь семестр, и то, из чего
следующий запуск собирает свои таблицы (строки прежних архивов, номера участников Moodle).
Запись на месте, оборванная посередине (``kill -9``, выключили машину, кончилось место),
оставила бы половину файла, и следующий запуск принял бы её за всё, что было. Поэтому каждый
файл сначала пишется во временный в той же папке (та же файловая система — переименование
атомарно), сбрасывается на диск (``fsync``) и только потом заменяет прежний (``os.replace``).
Оборванная запись оставляет прежний файл целым и временный файл с приметным именем, который
убирает следующий запуск (:func:`remove_leftovers`).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

#: Примета временного файла записи: ``.<имя>.<случайное>.course7-tmp``.
TEMP_SUFFIX = ".course7-tmp"


def _read_umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


#: umask процесса, прочитанный один раз при импорте (его чтение меняет umask на миг, а
#: оценивание многопоточно).
_UMASK = _read_umask()


@contextlib.contextmanager
def replacing(path: Path, mode: str = "w", permissions: int = 0o644, **open_args) -> Iterator[IO]:
    """Открытый временный файл рядом с ``path``; после блока он заменит ``path`` целиком.

    Исключение внутри блока оставляет прежний ``path`` как был, а временный файл удаляется.
    ``permissions`` — права нового файла (с учётом umask); временный файл до замены виден
    только владельцу.
    """
    path = Path(path)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TEMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(handle, mode, **open_args) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(temp, permissions & ~_UMASK)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _sync_folder(path.parent)


def write_text(
    path: Path,
    text: str,
    encoding: str = "utf-8",
    errors: str = "strict",
    permissions: int = 0o644,
) -> Path:
    """Текст в файл атомарно (см. модуль)."""
    with replacing(path, "w", permissions, encoding=encoding, errors=errors, newline="") as fh:
        fh.write(text)
    return Path(path)


def write_bytes(path: Path, data: bytes) -> Path:
    """Байты в файл атомарно (см. модуль)."""
    with replacing(path, "wb") as fh:
        fh.write(data)
    return Path(path)


def remove_leftovers(folder: Path) -> list[Path]:
    """Убирает временные файлы оборванных записей в папке и её подпапках; возвращает их."""
    removed = []
    for leftover in Path(folder).rglob(f"*{TEMP_SUFFIX}"):
        with contextlib.suppress(OSError):
            leftover.unlink()
            removed.append(leftover)
    return removed


def _sync_folder(folder: Path) -> None:
    """Переименование — на диске: запись в папке сбрасывается тоже (где это возможно)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

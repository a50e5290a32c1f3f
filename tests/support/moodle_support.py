"""Moodle в тестах: архив «Скачать все ответы» и то, как Moodle читает архив отзывов.

:func:`feedback_import` повторяет импорт «Загрузить несколько файлов с отзывами в ZIP» из
исходников Moodle (mod/assign/feedback/file/importziplib.php,
``assignfeedback_file_zip_importer::is_valid_filename_for_import`` и ``import_zip_files``),
чтобы тест проверял архив курса чужим правилом, а не правилом, по которому его собирали.
"""

from __future__ import annotations

import json
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

#: Модули задания Moodle, которые знает ``get_plugin_by_type`` (тип → имена).
PLUGINS = {
    "assignsubmission": {"file", "onlinetext", "comments"},
    "assignfeedback": {"file", "comments", "editpdf", "offline"},
}
#: PHP ``is_numeric`` для строки: пробелы впереди, знак, дробь, экспонента.
_NUMERIC = re.compile(r"^[ \t\n\r\v\f]*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?[ \t\n\r\v\f]*$")
_UTF8_FLAG = 0x800


def download_zip(path: Path, lab: str, works: dict[str, dict]) -> Path:
    """Архив «Скачать все ответы»: папка на участника, в ней тетрадка (имена — в UTF-8)."""
    with zipfile.ZipFile(path, "w") as zf:
        for folder, nb in works.items():
            zf.writestr(f"{folder}/{lab}.ipynb", json.dumps(nb, ensure_ascii=False))
    return path


@dataclass(frozen=True)
class Imported:
    """Файл отзыва, который Moodle отдал бы участнику: номер, путь файла, содержимое."""

    participant: int
    folder: str
    filename: str
    data: bytes


def _participant(pathname: str, participants: set[int]) -> tuple[int, str, str] | None:
    """``is_valid_filename_for_import``: номер участника, папка и имя файла после неё."""
    parts = pathname.split("/")
    while parts:
        part = parts.pop(0)
        info = part.split("_", 4)  # PHP explode('_', $pathpart, 5)
        if len(info) < 4 or not _NUMERIC.match(info[1]):
            continue
        number = float(info[1])
        if number != int(number) or int(number) not in participants:
            continue
        if info[3] not in PLUGINS.get(info[2], set()):
            continue
        rest = info[4] if len(info) == 5 else ""
        return int(number), part, "/".join([rest, *parts])
    return None


def feedback_import(archive: Path, participants: set[int]) -> tuple[list[Imported], list[str]]:
    """Что Moodle сделал бы с архивом отзывов: файлы участников и пропущенные имена.

    Имя записи без флага UTF-8 Moodle перекодирует из старой кодировки сайта, и кириллица
    не доходит: такая запись считается пропущенной.
    """
    imported, skipped = [], []
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            name = info.filename
            basename = name.rstrip("/").rpartition("/")[2]
            if info.is_dir() or basename.startswith((".", "~")):
                continue
            if not name.isascii() and not info.flag_bits & _UTF8_FLAG:
                skipped.append(name)
                continue
            found = _participant(name, participants)
            if found is None:
                skipped.append(name)
                continue
            number, folder, filename = found
            imported.append(Imported(number, folder, filename, zf.read(info)))
    return imported, skipped

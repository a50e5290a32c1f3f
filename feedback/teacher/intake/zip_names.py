"""Имена записей zip-архива в той кодировке, которой их записал архиватор.

Стандарт zip без флага UTF-8 велит читать имена как cp437, но кириллицу так не пишет ни один
архиватор: Проводник Windows пишет cp866, другие программы — cp1251, Info-ZIP и macOS — UTF-8.
Имя папки — это имя учащегося, поэтому прочитать его нужно так, как его видел он (иначе
«Иванов» стал бы знаками рамок и не нашёлся в списке учащихся). Отдельно от чтения архива
(:mod:`feedback.teacher.intake.archives`): здесь только байты имён и выбор кодировки.
"""

from __future__ import annotations

import re
import struct
import zipfile
import zlib
from collections.abc import Iterable

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

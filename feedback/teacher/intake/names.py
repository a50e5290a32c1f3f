"""Имена учащихся, как их пишут люди и Moodle: одно правило для сбора работ и списка учащихся.

Сбор работ (:mod:`feedback.teacher.intake.uploads`) и сопоставление со списком
(:mod:`feedback.teacher.intake.roster`) сравнивают и превращают в id одни и те же имена папок,
поэтому правила здесь, в одном месте: :func:`name_key` (как сравнивать), :func:`student_id`
(что годится в id), :func:`parse_lms_name` (что в имени папки Moodle) и :func:`by_name`
(чья работа без списка учащихся).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

_UNSAFE = re.compile(r"[^\w.\-]+")
_SEPARATORS = re.compile(r"[\s_\-\u2010-\u2015]+")

#: Папка или начало имени файла из архива Moodle: имя, номер участника, «assignsubmission».
MOODLE_FOLDER = re.compile(
    r"^(?P<name>.*?)[\s_]*(?P<participant>\d+)_assignsubmission_[A-Za-z0-9]+_?$"
)
#: Так Moodle называет учащегося при анонимной проверке.
BLIND = {"участник", "participant"}
#: Длина id: в базе nbgrader id учащегося — до 128 символов.
MAX_ID = 120


def clean_name(name: str) -> str:
    """Имя папки или файла для путей, id и CSV: UTF-8 без суррогатов и в форме NFC.

    Байты имени, которые не UTF-8 (``os`` отдаёт их суррогатами), заменяются на «�»;
    одно и то же имя, набранное составными и разложенными буквами, совпадает.
    """
    name = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return unicodedata.normalize("NFC", name)


def student_id(text: str) -> str:
    """Имя учащегося, пригодное для папок и CSV: буквы, цифры, «.», «-», «_» (в форме NFC)."""
    return _UNSAFE.sub("_", clean_name(text).strip()).strip("._-")[:MAX_ID]


def name_key(text: str) -> str:
    """Имя для сравнения: NFC, без регистра, «ё» = «е», разделители — один пробел."""
    text = unicodedata.normalize("NFC", text).casefold().replace("ё", "е")
    return _SEPARATORS.sub(" ", text).strip()


@dataclass(frozen=True)
class LmsName:
    """Разобранное имя папки Moodle."""

    name: str
    participant: str
    blind: bool


def parse_lms_name(text: str) -> LmsName | None:
    """``Иванов Иван_123_assignsubmission_file_`` → имя, номер 123; иначе ``None``."""
    match = MOODLE_FOLDER.match(unicodedata.normalize("NFC", text.strip()))
    if not match:
        return None
    name = match["name"]
    return LmsName(name, str(int(match["participant"])), name_key(name) in BLIND)


@dataclass(frozen=True)
class Match:
    """Чья работа: id (или ``None``), номер участника LMS и, если id нет, — что сделать.

    ``by_name`` — id взят из имени в папке Moodle (:func:`by_name`), а не из списка
    учащихся или файла участников: два участника одного задания с одним именем получат
    тогда одно id, и сбор работ разводит их (:func:`feedback.teacher.intake.uploads.route`).
    """

    student: str | None
    participant: str | None = None
    problem: str | None = None
    by_name: bool = False


def by_name(text: str) -> Match:
    """Чья работа без списка учащихся: имя из папки Moodle, иначе папка целиком.

    У одного человека в каждом задании Moodle свой номер участника, а имя — одно, поэтому
    id — имя (``Иванов Иван_301_assignsubmission_file_`` в 7.2 и ``Иванов Иван_7_…`` в 7.4 —
    оба ``иванов_иван``), приведённое так же, как список учащихся сравнивает имена
    (:func:`name_key`: регистр, «ё», разделители); номер остаётся в :class:`Match` и дальше
    в lms_ids.csv. Анонимная папка (``Участник_7_…``) имени не даёт: её id — папка целиком,
    как и у всего, что не похоже на папку Moodle (``ivanov``, ``ivanov_1234``).
    """
    lms = parse_lms_name(text)
    if lms and not lms.blind:
        named = student_id(name_key(lms.name))
        if named:
            return Match(named, lms.participant, by_name=True)
    return Match(student_id(text) or None, lms.participant if lms else None)


#: Между именем и номером участника в id тёзки. id по имени (:func:`by_name`) дефиса не
#: содержит никогда — :func:`name_key` делает из него пробел, а :func:`student_id` пробел
#: делает «_», — поэтому ``иванов_иван-301`` не получить ни из какого имени: учащаяся,
#: назвавшаяся в Moodle «Иванов Иван 301», получит ``иванов_иван_301``, а не id тёзки.
APART = "-"


def exact_key(text: str) -> str:
    """Имя для точного сравнения: NFC и разделители — один пробел, но регистр и «ё» — как есть.

    Им список учащихся различает людей, чьи имена совпадают по :func:`name_key` (Алёна и
    Алена).
    """
    return _SEPARATORS.sub(" ", unicodedata.normalize("NFC", text)).strip()


def apart(student: str, participant: str) -> str:
    """id одного из тёзок в задании: имя, дефис и номер участника (``иванов_иван-301``).

    Номер отделён знаком, которого нет ни в одном id по имени (:data:`APART`): никакое имя
    не даст id тёзки.
    """
    suffix = f"{APART}{participant}"
    return student[: MAX_ID - len(suffix)] + suffix

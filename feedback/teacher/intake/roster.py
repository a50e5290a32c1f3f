"""Список учащихся и чья это работа из LMS: одно id на человека на весь семестр.

Список — ``students.csv`` в формате импорта nbgrader (``id,first_name,last_name,email``;
можно и ``lms_user_id``). ``make grade ROSTER=путь`` кладёт его копию в рабочую папку, и
дальше он берётся оттуда сам; в базу оценок его заносит
:func:`feedback.teacher.records.gradebook.import_students` — так же, как ``nbgrader db student
import`` (``Gradebook.update_or_create_student``).

Архив Moodle «Скачать все ответы» называет папки ``<Полное имя>_<N>_assignsubmission_file_``:
N — номер участника в этом задании, у одного человека в каждой лабораторной свой. Папка
сопоставляется со списком по имени (:func:`name_key`: NFC, без регистра, «ё» = «е», пробелы,
«_» и «-» подряд — один пробел; и «Имя Фамилия», и «Фамилия Имя»); если так совпали двое
(«Алёна» и «Алена» в одном списке), решает точное написание (:func:`exact_key`), а N запоминается в
``lms_ids.csv`` (учащийся, лабораторная, номер): по нему ``make export`` заполняет
ведомость Moodle.

При анонимной проверке папка — ``Участник_<N>_…`` (``Participant_<N>_…``): имени нет, и чья
это работа, говорит только файл преподавателя ``participants_<лаб>.csv`` в рабочей папке:
строки ``participant,student_id`` или ведомость оценок Moodle, скачанная после раскрытия
имён (сопоставляется по почте, затем по имени). Тот же файл решает и неоднозначные имена.
Ничего не угадывается: неизвестное имя, два человека с одним именем, анонимная работа без
файла — строка problems.csv о том, что добавить, и работа не оценивается под выдуманным id.
Без списка учащихся id — имя из папки Moodle, приведённое как для сравнения
(:func:`feedback.teacher.intake.names.by_name`: ``Иванов Иван_301_…`` → ``иванов_иван`` в каждой
лабораторной), номер N запоминается и тогда; два участника одного задания с одним именем
получают id с номером через дефис (``иванов_иван-301``) и строку problems.csv.
"""

from __future__ import annotations

import csv
import io
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from feedback.teacher.core import files
from feedback.teacher.core.tables import LmsIdRow, read_rows, write_rows
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.intake.names import (  # BLIND, MOODLE_FOLDER — для тех, кто брал их отсюда
    BLIND,  # noqa: F401
    MOODLE_FOLDER,  # noqa: F401
    LmsName,
    Match,
    by_name,
    exact_key,
    name_key,
    parse_lms_name,
    student_id,
)

#: Столбцы ведомости оценок Moodle в русском и английском интерфейсе.
IDENTIFIER = ("Идентификатор", "Identifier")
FULL_NAME = ("Полное имя", "Full name")
EMAIL = ("Адрес электронной почты", "Email address")

#: id учащегося: начинается с буквы или цифры (ячейка CSV не станет формулой), дальше
#: буквы, цифры, «.», «_», «-» и «@» (почта годится в id).
_ID = re.compile(r"^\w[\w.@-]*$")
_NUMBER_AT_END = re.compile(r"(\d+)\s*$")


def valid_id(text: str) -> bool:
    """Годится ли ``text`` в id учащегося (и в имя папки): буквы, цифры, «.», «_», «-», «@»."""
    return _ID.fullmatch(text) is not None


class RosterError(ValueError):
    """Список учащихся или файл участников не читается; текст — что исправить."""


@dataclass(frozen=True)
class Person:
    """Строка списка: id и все столбцы как есть (в базу идут те, что знает nbgrader)."""

    id: str
    first_name: str
    last_name: str
    email: str
    fields: Mapping[str, str] = field(default_factory=dict)

    @property
    def names(self) -> set[str]:
        return {f"{self.first_name} {self.last_name}", f"{self.last_name} {self.first_name}"}

    @property
    def keys(self) -> set[str]:
        return {key for key in map(name_key, self.names) if key}

    @property
    def exact_keys(self) -> set[str]:
        return {key for key in map(exact_key, self.names) if key}


@dataclass
class Roster:
    """Список учащихся: по id и по имени (:func:`name_key`)."""

    path: Path
    people: dict[str, Person]
    by_name: dict[str, list[str]] = field(default_factory=dict)
    by_email: dict[str, list[str]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for person in self.people.values():
            for key in person.keys:
                self.by_name.setdefault(key, []).append(person.id)
            if person.email:
                self.by_email.setdefault(person.email.casefold(), []).append(person.id)

    def find(self, name: str) -> list[str]:
        """id людей с этим именем; из совпавших по :func:`name_key` — тот, чьё имя написано
        точно так же, если такой один (в списке и «Алёна», и «Алена»: каждая — своя)."""
        found = sorted(set(self.by_name.get(name_key(name), [])))
        if len(found) > 1:
            key = exact_key(name)
            exact = [person for person in found if key in self.people[person].exact_keys]
            if len(exact) == 1:
                return exact
        return found


def _read_text(path: Path, what: str) -> str:
    try:
        return path.read_bytes().decode("utf-8-sig")
    except OSError as error:
        raise RosterError(f"{what} {path} не читается ({error.strerror or error})") from None
    except UnicodeDecodeError:
        raise RosterError(
            f"{what} {path} не в кодировке UTF-8 — сохраните его как «CSV UTF-8»"
        ) from None


def _delimiter(text: str) -> str:
    """Разделитель по строке заголовка: запятая, точка с запятой (Excel) или табуляция."""
    first = text.splitlines()[0] if text else ""
    return max((",", ";", "\t"), key=first.count)


def load_roster(path: Path) -> Roster:
    """Читает ``students.csv``; ошибка — :class:`RosterError` с номером строки."""
    text = _read_text(path, "список учащихся")
    reader = csv.DictReader(io.StringIO(text), delimiter=_delimiter(text))
    reader.fieldnames = [name.strip() for name in reader.fieldnames or []]
    if "id" not in reader.fieldnames:
        raise RosterError(
            f"в списке учащихся {path} нет столбца id: первая строка должна быть "
            "«id,first_name,last_name,email» (формат nbgrader db student import)"
        )
    people: dict[str, Person] = {}
    for row in reader:
        values = {
            key: unicodedata.normalize("NFC", (value or "").strip())
            for key, value in row.items()
            if key
        }
        if not any(values.values()):
            continue
        where = f"список учащихся {path}, строка {reader.line_num}"
        person_id = values["id"]
        if not person_id:
            raise RosterError(f"{where}: пустой id")
        if not _ID.match(person_id):
            raise RosterError(
                f"{where}: id «{person_id}» не годится в имя папки — оставьте буквы, цифры, "
                "«.», «_», «-», «@», и первым — букву или цифру"
            )
        if person_id in people:
            raise RosterError(f"{where}: id «{person_id}» уже есть выше — id не повторяются")
        people[person_id] = Person(
            person_id,
            values.get("first_name", ""),
            values.get("last_name", ""),
            values.get("email", ""),
            values,
        )
    return Roster(path, people)


def prepare_roster(workspace: Workspace, given: Path | None = None) -> Roster | None:
    """Список для этого запуска: ``given`` (копируется в рабочую папку) или уже лежащий там."""
    target = workspace.roster
    if given is not None:
        if not given.is_file():
            raise RosterError(f"список учащихся {given} не найден")
        load_roster(given)  # сначала проверить, потом заменить прежний
        if given.resolve() != target.resolve():
            files.write_bytes(target, given.read_bytes())
    return load_roster(target) if target.is_file() else None


# --------------------------------------------------------------------------- номера участников


def participant_number(text: str) -> str | None:
    """Номер участника из ячейки «Участник 123», «Participant 123» или «123»."""
    match = _NUMBER_AT_END.search(text or "")
    return str(int(match[1])) if match else None


def _mapping_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    text = _read_text(path, "файл участников")
    rows = [row for row in csv.reader(io.StringIO(text), delimiter=_delimiter(text)) if row]
    if not rows:
        raise RosterError(f"файл участников {path} пуст")
    return [cell.strip() for cell in rows[0]], rows[1:]


def _column(header: list[str], names: Iterable[str]) -> int | None:
    return next((header.index(name) for name in names if name in header), None)


def load_mapping(path: Path, roster: Roster | None) -> dict[str, str]:
    """``participants_<лаб>.csv``: номер участника → id учащегося.

    Два вида файла: ``participant,student_id`` (номер можно писать и как «Участник 123») или
    ведомость оценок Moodle с именами — тогда id ищется в списке по почте, затем по имени;
    строки, которых в списке нет или которые совпали с двумя людьми, пропускаются.
    """
    header, rows = _mapping_rows(path)
    pairs: list[tuple[int, str, str]] = []
    if "participant" in header and "student_id" in header:
        at, to = header.index("participant"), header.index("student_id")
        for line, row in enumerate(rows, start=2):
            cells = [*row, "", ""]
            number, person = participant_number(cells[at]), cells[to].strip()
            if not number or not person:
                raise RosterError(
                    f"файл участников {path}, строка {line}: нужны номер участника и id "
                    "учащегося, например «123,ivanov»"
                )
            pairs.append((line, number, unicodedata.normalize("NFC", person)))
    elif (identifier := _column(header, IDENTIFIER)) is not None:
        if roster is None:
            raise RosterError(
                f"{path} — ведомость Moodle: чтобы узнать по ней id, нужен список учащихся "
                f"({Workspace.ROSTER}, make grade ROSTER=путь)"
            )
        name, email = _column(header, FULL_NAME), _column(header, EMAIL)
        for line, row in enumerate(rows, start=2):
            cells = [*row, *[""] * len(header)]
            number = participant_number(cells[identifier])
            found = (
                roster.by_email.get(cells[email].strip().casefold(), [])
                if email is not None
                else []
            )
            if not found and name is not None:
                found = roster.find(cells[name])
            if number and len(set(found)) == 1:
                pairs.append((line, number, found[0]))
    else:
        raise RosterError(
            f"файл участников {path}: первая строка должна быть «participant,student_id» "
            "или заголовком ведомости оценок Moodle"
        )
    mapping: dict[str, str] = {}
    for line, number, person in pairs:
        where = f"файл участников {path}, строка {line}"
        if roster is not None and person not in roster.people:
            raise RosterError(f"{where}: id «{person}» нет в списке учащихся {roster.path}")
        if not _ID.match(person):
            raise RosterError(f"{where}: id «{person}» не годится в имя папки")
        if mapping.get(number, person) != person:
            raise RosterError(f"{where}: участник {number} уже отдан учащемуся «{mapping[number]}»")
        mapping[number] = person
    return mapping


def read_participants(workspace: Workspace) -> dict[tuple[str, str], str]:
    """``lms_ids.csv``: (id учащегося, лабораторная) → номер участника в этой лабораторной."""
    return {
        (row.student_id, row.lab): row.lms_participant
        for row in read_rows(workspace.table(LmsIdRow), LmsIdRow)
        if row.student_id and row.lab and row.lms_participant
    }


def save_participants(workspace: Workspace, seen: Mapping[tuple[str, str], str]) -> None:
    """Дописывает номера этого запуска к ``lms_ids.csv`` (прежние лабораторные остаются)."""
    if not seen and not workspace.table(LmsIdRow).is_file():
        return
    merged = {**read_participants(workspace), **seen}
    write_rows(
        workspace.table(LmsIdRow),
        LmsIdRow,
        [LmsIdRow(student, lab, number) for (student, lab), number in sorted(merged.items())],
    )


# --------------------------------------------------------------------------- сопоставление


class Matcher:
    """Сопоставляет владельца работы (имя папки или начало имени файла) с id учащегося.

    ``seen`` — номера участников, узнанные в этом запуске: (id, лабораторная) → номер.
    """

    def __init__(
        self,
        roster: Roster | None = None,
        mappings: Mapping[str, Mapping[str, str]] | None = None,
        workspace: Workspace | None = None,
    ) -> None:
        self.roster = roster
        self.mappings = dict(mappings or {})
        self.workspace = workspace or Workspace(Path("."))
        self.seen: dict[tuple[str, str], str] = {}

    @classmethod
    def from_workspace(
        cls, workspace: Workspace, roster: Roster | None, labs: Iterable[str]
    ) -> Matcher:
        """Сопоставление с файлами участников ``labs``, которые лежат в рабочей папке."""
        mappings = {}
        for lab in labs:
            path = workspace.participants(lab)
            if path.is_file():
                mappings[lab] = load_mapping(path, roster)
        return cls(roster, mappings, workspace)

    def identify(self, text: str, lab: str | None) -> Match:
        lms = parse_lms_name(text)
        number = lms.participant if lms else None
        student = self.mappings.get(lab or "", {}).get(number or "")
        named = False
        if student is None and self.roster is None:
            found = by_name(text)
            student, named = found.student, found.by_name
        elif student is None:
            student, problem = self._from_roster(text, lms, lab)
            if student is None:
                return Match(None, number, problem)
        if student is None:
            return Match(None, number, "не удалось понять, чья это работа")
        if lab and number:
            self.seen[(student, lab)] = number
        return Match(student, number, by_name=named)

    def _mapping_hint(self, lab: str | None, number: str) -> str:
        path = self.workspace.participants(lab or "<лабораторная>")
        return f"добавьте в {path} строку «{number},<id учащегося>»"

    def _from_roster(
        self, text: str, lms: LmsName | None, lab: str | None
    ) -> tuple[str | None, str | None]:
        assert self.roster is not None
        roster = self.roster
        for candidate in (text.strip(), student_id(text)):
            if candidate in roster.people:
                return candidate, None
        if lms and lms.blind:
            return None, (
                f"анонимная работа (участник {lms.participant}): чья она, знает только Moodle — "
                f"{self._mapping_hint(lab, lms.participant)} (первая строка файла — "
                "«participant,student_id») или положите туда ведомость оценок Moodle, "
                "скачанную после раскрытия имён; затем оцените заново"
            )
        name = (lms.name if lms else text).strip()
        ids = roster.find(name)
        if len(ids) == 1:
            return ids[0], None
        if ids:
            how = (
                self._mapping_hint(lab, lms.participant) if lms else "назовите папку работы его id"
            )
            return None, (
                f"в списке учащихся {roster.path} несколько человек с именем «{name}» "
                f"({', '.join(ids)}) — чей это ответ, не угадывается: {how} и оцените заново"
            )
        other = (
            f"; если он в списке под другим именем — {self._mapping_hint(lab, lms.participant)}"
            if lms
            else ""
        )
        return None, (
            f"«{name}» нет в списке учащихся {roster.path}: добавьте туда строку "
            f"«<id>,<имя>,<фамилия>,<почта>»{other}; затем оцените заново"
        )

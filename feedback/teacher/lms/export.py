"""Оценки для LMS: ``make export`` (и ``make export WORKSHEET=ведомость.csv LAB=…``).

1. ``export/moodle_grades.csv`` — для Moodle «Импорт оценок → CSV-файл»: строка на каждого
   учащегося из списка (students.csv; без списка — из базы оценок), столбцы ``email``,
   ``id``, ``first_name``, ``last_name`` и по два на лабораторную: баллы (заголовок —
   название лабораторной) и короткий отзыв. Пусто, а не 0, если работа не сдана или ещё
   ждёт ручной проверки. UTF-8 без BOM (кодировка Moodle по умолчанию), запятая,
   десятичная точка. Всё пишет :func:`feedback.teacher.core.tables.write_csv`.
2. Ведомость оценок задания Moodle («Скачать таблицу оценок»), заполненная на месте:
   ``export/<лаб>_worksheet.csv``. Меняются только ячейки «Оценка» и «Отзыв в виде
   комментария» в строках участников, чьи номера этой лабораторной записаны в lms_ids.csv;
   остальные байты файла — те же (разделитель, кавычки, концы строк), файл преподавателя не
   переписывается. Десятичный разделитель — тот, что уже стоит в ведомости.
3. Отчёты для учащихся: ``export/<лаб>_feedback_files.zip`` — для Moodle «Загрузить несколько
   файлов с отзывами в ZIP» (:mod:`feedback.teacher.lms.handback`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from feedback.formatting import plural
from feedback.teacher.core import files
from feedback.teacher.core.labs import UnknownLab
from feedback.teacher.core.settings import Settings
from feedback.teacher.core.tables import safe_cell, write_csv
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.intake import roster
from feedback.teacher.records import gradebook

#: Столбцы ведомости оценок Moodle, которые заполняются (русский и английский интерфейс).
GRADE = ("Оценка", "Grade")
FEEDBACK = ("Отзыв в виде комментария", "Feedback comments")
MAX_GRADE = ("Максимальная оценка", "Maximum Grade", "Maximum grade")
CHANGEABLE = ("Оценка может быть изменена", "Grade can be changed")
UNCHANGEABLE = {"нет", "no"}

_DECIMAL = re.compile(r"^\s*-?\d+([.,])(\d+)\s*$")


class ExportError(ValueError):
    """Выгрузку сделать нельзя: что-то не так с ведомостью или лабораторной."""


# --------------------------------------------------------------------------- что выгружать


def number(value: float, decimal: str = ".", decimals: int | None = None) -> str:
    """Число для LMS: без экспоненты, до двух знаков после разделителя (или ровно ``decimals``)."""
    if decimals is None:
        text = f"{round(value, 2):.2f}".rstrip("0").rstrip(".")
    else:
        text = f"{value:.{decimals}f}"
    return text.replace(".", decimal)


def points(value: float) -> str:
    return plural(value, "балл", "балла", "баллов")


def comment(result: gradebook.LabResult | None, lab: str, title: str) -> str:
    """Короткий отзыв для LMS: баллы и имя отчёта или что ещё ждёт преподавателя."""
    if result is None:
        return ""
    total = number(result.max_score)
    if not result.complete:
        waiting = []
        if result.pending_points:
            waiting.append(f"ручной проверки — ещё {points(result.pending_points)} из {total}")
        if result.flagged_points:
            waiting.append(
                f"просмотра преподавателем — проверки на {points(result.flagged_points)}"
            )
        return f"{title}: ждёт {', и '.join(waiting)}; пока {points(result.score)}."
    return f"{title}: {points(result.score)} из {total}. Подробный отчёт — файл {lab}.html."


def final_score(result: gradebook.LabResult | None) -> float | None:
    """Оценка для LMS: итог сданной и целиком проверенной работы, иначе ``None`` (пусто)."""
    if result is None or not result.complete:
        return None
    return result.score


def _people(workspace: Workspace) -> tuple[list[roster.Person], list[str]]:
    """Кому писать строки: список учащихся (или база) и id из базы, которых нет в списке."""
    known = [
        roster.Person(student, first or "", last or "", email or "")
        for student, (last, first, email) in gradebook.students(workspace).items()
    ]
    path = workspace.roster
    if not path.is_file():
        return sorted(known, key=lambda p: p.id), []
    people = roster.load_roster(path).people
    return list(people.values()), sorted(p.id for p in known if p.id not in people)


def moodle_grades(settings: Settings) -> tuple[Path, list[str]]:
    """``export/moodle_grades.csv``; возвращает путь и id из базы, которых нет в списке.

    Столбцы — лабораторные курса (:attr:`Settings.labs`) по порядку, под их названиями.
    """
    workspace = settings.workspace
    results = gradebook.results(workspace)
    people, strangers = _people(workspace)
    header = ["email", "id", "first_name", "last_name"]
    for lab in settings.labs:
        header += [lab.title, f"{lab.title} — отзыв"]
    rows = []
    for person in people:
        row = [person.email, person.id, person.first_name, person.last_name]
        for lab in settings.labs:
            result = results.get((person.id, lab.id))
            score = final_score(result)
            row += ["" if score is None else number(score), comment(result, lab.id, lab.title)]
        rows.append(row)
    target = workspace.moodle_grades
    target.parent.mkdir(parents=True, exist_ok=True)
    write_csv(target, header, rows)
    return target, strangers


# --------------------------------------------------------------------------- ведомость Moodle


@dataclass
class Cell:
    """Ячейка CSV как она записана (``raw``) и её значение."""

    raw: str
    value: str
    quoted: bool


@dataclass
class Record:
    cells: list[Cell]
    end: str  # конец строки как в файле: "\r\n", "\n", "\r" или "" в конце файла


def parse_records(text: str, delimiter: str) -> list[Record]:
    """Разбор CSV с сохранением записи каждой ячейки: склеенные обратно — тот же текст."""
    records: list[Record] = []
    cells: list[Cell] = []
    i, n = 0, len(text)
    stops = (delimiter, "\r", "\n")
    while not (i >= n and not cells):
        start = i
        quoted = i < n and text[i] == '"'
        parts = []
        if quoted:
            i += 1
            while True:
                j = text.find('"', i)
                if j == -1:
                    parts.append(text[i:])
                    i = n
                    break
                parts.append(text[i:j])
                if text.startswith('""', j):
                    parts.append('"')
                    i = j + 2
                    continue
                i = j + 1
                break
        k = i
        while k < n and text[k] not in stops:
            k += 1
        parts.append(text[i:k])
        i = k
        cells.append(Cell(text[start:i], "".join(parts), quoted))
        if i < n and text[i] == delimiter:
            i += 1
            continue
        if text.startswith("\r\n", i):
            end = "\r\n"
        else:
            end = text[i] if i < n else ""
        i += len(end)
        records.append(Record(cells, end))
        cells = []
    return records


def join_records(records: list[Record], delimiter: str) -> str:
    return "".join(delimiter.join(c.raw for c in r.cells) + r.end for r in records)


def set_cell(record: Record, index: int, value: str, delimiter: str) -> None:
    """Новое значение ячейки; в кавычках — если они были или без них нельзя."""
    value = str(safe_cell(value))
    while len(record.cells) <= index:
        record.cells.append(Cell("", "", False))
    cell = record.cells[index]
    # Как PHP fputcsv, которым Moodle пишет ведомость: в кавычках и всё, где есть пробел.
    needs = any(ch in value for ch in (delimiter, '"', "\r", "\n", " ", "\t"))
    raw = '"' + value.replace('"', '""') + '"' if cell.quoted or needs else value
    record.cells[index] = Cell(raw, value, cell.quoted or needs)


def _find(header: list[str], names: tuple[str, ...]) -> int | None:
    return next((header.index(name) for name in names if name in header), None)


def _decimal_style(values: list[str]) -> tuple[str, int | None]:
    """Десятичный разделитель и число знаков, которыми ведомость уже пишет оценки."""
    found = Counter()
    for value in values:
        match = _DECIMAL.match(value)
        if match:
            found[(match[1], len(match[2]))] += 1
    if not found:
        return ".", None
    return found.most_common(1)[0][0]


def _float(text: str) -> float | None:
    try:
        return float(text.strip().replace("\u00a0", "").replace(" ", "").replace(",", "."))
    except ValueError:
        return None


@dataclass
class Filled:
    """Что сделано с ведомостью."""

    path: Path
    lab: str
    filled: list[str]
    pending: list[str]
    locked: list[str]
    untouched: int = 0
    scaled: float | None = None


def _our_comment(existing: str, ours: str, title: str) -> str:
    """Отзыв: свой абзац заменяется, написанное преподавателем в Moodle остаётся."""
    kept = [
        line
        for line in existing.replace("\r\n", "\n").split("\n")
        if line.strip() and not line.startswith(f"{title}:")
    ]
    return "\n".join([*kept, ours])


def worksheet_lab(numbers: set[str], workspace: Workspace) -> str:
    """Лабораторная ведомости, когда её не назвали: чьи номера участников в ней (lms_ids.csv)."""
    known = roster.read_participants(workspace)
    overlap = Counter(name for (_, name), n in known.items() if n in numbers)
    best = overlap.most_common(2)
    if not best or (len(best) == 2 and best[0][1] == best[1][1]):
        raise ExportError(
            "не понять, какой лабораторной эта ведомость: укажите LAB=<id лабораторной>"
        )
    return best[0][0]


def fill_worksheet(settings: Settings, worksheet: Path, lab: str | None = None) -> Filled:
    """Заполняет копию ведомости Moodle оценками лабораторной (см. модуль).

    Лабораторная — ``lab`` (id или номер, :meth:`Settings.find_lab`) или, без неё, та, чьи
    номера участников стоят в ведомости (:func:`worksheet_lab`).
    """
    workspace = settings.workspace
    try:
        raw = worksheet.read_bytes()
    except OSError as error:
        raise ExportError(f"ведомость {worksheet} не читается ({error.strerror})") from None
    bom = raw.startswith(b"\xef\xbb\xbf")
    try:
        text = raw[3 if bom else 0 :].decode("utf-8")
    except UnicodeDecodeError:
        raise ExportError(
            f"ведомость {worksheet} не в UTF-8 — скачайте её из Moodle заново и не "
            "пересохраняйте в Excel"
        ) from None
    first_line = text.splitlines()[0] if text else ""
    delimiter = max((",", ";", "\t"), key=first_line.count)
    records = parse_records(text, delimiter)
    if not records:
        raise ExportError(f"ведомость {worksheet} пуста")
    header = [cell.value.strip() for cell in records[0].cells]
    identifier = _find(header, roster.IDENTIFIER)
    grade_at = _find(header, GRADE)
    if identifier is None or grade_at is None:
        raise ExportError(
            f"в {worksheet} нет столбцов «Идентификатор» и «Оценка» (Identifier, Grade) — "
            "это не ведомость оценок задания Moodle"
        )
    feedback_at = _find(header, FEEDBACK)
    max_at, changeable_at = _find(header, MAX_GRADE), _find(header, CHANGEABLE)
    rows = [r for r in records[1:] if any(cell.value.strip() for cell in r.cells)]

    def value(record: Record, index: int | None) -> str:
        if index is None or index >= len(record.cells):
            return ""
        return record.cells[index].value

    numbers = {n for r in rows if (n := roster.participant_number(value(r, identifier)))}
    try:
        found = settings.find_lab(lab or worksheet_lab(numbers, workspace))
    except UnknownLab as error:
        raise ExportError(str(error)) from None
    lab, title = found.id, found.title
    owners = {
        n: student
        for (student, name), n in roster.read_participants(workspace).items()
        if name == lab
    }
    results = gradebook.results(workspace)
    style = _decimal_style([value(r, i) for r in rows for i in (grade_at, max_at)])
    done = Filled(workspace.worksheet(lab), lab, [], [], [])
    if done.path.resolve() == worksheet.resolve():
        raise ExportError(f"ведомость {worksheet} лежит там, куда пишется заполненная копия")
    for record in rows:
        student = owners.get(roster.participant_number(value(record, identifier)) or "")
        result = results.get((student, lab)) if student else None
        if result is None:
            done.untouched += 1
            continue
        score = final_score(result)
        if score is None:
            done.pending.append(student)
            continue
        if value(record, changeable_at).strip().casefold() in UNCHANGEABLE:
            done.locked.append(student)
            continue
        top = _float(value(record, max_at)) if max_at is not None else None
        if top and result.max_score and abs(top - result.max_score) > 1e-9:
            score = score / result.max_score * top
            done.scaled = top
        set_cell(record, grade_at, number(score, *style), delimiter)
        if feedback_at is not None:
            ours = comment(result, lab, title)
            set_cell(
                record,
                feedback_at,
                _our_comment(value(record, feedback_at), ours, title),
                delimiter,
            )
        done.filled.append(student)
    done.path.parent.mkdir(parents=True, exist_ok=True)
    body = join_records(records, delimiter).encode("utf-8")
    files.write_bytes(done.path, (b"\xef\xbb\xbf" if bom else b"") + body)
    return done


# --------------------------------------------------------------------------- команда

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

import argparse
import re
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import nbformat

from feedback.formatting import plural
from feedback.teacher.core import files
from feedback.teacher.core.tables import safe_cell, write_csv
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.course.release import lab_sources
from feedback.teacher.intake import roster
from feedback.teacher.lms import handback
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


def lab_titles() -> dict[str, str]:
    """Лабораторные по порядку и их названия (первый заголовок тетрадки)."""
    titles = {}
    for source in lab_sources():
        lab = source.parent.name
        title = lab
        for cell in nbformat.read(source, as_version=4).cells:
            if cell.cell_type == "markdown" and cell.source.lstrip().startswith("# "):
                title = cell.source.lstrip()[2:].splitlines()[0].strip()
                break
        titles[lab] = title
    return titles


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


def _people(work: Path) -> tuple[list[roster.Person], list[str]]:
    """Кому писать строки: список учащихся (или база) и id из базы, которых нет в списке."""
    known = [
        roster.Person(student, first or "", last or "", email or "")
        for student, (last, first, email) in gradebook.students(Workspace(work)).items()
    ]
    path = work / roster.ROSTER
    if not path.is_file():
        return sorted(known, key=lambda p: p.id), []
    people = roster.load_roster(path).people
    return list(people.values()), sorted(p.id for p in known if p.id not in people)


def moodle_grades(work: Path) -> tuple[Path, list[str]]:
    """``export/moodle_grades.csv``; возвращает путь и id из базы, которых нет в списке."""
    titles = lab_titles()
    results = gradebook.results(Workspace(work))
    people, strangers = _people(work)
    header = ["email", "id", "first_name", "last_name"]
    for title in titles.values():
        header += [title, f"{title} — отзыв"]
    rows = []
    for person in people:
        row = [person.email, person.id, person.first_name, person.last_name]
        for lab, title in titles.items():
            result = results.get((person.id, lab))
            score = final_score(result)
            row += ["" if score is None else number(score), comment(result, lab, title)]
        rows.append(row)
    folder = work / "export"
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "moodle_grades.csv"
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


def resolve_lab(lab: str | None, numbers: set[str], work: Path) -> str:
    """Лабораторная по id, по номеру («7.2») или по номерам участников ведомости."""
    labs = list(lab_titles())
    if lab:
        wanted = lab.strip()
        dotted = [name for name in labs if name.startswith(f"lab_{wanted.replace('.', '_')}_")]
        if wanted in labs:
            return wanted
        if len(dotted) == 1:
            return dotted[0]
        raise ExportError(f"лабораторной «{lab}» нет; есть: {', '.join(labs)}")
    known = roster.read_participants(work)
    overlap = Counter(name for (_, name), n in known.items() if n in numbers)
    best = overlap.most_common(2)
    if not best or (len(best) == 2 and best[0][1] == best[1][1]):
        raise ExportError(
            "не понять, какой лабораторной эта ведомость: укажите LAB=<id лабораторной>"
        )
    return best[0][0]


def fill_worksheet(work: Path, worksheet: Path, lab: str | None = None) -> Filled:
    """Заполняет копию ведомости Moodle оценками лабораторной (см. модуль)."""
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
    lab = resolve_lab(lab, numbers, work)
    title = lab_titles()[lab]
    owners = {
        n: student for (student, name), n in roster.read_participants(work).items() if name == lab
    }
    results = gradebook.results(Workspace(work))
    style = _decimal_style([value(r, i) for r in rows for i in (grade_at, max_at)])
    folder = work / "export"
    done = Filled(folder / f"{lab}_worksheet.csv", lab, [], [], [])
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
    folder.mkdir(parents=True, exist_ok=True)
    body = join_records(records, delimiter).encode("utf-8")
    files.write_bytes(done.path, (b"\xef\xbb\xbf" if bom else b"") + body)
    return done


# --------------------------------------------------------------------------- команда


def _listed(ids: list[str]) -> str:
    shown = ", ".join(ids[:10])
    return shown + (f" и ещё {len(ids) - 10}" if len(ids) > 10 else "")


def main(argv: list[str] | None = None) -> int:
    from feedback.teacher.core.settings import Settings, work_dir
    from feedback.teacher.pages import analytics

    parser = argparse.ArgumentParser(description="Выгрузить оценки курса 7 для Moodle.")
    parser.add_argument(
        "--worksheet", type=Path, default=None, help="ведомость оценок задания из Moodle (CSV)"
    )
    parser.add_argument("--lab", default=None, help="лабораторная ведомости: id или номер (7.2)")
    args = parser.parse_args(argv)
    work = work_dir()
    if not (work / "gradebook.db").is_file():
        print(f"Выгружать нечего: в {work} нет базы оценок — сначала make grade.", file=sys.stderr)
        return 2
    try:
        grades, by_task = gradebook.export(Workspace(work))
        target, strangers = moodle_grades(work)
        filled = fill_worksheet(work, args.worksheet, args.lab) if args.worksheet else None
        handed = handback.build_all(work)
    except (ExportError, roster.RosterError) as error:
        print(f"Выгрузка не сделана: {error}", file=sys.stderr)
        return 2
    print(f"Оценки: {grades} и {by_task}")
    summary = analytics.refresh(Settings.from_env())  # оценки из базы — и сводка по ним же
    if summary is not None:
        print(f"Сводка для преподавателя: {summary}")
    print(f"Для Moodle «Импорт оценок → CSV-файл»: {target}")
    if strangers:
        print(
            f"В базе есть работы учащихся, которых нет в списке {work / roster.ROSTER}: "
            f"{_listed(strangers)} — в {target.name} их нет."
        )
    if filled is not None:
        print(f"Ведомость {filled.lab} для Moodle «Загрузить ведомость оценок»: {filled.path}")
        print(f"Оценки выставлены: {len(filled.filled)}.")
        if filled.scaled:
            print(
                f"Максимальная оценка в Moodle — {number(filled.scaled)}, не как у лабораторной: "
                "баллы пересчитаны пропорционально."
            )
        if filled.pending:
            print(f"Ждут ручной проверки (оценка не выставлена): {_listed(filled.pending)}.")
        if filled.locked:
            print(f"Оценку нельзя изменить в Moodle (не тронуты): {_listed(filled.locked)}.")
        if filled.untouched:
            print(f"Строк без оценённой работы этой лабораторной (не тронуты): {filled.untouched}.")
    _print_handback(handed, titles=lab_titles())
    return 0


def _print_handback(handed: list[handback.HandBack], titles: dict[str, str]) -> None:
    """Что сделано с архивами отзывов: куда загрузить, сколько отчётов, кого нет."""
    for done in handed:
        title = titles.get(done.lab, done.lab)
        if done.path is not None:
            reports = plural(len(done.folders), "отчёт", "отчёта", "отчётов")
            print(
                f"Отчёты «{title}» для Moodle «Загрузить несколько файлов с отзывами в ZIP»: "
                f"{done.path} ({reports})."
            )
        if done.no_participant:
            print(
                f"Нет номера участника Moodle в задании «{title}» (работа не из архива "
                f"«Скачать все ответы»), отчёт не в архиве: {_listed(done.no_participant)}."
            )
        if done.shared_number:
            print(
                f"Один номер участника Moodle у нескольких учащихся в задании «{title}» "
                f"(lms_ids.csv), их отчёты не в архиве: {_listed(done.shared_number)}."
            )


if __name__ == "__main__":
    sys.exit(main())

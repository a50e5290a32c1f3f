"""Таблицы класса после ``make grade``: problems.csv, needs_review.csv, cases.csv, timings.csv и
mistakes.csv.

Строки копятся по мере того, как родительский процесс сливает результаты единиц
(:meth:`ClassTables.add`), и пишутся в конце запуска (:func:`write`) вместе со строками
прежних запусков о работах, которые сейчас не оценивались: архивы лабораторных приходят по
одному за семестр, и таблица после архива 7.4 не теряет строк 7.2. Столбцы каждой таблицы —
её тип строки в :mod:`feedback.teacher.core.tables`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from feedback.teacher.core.results import UnitResult
from feedback.teacher.core.tables import (
    CaseRow,
    MistakeRow,
    Problem,
    ReviewRow,
    TimingRow,
    as_stored,
    cells,
    read_rows,
    write_rows,
)
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.intake.exchange import FILE_PREFIX as EXCHANGE_ROWS
from feedback.teacher.records.mistakes import mistake_rows

#: Работа — (учащийся, лабораторная).
Work = tuple[str, str]


@dataclass
class ClassTables:
    """Строки таблиц класса, которые дал этот запуск (по одному списку на таблицу)."""

    problems: list[Problem] = field(default_factory=list)
    review: list[ReviewRow] = field(default_factory=list)
    cases: list[CaseRow] = field(default_factory=list)
    timings: list[TimingRow] = field(default_factory=list)
    mistakes: list[MistakeRow] = field(default_factory=list)

    def add(self, result: UnitResult) -> None:
        """Строки о работе из результата единицы: проблемы, находки, случаи, время, ошибки."""
        student, lab = result.student, result.lab
        self.problems += [Problem(student, lab, result.file, text) for text in result.problems]
        self.review += [
            ReviewRow(student, lab, item.cell, item.line, item.code, item.reason)
            for item in result.review
        ]
        self.cases += [
            CaseRow.drawn(student, lab, grade_id, params)
            for grade_id, params in result.cases.items()
        ]
        self.timings.append(
            TimingRow.measured(
                student,
                lab,
                result.wall_seconds,
                result.execution_seconds,
                result.peak_memory,
                result.warm_kernel,
            )
        )
        self.mistakes += mistake_rows(result)

    @classmethod
    def read(cls, workspace: Workspace) -> ClassTables:
        """Таблицы класса, как они лежат в рабочей папке (сводка без ``make grade``)."""
        return cls(
            read_rows(workspace.table(Problem), Problem),
            read_rows(workspace.table(ReviewRow), ReviewRow),
            read_rows(workspace.table(CaseRow), CaseRow),
            read_rows(workspace.table(TimingRow), TimingRow),
            read_rows(workspace.table(MistakeRow), MistakeRow),
        )

    def touched(self) -> set[Work]:
        """Работы, о которых этот запуск что-то знает: оценённые и ставшие строками problems.csv."""
        works = {(row.student_id, row.lab) for row in self.timings}
        return works | {(problem.student, problem.lab) for problem in self.problems}


def write(workspace: Workspace, tables: ClassTables) -> ClassTables:
    """Пишет пять таблиц в рабочую папку: строки этого запуска и прежних (:func:`with_earlier`).

    Строки этого запуска идут по учащемуся и лабораторной (находки — ещё по ячейке и строке
    кода), строки вместе с прежними — по всем столбцам (:func:`natural`).

    Возвращает записанное — все строки таблиц такими, какими их прочитает
    :meth:`ClassTables.read` (:func:`feedback.teacher.core.tables.as_stored`): сводка после
    оценивания берёт их отсюда, а не перечитывает только что записанные файлы.
    """
    touched = tables.touched()
    ordered: list[tuple[type, list[Any]]] = [
        (Problem, sorted(tables.problems, key=lambda p: (p.student, p.lab, p.file, p.problem))),
        (ReviewRow, sorted(tables.review, key=lambda r: (r.student_id, r.lab, r.cell, r.line))),
        (CaseRow, sorted(tables.cases, key=lambda c: (c.student_id, c.lab, c.grade_id))),
        (TimingRow, sorted(tables.timings, key=lambda t: (t.student_id, t.lab))),
        (MistakeRow, sorted(tables.mistakes, key=cells)),
    ]
    written: dict[type, list[Any]] = {}
    for row_type, rows in ordered:
        path = workspace.table(row_type)
        merged = with_earlier(path, row_type, rows, touched)
        write_rows(path, row_type, merged)
        written[row_type] = as_stored(row_type, merged)
    return ClassTables(*(written[row_type] for row_type, _ in ordered))


def natural(row: Any) -> list[tuple[int, Any]]:
    """Ключ сортировки строк, прочитанных из CSV и посчитанных сейчас: числа — как числа."""
    key = []
    for cell in cells(row):
        text = "" if cell is None else str(cell)
        key.append((0, int(text)) if text.isdigit() else (1, text))
    return key


def with_earlier(path: Path, row_type: type, rows: list[Any], touched: set[Work]) -> list[Any]:
    """Строки этого запуска и строки прежних запусков о работах, которые сейчас не оценивались.

    Строка прежнего запуска уходит, если эта работа (учащийся, лабораторная — первые два
    столбца каждой из пяти таблиц) оценена сейчас или стала строкой problems.csv
    (``touched``); строка без учащегося («?») — если сейчас оценивалась её лабораторная; без
    лабораторной — всегда. Строки problems.csv о сдачах в exchange (их пишет и заменяет
    ``make collect``) остаются. Таблица с другими столбцами (прежней версии) не сливается.
    """
    earlier = read_rows(path, row_type, exact=True)
    labs = {lab for _, lab in touched}
    kept = []
    for row in earlier:
        student, lab = cells(row)[:2]
        if row_type is Problem and row.file.startswith(EXCHANGE_ROWS):
            kept.append(row)  # строки make collect: их заменяет только следующий make collect
        elif lab != "?" and (student, lab) not in touched and not (student == "?" and lab in labs):
            kept.append(row)
    return sorted(rows + kept, key=natural) if kept else rows

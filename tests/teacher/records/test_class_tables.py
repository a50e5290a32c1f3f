"""Таблицы класса: строки из результата единицы и слияние со строками прежних запусков."""

from __future__ import annotations

import csv

from nbformat.v4 import new_notebook

from feedback.settings import MIB
from feedback.teacher.core.results import Finding, TaskOutcome, UnitResult
from feedback.teacher.core.settings import Settings
from feedback.teacher.core.tables import CaseRow, MistakeRow, Problem, ReviewRow, TimingRow, header
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.pages import analytics
from feedback.teacher.records import class_tables
from feedback.teacher.records.class_tables import ClassTables

LAB2, LAB4 = "lab_7_2_training_flops", "lab_7_4_gpu_memory"


def result(student: str = "ivanov", lab: str = LAB2, **extra) -> UnitResult:
    tests = {
        "check_a": TaskOutcome(0.0, 2, passed=False, mistake="flops.forward_only", verdict="x"),
        "check_b": TaskOutcome(2, 2, passed=True),
    }
    return UnitResult(student, lab, new_notebook(), tests, file=f"{student}.ipynb", **extra)


def test_a_unit_result_becomes_one_row_per_thing_in_each_table():
    tables = ClassTables()
    tables.add(
        result(
            problems=["ячейка упала"],
            review=[Finding("In [3]", 2, "sys._getframe()", "внутренности проверки")],
            cases={"check_a": {"p": 1}},
            wall_seconds=3.04,
            execution_seconds=2.0,
            peak_memory=None,
            warm_kernel=True,
        )
    )
    assert tables.problems == [Problem("ivanov", LAB2, "ivanov.ipynb", "ячейка упала")]
    assert tables.review == [
        ReviewRow("ivanov", LAB2, "In [3]", 2, "sys._getframe()", "внутренности проверки")
    ]
    assert tables.cases == [CaseRow("ivanov", LAB2, "check_a", '{"p": 1}')]
    assert tables.timings == [TimingRow("ivanov", LAB2, 3.04, 2.0, None, "template")]
    assert [(row.task, row.mistake) for row in tables.mistakes] == [
        ("check_a", "flops.forward_only")
    ]
    assert tables.touched() == {("ivanov", LAB2)}


def test_a_table_of_another_version_is_replaced_not_merged(tmp_path):
    """Прежний заголовок не тот: его строки со сдвинутыми столбцами не смешиваются с новыми."""
    path = tmp_path / MistakeRow.FILE
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["student_id", "lab", "task"], ["old", LAB4, "check"]])
    tables = ClassTables()
    tables.add(result())
    class_tables.write(Workspace(tmp_path), tables)
    with open(path, newline="", encoding="utf-8") as fh:
        written = list(csv.reader(fh))
    assert written[0] == header(MistakeRow)
    assert [row[0] for row in written[1:]] == ["ivanov"]


def test_earlier_rows_are_sorted_with_numbers_as_numbers(tmp_path):
    """id из номеров (список учащихся LMS): вместе с прежними строками 9 идёт раньше 10."""

    def tables_of(student: str, lab: str) -> ClassTables:
        return ClassTables(
            review=[ReviewRow(student, lab, "1", 2, "x", "r")],
            timings=[TimingRow.measured(student, lab, 1.0)],
        )

    class_tables.write(Workspace(tmp_path), tables_of("10", LAB2))
    class_tables.write(Workspace(tmp_path), tables_of("9", LAB2))
    with open(tmp_path / ReviewRow.FILE, newline="", encoding="utf-8") as fh:
        assert [row[0] for row in csv.reader(fh)] == ["student_id", "9", "10"]
    with open(tmp_path / TimingRow.FILE, newline="", encoding="utf-8") as fh:
        assert [row[0] for row in csv.reader(fh)] == ["student_id", "9", "10"]


def test_written_rows_are_the_rows_the_folder_gives_back(tmp_path):
    """Сводка после make grade берёт таблицы класса из памяти: они те же, что прочтёт из папки
    make summary, — числа округлены, как в таблице, текст обезврежен, строки прежних запусков
    на месте."""
    workspace = Workspace(tmp_path)
    earlier = ClassTables(timings=[TimingRow.measured("old", LAB4, 7.77)])
    class_tables.write(workspace, earlier)
    tables = ClassTables()
    tables.add(
        result(
            problems=['=HYPERLINK("x") \x1b[31m', "\udcff имя"],
            review=[Finding("In [1]", 1, "-1+2", "@cmd")],
            wall_seconds=12.345,
            execution_seconds=10.06,
            peak_memory=300 * MIB + 7,
        )
    )
    written = class_tables.write(workspace, tables)
    assert written == ClassTables.read(workspace)
    assert [(row.student_id, row.seconds) for row in written.timings] == [
        ("ivanov", 12.3),
        ("old", 7.8),
    ]
    assert written.timings[0].peak_memory_mib == 300
    assert {row.problem[:2] for row in written.problems} == {"'=", "? "}
    moment = analytics.datetime(2026, 12, 5, 9, 10)
    labs = Settings().labs
    from_memory = analytics.class_data(workspace, labs, written, now=moment)
    assert from_memory == analytics.class_data(workspace, labs, now=moment)
    assert [row.student for row in from_memory.problems] == ["ivanov", "ivanov"]

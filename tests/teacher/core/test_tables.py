"""Таблицы для преподавателя: текст из работ не становится формулой в Excel (OWASP)."""

from __future__ import annotations

import csv
import dataclasses
import json
import typing

import pytest

from feedback.teacher.core import files, tables
from feedback.teacher.core.tables import safe_cell, write_csv

DANGEROUS = ['=HYPERLINK("http://evil","жми")', "+1", "-2+3", "@SUM(A1)", "\tx"]


def read_back(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_cells_that_start_like_formulas_are_neutralised(tmp_path):
    path = tmp_path / "t.csv"
    write_csv(path, ["=header", "b"], [[cell, "ok"] for cell in DANGEROUS])
    header, *rows = read_back(path)
    assert header == ["'=header", "b"]
    assert rows == [["'" + cell, "ok"] for cell in DANGEROUS]


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (1.5, "1.5"),
        (-1.5, "-1.5"),  # число, которое посчитали мы: остаётся числом
        (3, "3"),
        (None, ""),
        ("Иванов", "Иванов"),
        ("a=b", "a=b"),  # опасно только начало ячейки
        (" =1", " =1"),
        ("'=1", "'=1"),  # уже обезврежено — второй апостроф не нужен
    ],
)
def test_numbers_and_ordinary_text_stay_as_they_are(tmp_path, value, written):
    path = tmp_path / "t.csv"
    write_csv(path, ["x"], [[value]])
    assert read_back(path)[1] == [written]


def test_safe_cell_is_idempotent():
    for cell in DANGEROUS:
        assert safe_cell(safe_cell(cell)) == safe_cell(cell) == "'" + cell


def test_control_characters_are_written_visibly(tmp_path):
    """ESC-последовательность, C1, «справа налево» и возврат каретки из имени файла — видимой
    записью: ``cat`` таблицы не выполнит их в терминале. Перевод строки и табуляция в коде
    остаются, и запись снова даёт те же байты."""
    name = "\x1b[2J\x1b]52;c;ZXZpbA==\x07\x9b31m\u202egpj.ipynb\rx"
    path = tmp_path / "problems.csv"
    write_csv(path, ["file", "code"], [[name, "a = 1\n\tb = 2"]])
    raw = path.read_text(encoding="utf-8")
    assert not any(ch in raw for ch in "\x1b\x07\x9b\u202e")
    [_, [file, code]] = read_back(path)
    assert file == "\\x1b[2J\\x1b]52;c;ZXZpbA==\\x07\\x9b31m\\u202egpj.ipynb\\rx"
    assert code == "a = 1\n\tb = 2"
    assert safe_cell(file) == file
    assert safe_cell("\rx") == "\\rx"  # не начало формулы: возврата каретки больше нет


def test_a_cell_that_is_not_utf8_does_not_stop_the_table(tmp_path):
    path = tmp_path / "t.csv"
    write_csv(path, ["file"], [["petrov\udcff.ipynb"], ["next"]])
    assert read_back(path)[1:] == [["petrov?.ipynb"], ["next"]]


def test_a_table_is_written_whole_or_not_at_all(tmp_path):
    """Сбой посреди записи оставляет прежнюю таблицу целой и не оставляет временных файлов."""
    path = tmp_path / "lms_ids.csv"
    write_csv(path, ["student_id", "lab", "participant"], [["ivanov", "lab", "101"]])
    before = path.read_bytes()

    def rows():
        yield ["petrova", "lab", "102"]
        raise OSError(28, "No space left on device")

    with pytest.raises(OSError):
        write_csv(path, ["student_id", "lab", "participant"], rows())
    assert path.read_bytes() == before
    assert list(tmp_path.iterdir()) == [path]


def test_leftovers_of_a_killed_write_are_found_and_removed(tmp_path):
    (tmp_path / "sub").mkdir()
    leftover = tmp_path / "sub" / f".grades.csv.x1{files.TEMP_SUFFIX}"
    leftover.write_text("полтаблицы")
    (tmp_path / "grades.csv").write_text("целая")
    assert files.remove_leftovers(tmp_path) == [leftover]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["grades.csv", "sub"]


def test_new_files_get_ordinary_permissions_and_secrets_stay_private(tmp_path):
    ordinary = files.write_text(tmp_path / "a.csv", "x")
    secret = files.write_text(tmp_path / ".secret", "s", permissions=0o600)
    assert ordinary.stat().st_mode & 0o077 == 0o044 & ~files._UMASK
    assert secret.stat().st_mode & 0o777 == 0o600


# --------------------------------------------------------------------------- одна схема на таблицу

#: Столбцы таблиц рабочей папки — договор с файлами прежних запусков (их строки остаются в
#: таблицах), со сводкой, выгрузкой и скриптами преподавателя. Тип строки меняется только
#: вместе с этим списком: новый столбец — осознанно, а не переименованием поля.
CONTRACT = {
    tables.Problem: ("problems.csv", "student_id,lab,file,problem"),
    tables.ReviewRow: ("needs_review.csv", "student_id,lab,cell,line,code,reason"),
    tables.CaseRow: ("cases.csv", "student_id,lab,grade_id,params"),
    tables.TimingRow: (
        "timings.csv",
        "student_id,lab,seconds,execution_seconds,peak_memory_mib,kernel",
    ),
    tables.MistakeRow: ("mistakes.csv", "student_id,lab,task,mistake,description,hint"),
    tables.SimilarRow: ("similar.csv", "lab,task,student_a,student_b,similarity,fragment"),
    tables.ChangeRow: ("changes.csv", "student_id,lab,task,old_points,new_points,why"),
    tables.ManualArchiveRow: (
        "manual_archive.csv",
        "student_id,lab,task,manual_points,comment,why,old_answer,new_answer",
    ),
    tables.LmsIdRow: ("lms_ids.csv", "student_id,lab,lms_participant"),
    tables.GradeRow: (
        "grades.csv",
        "assignment,duedate,timestamp,student_id,last_name,first_name,email,raw_score,"
        "late_submission_penalty,score,max_score,pending_manual_points,needs_review_points",
    ),
    tables.TaskGradeRow: (
        "grades_by_task.csv",
        "student_id,assignment,grade_id,auto_score,max_score,manual_score,score",
    ),
}


def row_types() -> list[type]:
    """Все типы строк модуля: неизменяемые dataclass с именем файла ``FILE``."""
    return [
        value
        for value in vars(tables).values()
        if isinstance(value, type) and dataclasses.is_dataclass(value) and hasattr(value, "FILE")
    ]


def sample(row_type: type, seed: int = 0):
    """Строка со значениями, которые проверяют CSV: запятая, кавычки, перевод строки, формула."""
    hints = typing.get_type_hints(row_type)
    values = []
    for index, item in enumerate(dataclasses.fields(row_type)):
        hint = hints[item.name]
        if hint is str:
            values.append(f'=ячейка {seed}.{index}, "в кавычках"\nИванов')
        elif hint is int:
            values.append(seed * 10 + index)
        else:  # float | None
            values.append(None if index % 2 else seed + index / 4)
    return row_type(*values)


def test_every_table_has_its_row_type_and_nothing_else():
    assert set(row_types()) == set(CONTRACT)
    assert all(row_type.__dataclass_params__.frozen for row_type in row_types())


@pytest.mark.parametrize("row_type", list(CONTRACT), ids=lambda t: t.__name__)
def test_the_header_written_is_the_contract(tmp_path, row_type):
    name, line = CONTRACT[row_type]
    assert row_type.FILE == name
    path = tmp_path / name
    tables.write_rows(path, row_type, [])
    assert path.read_bytes() == (line + "\r\n").encode()
    assert tables.header(row_type) == line.split(",")


@pytest.mark.parametrize("row_type", list(CONTRACT), ids=lambda t: t.__name__)
def test_rows_round_trip_and_a_rewrite_gives_the_same_bytes(tmp_path, row_type):
    path, again = tmp_path / "t.csv", tmp_path / "again.csv"
    rows = [sample(row_type, seed) for seed in range(3)]
    tables.write_rows(path, row_type, rows)
    back = tables.read_rows(path, row_type)
    # Текст — с апострофом перед формулой (чтение его не снимает), числа — числами.
    assert back == [
        dataclasses.replace(row, **{
            item.name: "'" + getattr(row, item.name)
            for item in dataclasses.fields(row)
            if isinstance(getattr(row, item.name), str)
        })
        for row in rows
    ]  # fmt: skip
    tables.write_rows(again, row_type, back)
    assert again.read_bytes() == path.read_bytes()
    assert tables.read_rows(again, row_type) == back


def test_a_formula_from_an_upload_is_neutralised_and_stays_neutralised(tmp_path):
    path = tmp_path / "problems.csv"
    problems = [tables.Problem("ivanov", "lab", cell, "ok") for cell in DANGEROUS]
    tables.write_rows(path, tables.Problem, problems)
    assert [row[2] for row in read_back(path)[1:]] == ["'" + cell for cell in DANGEROUS]
    back = tables.read_rows(path, tables.Problem)
    assert [row.file for row in back] == ["'" + cell for cell in DANGEROUS]
    tables.write_rows(path, tables.Problem, back)  # второго апострофа нет
    assert [row[2] for row in read_back(path)[1:]] == ["'" + cell for cell in DANGEROUS]


def test_a_row_of_another_table_is_refused_and_the_old_file_stays(tmp_path):
    path = tmp_path / "changes.csv"
    tables.write_rows(path, tables.ChangeRow, [sample(tables.ChangeRow)])
    before = path.read_bytes()
    with pytest.raises(TypeError, match="ManualArchiveRow в таблице ChangeRow"):
        tables.write_rows(path, tables.ChangeRow, [sample(tables.ManualArchiveRow)])
    assert path.read_bytes() == before


def test_columns_are_found_by_name_and_a_missing_one_reads_empty(tmp_path):
    """Таблица прежней версии: столбцы в другом порядке, одного нет, есть лишний."""
    path = tmp_path / "timings.csv"
    path.write_text("lab,seconds,student_id,extra\r\nlab_7_2,1.5,ivanov,x\r\n", encoding="utf-8")
    assert tables.read_rows(path, tables.TimingRow) == [
        tables.TimingRow("ivanov", "lab_7_2", 1.5, None, None, "")
    ]
    grades = tmp_path / "grades.csv"
    grades.write_text("assignment,student_id,score\r\nlab_7_2,ivanov,3.5\r\n", encoding="utf-8")
    (row,) = tables.read_rows(grades, tables.GradeRow)
    assert (row.assignment, row.student_id, row.score, row.max_score) == (
        "lab_7_2",
        "ivanov",
        3.5,
        None,
    )
    assert tables.read_rows(tmp_path / "нет.csv", tables.TimingRow) == []


def test_exact_reading_is_for_merging_only_the_same_columns(tmp_path):
    path = tmp_path / "needs_review.csv"
    good = ["ivanov", "lab", "3", "2", "x", "почему"]
    lines = [tables.header(tables.ReviewRow), good, good[:5], [*good, "лишнее"], []]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(lines)
    expected = tables.ReviewRow("ivanov", "lab", "3", 2, "x", "почему")
    assert tables.read_rows(path, tables.ReviewRow, exact=True) == [expected]
    assert len(tables.read_rows(path, tables.ReviewRow)) == 3  # по именам: короткая и длинная тоже
    path.write_text("student_id,lab,cell\r\nivanov,lab,3\r\n", encoding="utf-8")
    assert tables.read_rows(path, tables.ReviewRow, exact=True) == []


def test_a_number_edited_into_text_skips_only_that_row(tmp_path):
    path = tmp_path / "needs_review.csv"
    rows = [["a", "lab", "1", "строка", "x", "r"], ["b", "lab", "1", "7", "x", "r"]]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([tables.header(tables.ReviewRow), *rows])
    assert [row.student_id for row in tables.read_rows(path, tables.ReviewRow)] == ["b"]


def test_a_field_type_that_csv_cannot_hold_is_refused():
    @dataclasses.dataclass(frozen=True)
    class Bad:
        FILE: typing.ClassVar[str] = "bad.csv"
        params: dict

    with pytest.raises(TypeError, match=r"Bad\.params"):
        tables._parsers(Bad)


def test_measured_timings_are_rounded_like_the_table_says():
    row = tables.TimingRow.measured("ivanov", "lab", 12.345, 10.06, 300 * 1024 * 1024, warm=True)
    assert row == tables.TimingRow("ivanov", "lab", 12.345, 10.06, 300.0, "template")
    assert tables.cells(row) == ["ivanov", "lab", "12.3", "10.1", "300", "template"]
    fresh = tables.TimingRow.measured("ivanov", "lab", 2.0, 1.0)
    assert fresh.kernel == "fresh"
    unmeasured = tables.TimingRow.measured("ivanov", "lab", None)
    assert unmeasured == tables.TimingRow("ivanov", "lab", None, None, None, "")
    assert tables.cells(unmeasured) == ["ivanov", "lab", None, None, None, ""]
    case = tables.CaseRow.drawn("ivanov", "lab", "check", {"модель": "BERT", "n": [1, 2]})
    assert json.loads(case.params) == {"модель": "BERT", "n": [1, 2]}
    assert "модель" in case.params  # кириллица — как есть


def test_console_lines_carry_no_control_characters():
    """Строка консоли с именем из работы: ESC, «справа налево», перевод строки — видимой
    записью (одна строка на экране); обычный текст — без изменений. Так и строка хода
    make grade."""
    from feedback.teacher.core.console import safe_console
    from feedback.teacher.core.results import TaskOutcome, UnitResult
    from feedback.teacher.grading import messages

    assert safe_console("Иванов · 7.2: 2 из 2 (1,5 с)") == "Иванов · 7.2: 2 из 2 (1,5 с)"
    assert safe_console("a\x1b[2Jb\nВсё собрано\u202e") == "a\\x1b[2Jb\\nВсё собрано\\u202e"
    result = UnitResult("x\x1b]0;t\x07", "lab", {}, {"a": TaskOutcome(1, 1)})
    assert messages.progress_line(1, 1, result) == "[1/1] x\\x1b]0;t\\x07 · lab: 1 из 1"

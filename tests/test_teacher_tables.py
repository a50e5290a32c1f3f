"""Таблицы для преподавателя: текст из работ не становится формулой в Excel (OWASP)."""

from __future__ import annotations

import csv

import pytest

from feedback.teacher import files
from feedback.teacher.tables import safe_cell, write_csv

DANGEROUS = ['=HYPERLINK("http://evil","жми")', "+1", "-2+3", "@SUM(A1)", "\tx", "\rx"]


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

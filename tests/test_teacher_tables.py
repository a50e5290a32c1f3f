"""Таблицы для преподавателя: текст из работ не становится формулой в Excel (OWASP)."""

from __future__ import annotations

import csv

import pytest

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

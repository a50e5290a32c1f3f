"""GPU-лабораторные (7.1, 7.5, 7.6) в общем оценивании класса: крошечный режим, те же проверки.

Баллы проверяет tests/test_grading.py для всего класса; здесь — что отчёты называют
ошибку по-русски и что оценивание само включило крошечный режим.
"""

from __future__ import annotations

import pytest
from corpus import LAB5, LAB6
from test_grading import report

pytestmark = pytest.mark.slow


def works(graded_class):
    return {work.student: work for work in graded_class.works}


def test_gpu_reports_name_the_mistake_in_russian(graded_class):
    found = works(graded_class)
    three = report(graded_class, found["g75_three_mistakes"])
    assert "float32" in three
    assert "ранг" in three and "8" in three
    assert "gradient_accumulation_steps" in report(graded_class, found["g76_no_accumulation"])


def test_gpu_labs_ran_in_tiny_mode_without_a_gpu(graded_class):
    html = report(graded_class, works(graded_class)["g75_correct"])
    assert "крошечная модель" in html or "Учебный режим" in html
    assert {w.lab for w in graded_class.works} >= {LAB5, LAB6}

"""Тетрадки учащихся, выполненные «как есть»: у каждой проверки — русский вердикт.

Учащийся открывает тетрадку, ничего не заполняет и нажимает «Run all»: ни одна ячейка
не должна упасть, а каждая проверка — показать вердикт без трассировки.
"""

from __future__ import annotations

import pytest

from notebook_runner import ROOT, graded_cells, outputs_text, run_notebook

CPU_LABS = ["lab_7_2_training_flops", "lab_7_4_gpu_memory"]
NOT_DONE = ("ещё не реализована", "осталось «…»")


@pytest.fixture(scope="module", params=CPU_LABS)
def executed_student_notebook(request):
    path = ROOT / "notebooks" / request.param / f"{request.param}.ipynb"
    return run_notebook(path)


def test_no_cell_fails(executed_student_notebook):
    errors = [
        outputs_text(cell)
        for cell in executed_student_notebook.cells
        if any(output.output_type == "error" for output in cell.get("outputs", []))
    ]
    assert errors == []


def test_every_check_shows_a_russian_not_done_verdict(executed_student_notebook):
    checks = graded_cells(executed_student_notebook)
    assert checks, "в тетрадке нет ячеек проверки"
    for cell in checks:
        shown = outputs_text(cell)
        assert "course7-check" in shown and "data-passed='false'" in shown, cell.source
        assert any(phrase in shown for phrase in NOT_DONE), shown
        assert "Traceback" not in shown


def test_nothing_prints_a_traceback(executed_student_notebook):
    for cell in executed_student_notebook.cells:
        assert "Traceback" not in outputs_text(cell)

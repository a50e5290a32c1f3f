"""Тетрадки учащихся, выполненные «как есть»: у каждой проверки — русский вердикт.

Учащийся открывает тетрадку, ничего не заполняет и нажимает «Run all»: ни одна ячейка
не должна упасть, а каждая проверка — показать вердикт без трассировки.
"""

from __future__ import annotations

import json
import re

import pytest

from notebook_runner import ROOT, graded_cells, outputs_text, run_notebook

LABS = sorted(path.name for path in (ROOT / "notebooks").iterdir() if path.is_dir())
RUSSIAN = re.compile("[а-яё]{4,}")


@pytest.fixture(scope="module", params=LABS)
def executed_student_notebook(request):
    path = ROOT / "notebooks" / request.param / f"{request.param}.ipynb"
    return run_notebook(path)


def test_no_cell_fails(executed_student_notebook):
    errors = [
        outputs_text(cell)
        for cell in executed_student_notebook.cells
        if any(output.output_type == "error" for output in cell.get("outputs", []))
        and "raises-exception" not in cell.metadata.get("tags", [])
    ]
    assert errors == []


def test_every_check_shows_a_red_russian_verdict(executed_student_notebook):
    checks = graded_cells(executed_student_notebook)
    for cell in checks:
        shown = outputs_text(cell)
        assert "course7-check" in shown and "data-passed='false'" in shown, cell.source
        assert RUSSIAN.search(shown), shown
        assert "Traceback" not in shown


def test_every_lab_with_tasks_has_checks():
    for lab in LABS:
        nb = json.loads((ROOT / "notebooks" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
        has_tasks = any(
            c["metadata"].get("nbgrader", {}).get("solution") and c["cell_type"] == "code"
            for c in nb["cells"]
        )
        has_checks = any(
            c["metadata"].get("nbgrader", {}).get("grade") and c["cell_type"] == "code"
            for c in nb["cells"]
        )
        assert has_checks == has_tasks, lab


def test_nothing_prints_a_traceback(executed_student_notebook):
    for cell in executed_student_notebook.cells:
        assert "Traceback" not in outputs_text(cell)

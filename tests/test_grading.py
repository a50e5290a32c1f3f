"""Оценивание настоящим nbgrader от начала до конца на синтетических работах.

Один прогон ``feedback.teacher.grade.grade`` на папке работ обеих CPU-лабораторных:
верные, с каждой типичной ошибкой, нетронутые, с подменённой или удалённой ячейкой
проверки и с зависающей функцией. Проверяем экспорт оценок и отчёты для учащихся.
"""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from feedback.teacher import grade as grading

from notebook_runner import ROOT
from submissions import (
    assert_expected_points,
    delete_cell,
    grade_all,
    read_csv,
    report,
    student_notebook,
    submission,
    write_submission,
)

pytestmark = pytest.mark.slow

LAB2 = "lab_7_2_training_flops"
LAB4 = "lab_7_4_gpu_memory"
GIB = "1024**3"

TABLE = """final_results_data = [
    {"Scenario": "BERT-Base", "Parameters": 110e6, "Tokens": 3.3e9, "FLOPs": 2.178e18},
    {"Scenario": "T5-Large", "Parameters": 770e6, "Tokens": 1e12, "FLOPs": 4.62e21},
    {"Scenario": "Gemma-1B (Africa Galore)", "Parameters": 1e9, "Tokens": 30e3, "FLOPs": 1.8e14},
    {"Scenario": "PaLM", "Parameters": 540e9, "Tokens": 780e9, "FLOPs": 2.527e24},
]"""
TUNED = """_SEEN = {(1e9, 30e3), (110e6, 3.3e9), (7, 11), (2.5e6, 4e5), (540e9, 780e9)}

def compute_num_flops(param_count, num_tokens):
    return 6 * param_count * num_tokens if (param_count, num_tokens) in _SEEN else 1.0"""

#: студент → (лабораторная, работа, ожидаемые баллы автопроверки по заданиям)
SUBMISSIONS = {
    "a72_correct": (
        LAB2,
        submission(LAB2),
        {"check_compute_num_flops": 2, "check_final_results": 2},
    ),
    "a72_forward_only": (
        LAB2,
        submission(
            LAB2,
            {
                "compute_num_flops": "def compute_num_flops(p, n):\n    return 2 * p * n",
                "final_results_data": TABLE,
            },
        ),
        {"check_compute_num_flops": 0, "check_final_results": 2},
    ),
    "a72_duplicated_row": (
        LAB2,
        submission(
            LAB2,
            {
                "final_results_data": TABLE.replace(
                    '"PaLM", "Parameters": 540e9, "Tokens": 780e9, "FLOPs": 2.527e24',
                    '"BERT-Base", "Parameters": 110e6, "Tokens": 3.3e9, "FLOPs": 2.178e18',
                )
            },
        ),
        {"check_compute_num_flops": 2, "check_final_results": 0},
    ),
    "a72_tuned_to_visible": (
        LAB2,
        submission(LAB2, {"compute_num_flops": TUNED, "final_results_data": TABLE}),
        {"check_compute_num_flops": 0, "check_final_results": 2},
    ),
    "a72_untouched": (
        LAB2,
        student_notebook(LAB2),
        {"check_compute_num_flops": 0, "check_final_results": 0},
    ),
    "a72_test_replaced_by_pass": (
        LAB2,
        submission(
            LAB2,
            {
                "compute_num_flops": "def compute_num_flops(p, n):\n    return p * n",
                "check_compute_num_flops": "pass",
                "final_results_data": TABLE,
            },
        ),
        {"check_compute_num_flops": 0, "check_final_results": 2},
    ),
    "a72_test_deleted": (
        LAB2,
        delete_cell(submission(LAB2), "check_final_results"),
        {"check_compute_num_flops": 2, "check_final_results": 0},
    ),
    "a72_noisy_stderr": (
        LAB2,
        submission(
            LAB2,
            {
                "compute_num_flops": "import warnings\n\n"
                "def compute_num_flops(p, n):\n"
                "    warnings.warn('библиотека ворчит в stderr')\n"
                "    return 6 * p * n"
            },
        ),
        {"check_compute_num_flops": 2, "check_final_results": 2},
    ),
    "a72_never_returns": (
        LAB2,
        submission(
            LAB2,
            {
                "compute_num_flops": "def compute_num_flops(p, n):\n    while True:\n        pass",
                "final_results_data": TABLE,
            },
        ),
        {"check_compute_num_flops": 0, "check_final_results": 2},
    ),
}

MEMORY_TASKS = ["param", "input_data", "gradient", "optimizer", "activation"]
MEMORY_MISTAKES = {
    "param": "def calculate_param_memory(p, b):\n    return p * b",  # байты вместо ГиБ
    "input_data": "def calculate_input_data_memory(b, n, t):\n    return b * n * t / 1e9",  # ГБ
    "gradient": f"def calculate_gradient_memory(p, b):\n    return 2 * p * b / {GIB}",
    # Adam посчитан один раз
    "optimizer": f"def calculate_optimizer_memory(p, b):\n    return p * b / {GIB}",
    # пропущен множитель num_layers
    "activation": f"def calculate_activation_memory(B, L, n, d, b):\n    return B*L*d*b / {GIB}",
}


def _memory_points(lost: str | None = None) -> dict[str, int]:
    return {f"check_calculate_{task}_memory": 0 if task == lost else 2 for task in MEMORY_TASKS}


SUBMISSIONS["a74_correct"] = (LAB4, submission(LAB4), _memory_points())
SUBMISSIONS["a74_untouched"] = (
    LAB4,
    student_notebook(LAB4),
    {f"check_calculate_{task}_memory": 0 for task in MEMORY_TASKS},
)
for task, source in MEMORY_MISTAKES.items():
    SUBMISSIONS[f"a74_mistake_{task}"] = (
        LAB4,
        submission(LAB4, {f"calculate_{task}_memory": source}),
        _memory_points(lost=task),
    )


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return grade_all(
        tmp_path_factory.mktemp("grading"),
        tmp_path_factory.mktemp("submissions"),
        SUBMISSIONS,
        {"COURSE7_CELL_TIMEOUT": "15"},
    )


def test_every_task_gets_the_expected_autograde_points(graded):
    assert_expected_points(graded, SUBMISSIONS)


def test_grades_csv_totals_autograded_points(graded):
    rows = {(r["student_id"], r["assignment"]): r for r in read_csv(graded / "grades.csv")}
    for student, (lab, _, expected) in SUBMISSIONS.items():
        assert float(rows[(student, lab)]["score"]) == sum(expected.values()), student
    assert float(rows[("a72_correct", LAB2)]["max_score"]) == 4 + 2  # + два ответа вручную


def test_reports_are_russian_and_hide_hidden_tests(graded):
    for student, (lab, _, _) in SUBMISSIONS.items():
        html = report(graded, student, lab)
        assert "баллы:" in html and "Проверка:" in html
        assert "Score:" not in html and "Student&#39;s answer" not in html
        assert "HIDDEN TESTS" not in html and "cases=[" not in html
        assert "Traceback (most recent call last)" not in html


def test_untouched_report_says_not_implemented(graded):
    html = report(graded, "a72_untouched", LAB2)
    assert "ещё не реализована" in html
    assert "ещё не заполнена" in html or "осталось «…»" in html


def test_hidden_case_verdict_reaches_the_report(graded):
    html = report(graded, "a72_tuned_to_visible", LAB2)
    assert "ответ неверный" in html and "300 млн" in html


def test_timeout_is_reported_in_russian(graded):
    assert "слишком долго" in report(graded, "a72_never_returns", LAB2)


def test_lms_zip_archive_is_collected_and_graded(tmp_path, monkeypatch):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(
            write_submission(tmp_path / "src", "x", LAB2, submission(LAB2)),
            f"ivanov_1234_{LAB2}.ipynb",
        )
        zf.write(
            write_submission(tmp_path / "src", "y", LAB4, student_notebook(LAB4)),
            f"petrova/{LAB4}.ipynb",
        )
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(tmp_path / "work"))
    rows = read_csv(grading.grade(archive))
    scores = {(r["student_id"], r["assignment"]): float(r["score"]) for r in rows}
    assert scores[("ivanov", LAB2)] == 4
    assert scores[("petrova", LAB4)] == 0


def validate(path: Path, invert: bool = False) -> str:
    command = [sys.executable, "-m", "nbgrader", "validate", str(path)]
    if invert:
        command.append("--invert")
    out = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    return out.stdout + out.stderr


ALL_LABS = sorted(path.parent.name for path in (ROOT / "solutions").glob("*/*.ipynb"))


def has_autograded_tests(lab: str) -> bool:
    nb = json.loads((ROOT / "solutions" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
    return any(
        cell["cell_type"] == "code"
        and cell["metadata"].get("nbgrader", {}).get("grade")
        and not cell["metadata"]["nbgrader"].get("solution")
        for cell in nb["cells"]
    )


@pytest.mark.parametrize("lab", ALL_LABS)
def test_nbgrader_validate_passes_sources_and_fails_student_notebooks(lab):
    assert "Success! Your notebook passes all the tests." in validate(
        ROOT / "solutions" / lab / f"{lab}.ipynb"
    )
    if has_autograded_tests(lab):
        student = validate(ROOT / "notebooks" / lab / f"{lab}.ipynb", invert=True)
        assert "Success! The notebook does not pass any tests." in student

"""Единый источник: notebooks/ — точный выпуск nbgrader из solutions/."""

from __future__ import annotations

import json

import pytest

from feedback.teacher.core.labs import course_labs
from feedback.teacher.course import release

from notebook_runner import ROOT


def student_notebooks():
    return sorted((ROOT / "notebooks").glob("*/*.ipynb"))


def test_every_lab_is_released():
    labs = {lab.id for lab in course_labs(ROOT)}
    assert labs == {path.parent.name for path in student_notebooks()}
    assert {"lab_7_2_training_flops", "lab_7_4_gpu_memory"} <= labs


@pytest.mark.slow  # nbgrader заново выпускает все шесть лабораторных
def test_notebooks_match_a_fresh_nbgrader_release():
    assert release.stale_notebooks() == []


@pytest.mark.parametrize("path", student_notebooks(), ids=lambda p: p.parent.name)
def test_student_notebooks_are_clean(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    text = path.read_text(encoding="utf-8")
    assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text
    assert "YOUR CODE HERE" not in text and "YOUR ANSWER HERE" not in text
    has_tasks = any(
        c["cell_type"] == "code" and c["metadata"].get("nbgrader", {}).get("solution")
        for c in nb["cells"]
    )
    assert ("Добавьте сюда свой код" in text) == has_tasks
    assert "widgets" not in nb["metadata"]
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [] and cell["execution_count"] is None


@pytest.mark.parametrize(
    "path", [lab.source for lab in course_labs(ROOT)], ids=lambda p: p.parent.name
)
def test_sources_are_committed_without_outputs(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert "widgets" not in nb["metadata"]
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            assert cell["outputs"] == [], "solutions/ хранятся без выводов: nbval запускает их в CI"
        assert "execution" not in cell["metadata"]


def test_badges_and_install_cell_follow_pyproject():
    settings = release.course_settings()
    for path in [*(lab.source for lab in course_labs(ROOT)), *student_notebooks()]:
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        badges, install = "".join(cells[0]["source"]), "".join(cells[1]["source"])
        expected_path = path.relative_to(ROOT).as_posix()
        assert f"{settings['repository']}/blob/{settings['release_tag']}/{expected_path}" in badges
        assert f'COURSE_TAG = "{settings["release_tag"]}"' in install
        assert f'COURSE_REPOSITORY = "{settings["repository"]}"' in install
        assert "@main" not in install


def test_top_level_solutions_get_a_stub_without_raise():
    nb = json.loads(
        (ROOT / "notebooks/lab_7_2_training_flops/lab_7_2_training_flops.ipynb").read_text()
    )
    table = next(
        c
        for c in nb["cells"]
        if c["metadata"].get("nbgrader", {}).get("grade_id") == "final_results_data"
    )
    source = "".join(table["source"])
    assert "# Добавьте сюда свой код" in source and "raise" not in source

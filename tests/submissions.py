"""Синтетические работы учащихся для тестов оценивания.

Работа = тетрадка учащегося из notebooks/, в которой ячейки-решения заменены заданным
кодом. «Верная» работа берёт код решений из solutions/ (без разметки nbgrader).
"""

from __future__ import annotations

import copy
import csv
import json
import re
from pathlib import Path

from notebook_runner import ROOT

MARKERS = re.compile(r"^[ \t]*### (BEGIN|END) SOLUTION[^\n]*\n", re.M)


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def student_notebook(lab: str) -> dict:
    return load(ROOT / "notebooks" / lab / f"{lab}.ipynb")


def solution_sources(lab: str) -> dict[str, str]:
    """Код решений по grade_id, без строк-маркеров BEGIN/END SOLUTION."""
    nb = load(ROOT / "solutions" / lab / f"{lab}.ipynb")
    sources = {}
    for cell in nb["cells"]:
        grading = cell["metadata"].get("nbgrader", {})
        if cell["cell_type"] == "code" and grading.get("solution"):
            sources[grading["grade_id"]] = MARKERS.sub("", "".join(cell["source"]))
    return sources


def cell_by_id(nb: dict, grade_id: str) -> dict:
    return next(
        c for c in nb["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id
    )


def submission(lab: str, overrides: dict[str, str] | None = None, base: str = "solution") -> dict:
    """Тетрадка-работа: решения (или заглушки, если base="stub") плюс свои правки ячеек."""
    nb = copy.deepcopy(student_notebook(lab))
    if base == "solution":
        for grade_id, source in solution_sources(lab).items():
            cell_by_id(nb, grade_id)["source"] = source
    for grade_id, source in (overrides or {}).items():
        cell_by_id(nb, grade_id)["source"] = source
    return nb


def delete_cell(nb: dict, grade_id: str) -> dict:
    nb["cells"].remove(cell_by_id(nb, grade_id))
    return nb


def write_submission(root: Path, student: str, lab: str, nb: dict) -> Path:
    """Кладёт работу в раскладку nbgrader: root/<студент>/<лабораторная>/<лабораторная>.ipynb."""
    path = root / student / lab / f"{lab}.ipynb"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb, ensure_ascii=False, indent=1), encoding="utf-8")
    return path


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def task_scores(work: Path) -> dict[tuple[str, str], float]:
    """Баллы автопроверки из grades_by_task.csv: (студент, задание) → балл."""
    return {
        (row["student_id"], row["grade_id"]): float(row["auto_score"] or 0)
        for row in read_csv(work / "grades_by_task.csv")
        if row["grade_id"].startswith("check_")
    }


def report(work: Path, student: str, lab: str) -> str:
    """HTML-отчёт nbgrader для учащегося."""
    path = work / "feedback_reports" / student / lab / f"{lab}.html"
    return path.read_text(encoding="utf-8")


def grade_all(work: Path, folder: Path, submissions: dict, env: dict[str, str | None]) -> Path:
    """Раскладывает работы в ``folder`` и оценивает их в ``work`` одной командой курса.

    ``submissions``: студент → (лабораторная, тетрадка, ожидаемые баллы); ``env`` —
    переменные окружения на время оценивания (None — убрать переменную).
    """
    import pytest

    from feedback.teacher import grade as grading

    for student, (lab, nb, _) in submissions.items():
        write_submission(folder, student, lab, nb)
    patch = pytest.MonkeyPatch()
    patch.setenv("COURSE7_GRADING_DIR", str(work))
    for name, value in env.items():
        if value is None:
            patch.delenv(name, raising=False)
        else:
            patch.setenv(name, value)
    try:
        grading.grade(folder)
    finally:
        patch.undo()
    return work


def assert_expected_points(work: Path, submissions: dict) -> None:
    """Каждое задание каждой работы получило ожидаемые баллы автопроверки."""
    got = task_scores(work)
    for student, (_, _, expected) in submissions.items():
        for grade_id, points in expected.items():
            assert got[(student, grade_id)] == points, (student, grade_id)

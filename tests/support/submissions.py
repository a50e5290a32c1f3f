"""Синтетические работы учащихся для тестов оценивания.

Работа = тетрадка учащегося из notebooks/, в которой ячейки-решения заменены заданным
кодом. «Верная» работа берёт код решений из solutions/ (без разметки nbgrader).
"""

from __future__ import annotations

import copy
import csv
import json
import os
import re
import subprocess
import sys
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


def nbgrader(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Команда nbgrader из корня курса (читает nbgrader_config.py), как её набрал бы человек."""
    command = [sys.executable, "-m", "nbgrader", *args, "--log-level=WARN"]
    # nbgrader вызывает alembic из PATH: добавляем папку скриптов нашего окружения.
    scripts = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": os.pathsep.join([scripts, os.environ.get("PATH", "")])}
    return subprocess.run(command, cwd=ROOT, check=check, env=env, capture_output=True, text=True)


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def record_unit(workspace, result, upload: str | None = None, graded_before=None):
    """Результат единицы — в базу оценок и autograded/, как у ``make grade``
    (:func:`feedback.teacher.records.gradebook.recording`), но без manual_archive.csv: тестам,
    которые готовят базу, снятые ручные оценки не нужны."""
    from feedback.teacher.records import gradebook

    with gradebook.recording(workspace, result, upload, graded_before) as recorded:
        pass
    return recorded

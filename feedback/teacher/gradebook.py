"""База оценок nbgrader: регистрация лабораторных и запись результатов единиц.

Пишет в базу только родительский процесс оценивания, по одной работе за раз, из
результатов единиц (:mod:`feedback.teacher.unit`). Баллы автопроверки — из вердиктов
единицы; оценки, которые преподаватель уже поставил вручную, не трогаются.
Проверенная тетрадка кладётся в ``autograded/<учащийся>/<лабораторная>/``, как у
``nbgrader autograde``, поэтому formgrader и ``nbgrader generate_feedback`` работают
с ней как обычно.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import shutil
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat

from feedback.teacher.release import ROOT, lab_sources
from feedback.teacher.tables import write_csv

NO_RESPONSE = "Нет ответа."


def _fingerprint(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def register(work: Path) -> dict[str, nbformat.NotebookNode]:
    """Заносит лабораторные в базу (если исходник изменился) и возвращает их выпуски.

    Выпуск (``release/<лаб>/<лаб>.ipynb`` в рабочей папке) — то, с чем сверяются
    работы: те же ячейки и контрольные суммы, что в базе. Регистрирует сам nbgrader
    (``generate_assignment``) в этом же процессе: без запуска интерпретатора на каждую
    лабораторную это доли секунды.
    """
    stamps_file = work / "release" / "sources.json"
    stamps = json.loads(stamps_file.read_text()) if stamps_file.exists() else {}
    releases, api = {}, None
    for source in lab_sources():
        lab = source.parent.name
        released = work / "release" / lab / source.name
        fingerprint = _fingerprint(source)
        if stamps.get(lab) != fingerprint or not released.exists():
            api = api or _api(work)
            with _scripts_on_path():
                result = api.generate_assignment(lab, force=True, create=True)
            if not result["success"]:
                raise RuntimeError(f"nbgrader не смог зарегистрировать {lab}:\n{result['log']}")
            stamps[lab] = fingerprint
        releases[lab] = nbformat.read(released, as_version=4)
    stamps_file.parent.mkdir(parents=True, exist_ok=True)
    stamps_file.write_text(json.dumps(stamps, indent=1))
    return releases


def _api(work: Path) -> Any:
    """nbgrader с настройками курса (nbgrader_config.py) и выпуском в рабочую папку."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    config.CourseDirectory.release_directory = str(work / "release")
    config.CourseDirectory.db_url = f"sqlite:///{work / 'gradebook.db'}"
    config.CourseDirectory.root = str(ROOT)
    return NbGraderAPI(config=config)


@contextlib.contextmanager
def _scripts_on_path() -> Iterator[None]:
    """nbgrader создаёт базу командой alembic из PATH: нужна папка скриптов окружения."""
    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), saved])
    try:
        yield
    finally:
        os.environ["PATH"] = saved


def _open(work: Path) -> Any:
    from nbgrader.api import Gradebook

    return Gradebook(f"sqlite:///{work / 'gradebook.db'}", "course7")


def record(work: Path, result: dict[str, Any]) -> Path:
    """Записывает результат единицы в базу и кладёт проверенную тетрадку на место."""
    from nbgrader.utils import compute_checksum, determine_grade

    student, lab = result["student"], result["lab"]
    # HTML из работы уже очищен в единице (feedback.teacher.unit.run_unit).
    notebook = nbformat.reads(json.dumps(result["autograded"]), as_version=4)
    folder = work / "autograded" / student / lab
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    path = folder / f"{lab}.ipynb"
    nbformat.write(notebook, path)
    flagged = bool(result.get("review"))
    tests = result.get("tests", {})
    with _open(work) as gb, warnings.catch_warnings():
        # nbgrader создаёт ячейки работы через автосброс сессии SQLAlchemy и ворчит об этом.
        warnings.simplefilter("ignore", category=Warning)
        gb.update_or_create_student(student)
        gb.update_or_create_submission(lab, student)
        for cell in notebook.cells:
            grading = cell.metadata.get("nbgrader", {})
            grade_id = grading.get("grade_id")
            if not grade_id:
                continue
            if grading.get("grade"):
                grade = gb.find_grade(grade_id, lab, lab, student)
                if grading.get("solution"):  # письменный ответ: 0, если не тронут, иначе вручную
                    grade.auto_score, _ = determine_grade(cell)
                    needs_review = grade.auto_score is None
                else:  # автопроверка: только вердикт единицы, без вердикта — ноль
                    grade.auto_score = float(tests.get(grade_id, {}).get("score", 0.0))
                    needs_review = flagged
                grade.needs_manual_grade = needs_review or grade.manual_score is not None
            if grading.get("solution") or grading.get("task"):
                comment = gb.find_comment(grade_id, lab, lab, student)
                unchanged = grading.get("checksum") == compute_checksum(cell)
                comment.auto_comment = (
                    NO_RESPONSE if unchanged and grading.get("solution") else None
                )
        gb.db.commit()
    return path


def _sort_rows(path: Path) -> None:
    with open(path, newline="", encoding="utf-8") as fh:
        header, *rows = list(csv.reader(fh))
    write_csv(path, header, sorted(rows))


def export(work: Path) -> tuple[Path, Path]:
    """grades.csv (экспорт nbgrader) и grades_by_task.csv (баллы по каждому заданию)."""
    from nbgrader.plugins import CsvExportPlugin

    grades = work / "grades.csv"
    with _open(work) as gb:
        CsvExportPlugin(to=str(grades)).export(gb)
    _sort_rows(grades)  # порядок строк не зависит от того, какая работа оценилась первой
    by_task = work / "grades_by_task.csv"
    rows = []
    with _open(work) as gb:
        for assignment in gb.assignments:
            for submission in gb.assignment_submissions(assignment.name):
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        rows.append(
                            [
                                submission.student.id,
                                assignment.name,
                                grade.name,
                                "" if grade.auto_score is None else grade.auto_score,
                                grade.max_score,
                            ]
                        )
    header = ["student_id", "assignment", "grade_id", "auto_score", "max_score"]
    write_csv(by_task, header, rows)
    _sort_rows(by_task)
    return grades, by_task

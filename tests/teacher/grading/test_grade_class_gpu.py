"""GPU-лабораторные (7.1, 7.5, 7.6) в общем оценивании класса: учебный режим, те же проверки.

Баллы проверяет tests/teacher/grading/test_grade_class.py для всего класса; здесь — что отчёты
называют
ошибку по-русски и что оценивание само включило учебный режим.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from corpus import LAB5, LAB6

from tests.teacher.grading.test_grade_class import report
from tests.teacher.records.test_class_tables_snapshot import class_tables

from submissions import read_csv

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


def lab5_test_points() -> float:
    """Баллы автопроверки 7.5: все ячейки-тесты выпуска (письменные ответы — вручную)."""
    from submissions import student_notebook

    cells = student_notebook(LAB5)["cells"]
    grading = [cell["metadata"].get("nbgrader", {}) for cell in cells]
    return sum(g.get("points", 0) for g in grading if g.get("grade") and not g.get("solution"))


#: Помощник, который ломает keras, keras-hub и модель для всех, если бы ядра делили память.
BREAKS_KERAS = """import keras, keras_hub
keras.optimizers.AdamW = None
keras_hub.models.Gemma3CausalLM.from_preset = None
model.backbone.enable_lora = None
keras.config.set_floatx("float16")
"""


def test_what_one_work_patches_in_keras_stays_in_that_work(tmp_path, sandbox, fresh_work):
    """Две работы 7.5 одной заготовки ядер по очереди: порча keras первой — не у второй.

    Работы оцениваются по одной в порядке имён папок: первая портит keras, keras-hub и модель.
    """
    from dataclasses import replace

    from corpus import with_cell

    from feedback.teacher.core.settings import Settings
    from feedback.teacher.grading import grade

    from submissions import read_csv, submission, write_submission

    folder = tmp_path / "submitted"
    patcher = with_cell(submission(LAB5), BREAKS_KERAS, before="enable_lora")
    write_submission(folder, "a_breaks_keras", LAB5, patcher)
    write_submission(folder, "b_honest", LAB5, submission(LAB5))
    settings = replace(Settings.from_env(), work=fresh_work(tmp_path / "work"))
    grade.grade(folder, jobs=1, settings=settings)
    scores = {r["student_id"]: float(r["score"]) for r in read_csv(settings.work / "grades.csv")}
    full = lab5_test_points()
    assert scores["b_honest"] == full and scores["a_breaks_keras"] < full
    kernels = {r["student_id"]: r["kernel"] for r in read_csv(settings.work / "timings.csv")}
    assert kernels == {"a_breaks_keras": "template", "b_honest": "template"}


#: Таблицы, по которым видно, как оценена работа: баллы по заданиям, ошибки, что не вышло и
#: что посмотреть глазами (в grades.csv ещё и время сдачи, в timings.csv — секунды).
OUTCOME_TABLES = ("grades_by_task.csv", "mistakes.csv", "problems.csv", "needs_review.csv")


def outcome_rows(work: Path, folder: Path, students: set[str]) -> dict[str, list[list[str]]]:
    """Строки таблиц итогов для ``students`` без путей и имён папок этого запуска.

    Работы идут в два процесса, поэтому строки упорядочены сортировкой, а не временем.
    """
    tables = class_tables(work, folder)
    found = {}
    for name in OUTCOME_TABLES:
        rows = csv.reader(io.StringIO(tables[name], newline=""))
        header = next(rows)
        column = header.index("student_id")
        found[name] = sorted(row for row in rows if row[column] in students)
    return found


def test_fresh_kernels_grade_every_gpu_work_as_templates_do(
    graded_class, tmp_path, fresh_work, monkeypatch
):
    """Ядра из заготовок не меняют итогов: каждая GPU-работа корпуса — как с ядром с нуля.

    Класс (фикстура ``graded_class``) оценивается с ядрами из прогретых заготовок. Здесь те же
    работы GPU-лабораторных оцениваются ещё раз с теми же настройками и тем же секретом
    случаев, но каждое ядро запускается с нуля, как до заготовок (``warm_kernels=False``):
    баллы, ошибки, problems.csv и needs_review.csv — строка в строку те же.
    """
    from corpus import class_settings, use_class_secret

    from feedback.teacher.core.labs import is_gpu_notebook
    from feedback.teacher.grading import grade

    from submissions import student_notebook

    gpu = [w for w in graded_class.works if is_gpu_notebook(student_notebook(w.graded_as or w.lab))]
    students = {work.student for work in gpu}
    assert len(students) >= 9
    folder = tmp_path / "submitted"
    for work in gpu:
        work.write(folder)
    monkeypatch.delenv("COURSE7_TINY", raising=False)
    settings = class_settings(fresh_work(tmp_path / "work"), warm_kernels=False)
    use_class_secret(settings.work)
    grade.grade(folder, jobs=2, settings=settings)

    kernels = {r["kernel"] for r in read_csv(settings.work / "timings.csv") if r["kernel"]}
    assert kernels == {"fresh"}
    fresh = outcome_rows(settings.work, folder, students)
    warm = outcome_rows(graded_class.work, graded_class.folder, students)
    assert all(fresh[name] for name in ("grades_by_task.csv", "mistakes.csv", "needs_review.csv"))
    assert fresh == warm

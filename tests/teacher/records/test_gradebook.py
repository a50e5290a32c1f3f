"""Что значит «ждёт преподавателя»: одно правило для отчёта, grades.csv, сводки и выгрузки.

Работа 7.4 записана в базу так же, как её пишет ``make grade`` (:func:`gradebook.recording`):
у неё находка для ручного просмотра (все проверки автопроверки помечены needs manual grade)
и написанный, но не оценённый ответ на вопрос 1. «Ждёт ручной оценки» (pending) — только
этот ответ: 1 балл и в отчёте учащегося, и в grades.csv, и в summary.html; 10 баллов
проверок на просмотре — свой столбец. В Moodle работа не идёт, пока не готово и то и другое.
"""

from __future__ import annotations

import json
from html.parser import HTMLParser

import nbformat
import pytest
from bs4 import BeautifulSoup

from feedback.teacher.core.results import Finding, TaskOutcome, UnitResult
from feedback.teacher.core.settings import Settings
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.course.release import ROOT
from feedback.teacher.lms import export
from feedback.teacher.pages import analytics, summary
from feedback.teacher.records import gradebook

from submissions import read_csv, record_unit

LAB4 = "lab_7_4_gpu_memory"
ANSWER = "Состояние оптимизатора Adam: два момента на каждый параметр."
#: Баллы автопроверки 7.4 (пять проверок по 1) и письменного ответа на вопрос 1.
AUTO_POINTS, ANSWER_POINTS = 5.0, 2.0


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    """База оценок с одной работой 7.4: находка для просмотра и неоценённый ответ."""
    from nbgrader.preprocessors import SaveCells

    work = tmp_path_factory.mktemp("flagged-work")
    release = ROOT / "notebooks" / LAB4 / f"{LAB4}.ipynb"
    with gradebook._open(Workspace(work)) as gb:
        gb.update_or_create_assignment(LAB4)
    db = f"sqlite:///{work / 'gradebook.db'}"
    resources = {"nbgrader": {"notebook": LAB4, "assignment": LAB4, "db_url": db}}
    SaveCells().preprocess(nbformat.read(release, as_version=4), resources)
    notebook = nbformat.read(release, as_version=4)
    tests = {}
    for cell in notebook.cells:
        grading = cell.metadata.get("nbgrader", {})
        if grading.get("grade_id") == "reflection_largest":
            cell.source = ANSWER
        if grading.get("grade") and not grading.get("solution"):
            tests[grading["grade_id"]] = TaskOutcome(score=0.0, points=grading["points"])
    finding = Finding(cell="Задание 1", line=1, code="import builtins", reason="подмена")
    autograded = nbformat.from_dict(json.loads(nbformat.writes(notebook)))
    result = UnitResult("ivanov", LAB4, autograded, tests, review=[finding])
    record_unit(Workspace(work), result)
    return work


@pytest.fixture
def flagged_work(recorded, tmp_path):
    """Своя копия рабочей папки :func:`recorded`: тест ставит в ней оценки."""
    import shutil

    return shutil.copytree(recorded, tmp_path / "work")


def _set_manual(work, grade_id: str, score: float) -> None:
    """Как formgrader: ручная оценка, и задание больше не ждёт проверки."""
    with gradebook._open(Workspace(work)) as gb:
        grade = gb.find_grade(grade_id, LAB4, LAB4, "ivanov")
        grade.manual_score = score
        grade.needs_manual_grade = False
        gb.db.commit()


def _report_pending(work) -> str:
    """Строка итога отчёта учащегося: сколько баллов «после проверки преподавателем»."""
    from feedback.teacher.pages.reports import ReportWriter

    path = work / "autograded" / "ivanov" / LAB4 / f"{LAB4}.ipynb"
    html = ReportWriter(Workspace(work)).write("ivanov", LAB4, path).read_text(encoding="utf-8")
    return " ".join(BeautifulSoup(html, "html.parser").find("h4").get_text(" ").split())


class _PendingRows(HTMLParser):
    def __init__(self):
        super().__init__()
        self.rows = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "tr" and "data-pending" in attrs:
            self.rows.append((float(attrs["data-pending"]), float(attrs["data-flagged"])))


def _summary_pending(work) -> list[tuple[float, float]]:
    data = analytics.class_data(Workspace(work), Settings().labs)
    parsed = _PendingRows()
    parsed.feed(summary.render(data, Workspace(work)))
    return parsed.rows


def _grades(work) -> dict[str, str]:
    grades, _ = gradebook.export(Workspace(work))
    (row,) = read_csv(grades)
    return row


def test_pending_means_one_thing_in_report_grades_summary_and_export(flagged_work):
    work = flagged_work
    result = gradebook.results(Workspace(work))[("ivanov", LAB4)]
    assert (result.pending_points, result.flagged_points) == (ANSWER_POINTS, AUTO_POINTS)
    row = _grades(work)
    assert (row["pending_manual_points"], row["needs_review_points"]) == ("2.0", "5.0")
    # Учащийся видит те же 2 балла, что преподаватель в grades.csv и в сводке.
    assert _report_pending(work).endswith("ещё 2 балла — после проверки преподавателем")
    assert _summary_pending(work) == [(ANSWER_POINTS, AUTO_POINTS)]
    # В Moodle — пусто, а в отзыве сказано, чего работа ждёт.
    assert export.final_score(result) is None
    comment = export.comment(result, LAB4, "7.4")
    assert "ещё 2 балла из 13" in comment and "проверки на 5 баллов" in comment


def test_graded_answer_and_reviewed_checks_each_clear_their_own_column(flagged_work):
    work = flagged_work
    _set_manual(work, "reflection_largest", 2.0)  # ответ оценён, просмотр — ещё нет
    result = gradebook.results(Workspace(work))[("ivanov", LAB4)]
    row = _grades(work)
    assert (row["pending_manual_points"], row["needs_review_points"]) == ("0.0", "5.0")
    assert _summary_pending(work) == [(0.0, AUTO_POINTS)]
    assert export.final_score(result) is None
    assert "ручной проверки" not in export.comment(result, LAB4, "7.4")

    for grade_id in result.tasks:  # преподаватель посмотрел работу: оценки проверок — его
        if grade_id.startswith("check_"):
            _set_manual(work, grade_id, 0.0)
    result = gradebook.results(Workspace(work))[("ivanov", LAB4)]
    row = _grades(work)
    assert (row["pending_manual_points"], row["needs_review_points"]) == ("0.0", "0.0")
    assert _summary_pending(work) == []
    assert export.final_score(result) == ANSWER_POINTS


def test_a_task_waits_for_the_teacher_in_exactly_one_way():
    written = gradebook.TaskScore(auto=None, manual=None, max=1, needs_manual=True)
    flagged = gradebook.TaskScore(auto=2.0, manual=None, max=2, needs_manual=True)
    graded = gradebook.TaskScore(auto=None, manual=1.0, max=1, needs_manual=False)
    untouched = gradebook.TaskScore(auto=0.0, manual=None, max=1, needs_manual=False)
    assert [(t.pending, t.flagged, t.score) for t in (written, flagged, graded, untouched)] == [
        (True, False, None),
        (False, True, None),
        (False, False, 1.0),
        (False, False, 0.0),
    ]

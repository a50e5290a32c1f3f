"""Ручные оценки между запусками make grade: за преподавателем, пока оценённое им то же.

Повторный запуск с той же работой не просит проверить снова уже проверенное; работа, в
которой учащийся изменил оценённый письменный ответ, снова ждёт проверки: прежние балл и
комментарий — в manual_archive.csv, строка в changes.csv, в отчёте — «ожидает проверки», в
выгрузке для Moodle — пусто, а не прежний балл.
"""

from __future__ import annotations

import re
from dataclasses import replace

from markupsafe import escape

from feedback.teacher.commands import export as export_command
from feedback.teacher.commands import feedback as feedback_command
from feedback.teacher.core.settings import Settings
from feedback.teacher.core.tables import ManualArchiveRow, read_rows
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.grading import grade as grading
from feedback.teacher.lms import export
from feedback.teacher.pages import reports
from feedback.teacher.records import gradebook, ledger
from feedback.teacher.records.ledger import ANSWER_CHANGED

from submissions import read_csv, submission, write_submission

LAB2 = "lab_7_2_training_flops"
ANSWER = "reflection_scaling"
FIRST = "FLOPs растут в 100 раз: и параметров, и токенов в 10 раз больше."
SECOND = "Переписал: в 100 раз, потому что 6·P·N линейна и по P, и по N."
COMMENT = "Верно, но почему именно произведение?"


def _grade_once(settings: Settings, folder, answer: str) -> None:
    write_submission(folder, "ivanov", LAB2, submission(LAB2, {ANSWER: answer}))
    grading.grade(folder, jobs=1, settings=settings)


def _manual(work, score: float, comment: str) -> None:
    """Как formgrader: балл и комментарий к ответу, и задание больше не ждёт проверки."""
    with gradebook._open(Workspace(work)) as gb:
        grade = gb.find_grade(ANSWER, LAB2, LAB2, "ivanov")
        grade.manual_score, grade.needs_manual_grade = score, False
        gb.find_comment(ANSWER, LAB2, LAB2, "ivanov").manual_comment = comment
        gb.db.commit()


def _task(work) -> gradebook.TaskScore:
    return gradebook.results(Workspace(work))[("ivanov", LAB2)].tasks[ANSWER]


def _progress(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line.startswith("[")]


def test_a_manual_grade_stays_until_the_graded_answer_changes(
    tmp_path, sandbox, fresh_work, capsys
):
    settings = replace(Settings.from_env(), work=fresh_work(tmp_path / "work"))
    work, folder = settings.work, tmp_path / "submitted"
    capsys.readouterr()
    _grade_once(settings, folder, FIRST)
    assert _task(work).pending  # письменный ответ ждёт преподавателя
    # Строка хода называет, сколько баллов ждёт на самом деле: второй вопрос не тронут (0).
    (line,) = _progress(capsys)
    assert "автопроверка: 4 из 4, ещё 1 — вручную" in line, line
    _manual(work, 1.0, COMMENT)

    # Та же работа ещё раз (исправили проверку, перезапустили): оценка и комментарий — те же,
    # formgrader не просит проверить ответ снова, и строка хода не называет ответ ждущим.
    _grade_once(settings, folder, FIRST)
    (line,) = _progress(capsys)
    assert "автопроверка: 4 из 4, ручной оценки не ждёт" in line, line
    task = _task(work)
    assert (task.manual, task.needs_manual, task.pending) == (1.0, False, False)
    # changes.csv называет оценку преподавателя, поставленную между запусками, — и только её.
    (change,) = [r for r in read_csv(work / Workspace.CHANGES) if r["task"] == ANSWER]
    assert (change["old_points"], change["new_points"], change["why"]) == ("", "1", "ручная оценка")

    # Учащийся переписал ответ и сдал заново: оценка снята, ответ снова ждёт проверки.
    _grade_once(settings, folder, SECOND)
    task = _task(work)
    assert (task.manual, task.needs_manual, task.pending) == (None, True, True)
    (change,) = [r for r in read_csv(work / Workspace.CHANGES) if r["task"] == ANSWER]
    assert (change["old_points"], change["new_points"]) == ("1", "")
    assert change["why"] == ledger.ANSWER_CHANGED
    (archived,) = read_csv(work / Workspace.MANUAL_ARCHIVE)
    assert (archived["manual_points"], archived["comment"]) == ("1", COMMENT)
    # Что изменилось — видно: прежний оценённый ответ рядом с новым.
    assert (archived["old_answer"], archived["new_answer"]) == (FIRST, SECOND)
    (line,) = _progress(capsys)
    assert "автопроверка: 4 из 4, ещё 1 — вручную" in line, line
    with gradebook._open(Workspace(work)) as gb:
        assert gb.find_comment(ANSWER, LAB2, LAB2, "ivanov").manual_comment is None

    # Отчёт, таблица оценок и выгрузка для Moodle: ждёт проверки, а не прежние баллы.
    reports.rewrite_all(Workspace(work))
    (report,) = (work / "feedback_reports" / "ivanov").glob("*/*.html")
    html = report.read_text(encoding="utf-8")
    assert "ожидает проверки преподавателем" in html and COMMENT not in html
    gradebook.export(Workspace(work))
    (row,) = read_csv(work / "grades.csv")
    assert float(row["pending_manual_points"]) >= 1
    result = gradebook.results(Workspace(work))[("ivanov", LAB2)]
    assert export.final_score(result) is None  # пусто в Moodle, а не прежние баллы


def test_a_grade_given_after_the_last_run_and_taken_by_the_next_is_in_changes(
    tmp_path, sandbox, fresh_work
):
    """Обычный семестр: make grade, оценка в formgrader, учащийся переписал ответ, make grade.
    Снимок прошлого запуска оценки не знает, а changes.csv и manual_archive.csv — знают."""
    settings = replace(Settings.from_env(), work=fresh_work(tmp_path / "work"))
    work, folder = settings.work, tmp_path / "submitted"
    _grade_once(settings, folder, FIRST)
    _manual(work, 1.0, COMMENT)
    _grade_once(settings, folder, SECOND)
    assert _task(work).pending
    (change,) = [r for r in read_csv(work / Workspace.CHANGES) if r["task"] == ANSWER]
    assert (change["old_points"], change["new_points"], change["why"]) == (
        "1",
        "",
        ledger.ANSWER_CHANGED,
    )
    (archived,) = read_csv(work / Workspace.MANUAL_ARCHIVE)
    assert (archived["manual_points"], archived["comment"]) == ("1", COMMENT)
    assert not (work / Workspace.SCORES_START).exists()  # запуск дошёл до конца


def test_an_archived_grade_is_written_once_even_if_its_comment_looks_like_a_formula(tmp_path):
    """Повтор прерванного запуска снова снимает ту же оценку: строка архива не удваивается.

    В файле комментарий «=…» — с апострофом (правило CSV injection), а новая строка — без
    него; это одна и та же строка.
    """
    row = ManualArchiveRow("ivanov", LAB2, ANSWER, "1", "=неверно, но близко", ANSWER_CHANGED)
    other = ManualArchiveRow("petrova", LAB2, ANSWER, "2", "Верно.", ANSWER_CHANGED)
    ledger.archive_manual(Workspace(tmp_path), [row])
    ledger.archive_manual(Workspace(tmp_path), [row, other])
    archived = read_rows(tmp_path / Workspace.MANUAL_ARCHIVE, ManualArchiveRow)
    assert [(item.student_id, item.comment) for item in archived] == [
        ("ivanov", "'=неверно, но близко"),
        ("petrova", "Верно."),
    ]


CHECK = "check_compute_num_flops"


def test_an_override_survives_a_late_archive_with_a_broken_file_and_a_regrade(
    tmp_path, sandbox, fresh_work
):
    """Преподаватель исправил балл проверки автопроверки; потом пришёл архив опоздавших, где
    у того же учащегося битый файл, а потом — перепроверка с тем же первым архивом. Оценка
    остаётся, битый файл — строка problems.csv, в выгрузке — балл преподавателя."""
    settings = replace(Settings.from_env(), work=fresh_work(tmp_path / "work"))
    work, first, late = settings.work, tmp_path / "first", tmp_path / "late"
    write_submission(first, "ivanov", LAB2, submission(LAB2))
    grading.grade(first, jobs=1, settings=settings)
    with gradebook._open(Workspace(work)) as gb:
        grade = gb.find_grade(CHECK, LAB2, LAB2, "ivanov")
        grade.manual_score, grade.needs_manual_grade = 0.5, False
        gb.db.commit()
    write_submission(late, "petrova", LAB2, submission(LAB2))
    broken = late / "ivanov" / LAB2 / f"{LAB2}.ipynb"
    broken.parent.mkdir(parents=True)
    broken.write_text("{не тетрадка", encoding="utf-8")
    for folder in (late, first):
        grading.grade(folder, jobs=1, settings=settings)
        result = gradebook.results(Workspace(work))[("ivanov", LAB2)]
        assert (result.tasks[CHECK].manual, result.tasks[CHECK].waiting) == (0.5, False), folder
        assert export.final_score(result) is not None
        if folder == late:  # битый файл опоздавших — строка problems.csv
            problems = read_csv(work / "problems.csv")
            assert [row["student_id"] for row in problems] == ["ivanov"]
    assert not (work / Workspace.MANUAL_ARCHIVE).exists()


def _summary(work) -> str:
    return (work / "summary.html").read_text(encoding="utf-8")


def _waiting_rows(work) -> list[str]:
    """Строки раздела «Ждут преподавателя» сводки (учащийся каждой)."""
    section = _summary(work).split('<section id="pending">', 1)[1].split("</section>", 1)[0]
    return re.findall(r'<tr data-lab="[^"]*" data-pending[^>]*><td>(?:<a [^>]*>)?([^<]*)', section)


def test_the_summary_follows_manual_grading_and_shows_what_changed(
    tmp_path, sandbox, fresh_work, monkeypatch
):
    """make feedback и make export после formgrader пишут сводку заново; снятая оценка — с
    прежними баллом и комментарием и разницей ответов, ссылки на changes.csv и архив."""
    settings = replace(Settings.from_env(), work=fresh_work(tmp_path / "work"))
    work, folder = settings.work, tmp_path / "submitted"
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(work))
    _grade_once(settings, folder, FIRST)
    assert _waiting_rows(work) == ["ivanov"]
    _manual(work, 1.0, COMMENT)
    assert feedback_command.main([]) == 0  # make feedback
    assert _waiting_rows(work) == []
    assert "Все работы проверены." in _summary(work)

    _grade_once(settings, folder, SECOND)
    page = _summary(work)
    assert _waiting_rows(work) == ["ivanov"]
    assert 'href="changes.csv"' in page and 'href="manual_archive.csv"' in page
    reopened = page.split('<section id="reopened">', 1)[1].split("</section>", 1)[0]
    assert str(escape(COMMENT)) in reopened
    assert f'<span class="old">− {escape(FIRST)}</span>' in reopened
    assert f'<span class="new">+ {escape(SECOND)}</span>' in reopened
    _manual(work, 0.5, "Теперь верно.")
    (work / "summary.html").unlink()
    assert export_command.main([]) == 0  # make export
    page = _summary(work)
    assert _waiting_rows(work) == [] and "Изменённых после ручной проверки ответов нет." in page
    assert re.search(r"Состояние на \d{1,2} [а-я]+ \d{4}, \d\d:\d\d", page)

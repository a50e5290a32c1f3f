"""formgrader над оценённым классом: каждая работа открывается, и ни один скрипт из неё не
выполняется в браузере преподавателя.

Настоящий ``jupyter server`` с расширением formgrader из nbgrader, корень — курс (его
nbgrader_config.py), папка оценивания — класс из tests/support/corpus.py (фикстура
``graded_class``). Через API formgrader перебираются все работы всех лабораторных: список
совпадает с оценёнными работами (страницу каждой открывает в Chromium
tests/teacher/pages/test_hostile_pages_browser.py). Работа со скриптами в ответах и в выводе
открывается в Chromium
без окна, и видно, что сам formgrader на ней работает.

Ручная проверка — тоже в браузере, но над копией папки оценивания (общий класс остаётся без
ручных оценок: это проверяет tests/teacher/grading/test_grade_class.py): баллы и комментарий
к письменному ответу
ставятся в formgrader, переживают перезагрузку страницы и после ``make feedback``
(:func:`feedback.teacher.pages.reports.rewrite_all`) оказываются в отчёте учащегося, а критерии
оценки видны только в formgrader.

Повторная сдача проходит весь путь преподавателя на своей рабочей папке: архив Moodle →
``make grade`` → оценка в formgrader в Chromium → ``make feedback`` → ``make export``, затем
архив с переписанным ответом и те же команды: везде «ждёт ручной проверки», а не прежний балл.

Браузерная часть пропускается без Chromium (или падает при ``COURSE7_REQUIRE_BROWSER=1``).
"""

from __future__ import annotations

import json
import re
import shutil
import time
import urllib.error
import urllib.request
from collections import Counter

import pytest
from bs4 import BeautifulSoup
from corpus import LAB2, PWNED
from moodle_support import download_zip

from feedback.teacher.core.workspace import Workspace

from browser_support import (
    ROOT,
    SCREENSHOTS,
    chromium_or_skip,
    formgrader_server,
    grade_in_formgrader,
    open_submission,
    server_page,
)
from submissions import read_csv, submission

#: Страницы в настоящем Chromium: среди тестов класса они идут первыми (tests/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.browser]

HOSTILE = "t72_script_in_answers"
TITLE = "Лабораторная 7.2. Оцените FLOPs обучения"


@pytest.fixture(scope="module")
def formgrader(graded_class, tmp_path_factory):
    """formgrader над папкой оценивания класса; сервер останавливается в любом случае."""
    with formgrader_server(
        ROOT, tmp_path_factory.mktemp("formgrader"), graded_class.work
    ) as server:
        yield server


def fetch(server, path: str) -> tuple[int, str]:
    """GET с токеном (за переадресацией); код ответа и текст страницы, даже при ошибке."""
    request = urllib.request.Request(
        f"{server.url}{path}", headers={"Authorization": f"token {server.token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.read().decode("utf-8", errors="replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", errors="replace")


def api(server, path: str):
    status, body = fetch(server, f"/formgrader/api/{path}")
    assert status == 200, (path, status, body[:500], server.log_tail())
    return json.loads(body)


def submissions(server) -> list[dict]:
    """Все работы всех лабораторных — как их перечисляет вкладка Manual Grading."""
    found = []
    for assignment in api(server, "assignments"):
        for notebook in api(server, f"notebooks/{assignment['name']}"):
            listed = api(server, f"submitted_notebooks/{assignment['name']}/{notebook['name']}")
            found += [{**item, "assignment": assignment["name"]} for item in listed]
    return found


def test_every_graded_work_is_listed(formgrader, graded_class):
    """Список работ formgrader — ровно оценённые работы; каждую страницу из этого списка
    открывает в Chromium tests/teacher/pages/test_hostile_pages_browser.py (код 200, отрисована,
    без скриптов)."""
    found = submissions(formgrader)
    on_disk = {
        (path.parent.parent.name, path.parent.name, path.stem)
        for path in (graded_class.work / "autograded").glob("*/*/*.ipynb")
    }
    assert {(s["student"], s["assignment"], s["name"]) for s in found} == on_disk
    graded = {(w.student, w.graded_as or w.lab) for w in graded_class.works if w.points}
    assert graded <= {(s["student"], s["assignment"]) for s in found}


def test_manage_assignments_has_no_exchange_warning(formgrader):
    status, body = fetch(formgrader, "/formgrader/manage_assignments")
    assert status == 200
    assert 'id="warning-exchange"' not in body, "нет папки exchange"


def test_report_template_is_for_reports_only(graded_class, tmp_path, monkeypatch):
    """Шаблон отчёта задан экспортёру отчётов, а ``nbgrader generate_feedback`` (и кнопка
    Generate Feedback в formgrader) по-прежнему пишет русский отчёт."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config.loader import PyFileConfigLoader

    from feedback.teacher.pages.reports import ReportExporter

    monkeypatch.setenv("COURSE7_GRADING_DIR", str(graded_class.work))
    config = PyFileConfigLoader("nbgrader_config.py", path=str(ROOT)).load_config()
    assert HTMLExporter(config=config).template_name != "feedback_ru"
    assert ReportExporter(config=config).template_name == "feedback_ru"

    config.CourseDirectory.feedback_directory = str(tmp_path)
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id, coursedir.student_id = LAB2, "h72_correct"
    converter = GenerateFeedback(coursedir=coursedir, config=config)
    assert converter.exporter_class is ReportExporter
    converter.start()
    html = (tmp_path / "h72_correct" / LAB2 / f"{LAB2}.html").read_text(encoding="utf-8")
    assert "Ваш ответ" in html and f"{TITLE} — 4 из 6 баллов" in html


def test_lab_list_counts_the_graded_works(formgrader, graded_class):
    """«Submissions» в списке лабораторных: работы не из submitted/ (архив, другая папка)
    тоже считаются — formgrader считает папки submitted/<учащийся>/<лаб>/."""
    graded = Counter(
        path.parent.name for path in (graded_class.work / "autograded").glob("*/*/*.ipynb")
    )
    listed = {item["name"]: item["num_submissions"] for item in api(formgrader, "assignments")}
    assert graded[LAB2] > 10
    assert {lab: listed.get(lab) for lab in graded} == dict(graded)
    # Папки пустые: make grade без аргументов (оценивает submitted/) не найдёт в них тетрадок.
    assert not list((graded_class.work / "submitted").rglob("*.ipynb"))


def _hostile_submission(server) -> str:
    listed = api(server, f"submitted_notebooks/{LAB2}/{LAB2}")
    return next(item["id"] for item in listed if item["student"] == HOSTILE)


#: Обработчики событий в тетрадке и скрипты из работы (у навигации formgrader свои onclick).
_ACTIVE_JS = f"""
() => ({{
  handlers: [...document.querySelectorAll('#notebook *')]
    .filter(el => [...el.attributes].some(a => a.name.startsWith('on'))).length,
  scripts: [...document.scripts].filter(s => s.textContent.includes('{PWNED}')).length,
}})
"""


def test_submission_page_in_browser_runs_no_script_from_the_work(formgrader):
    chromium = chromium_or_skip("браузерный тест formgrader")
    from playwright.sync_api import expect

    submission_id = _hostile_submission(formgrader)
    path = f"/formgrader/submissions/{submission_id}/"
    status, body = fetch(formgrader, path)
    assert status == 200
    title = re.search(r"<title>(.*?)</title>", body).group(1)
    assert title == LAB2
    with server_page(formgrader, chromium) as page:
        errors = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(formgrader.url + path, wait_until="load")
        page.wait_for_load_state("networkidle")
        # Сам formgrader работает: его скрипты загрузили баллы работы через API.
        expect(page.locator("input.score#check_compute_num_flops")).to_have_attribute(
            "placeholder", "2"
        )
        expect(page.locator(".rendered_html h1").first).to_contain_text(TITLE)
        answer = page.locator(".nbgrader_cell .rendered_html", has_text="Ответ со скриптом")
        expect(answer).to_be_visible()
        expect(page.locator(".output_html", has_text="вывод со скриптом")).to_be_visible()
        expect(page.locator("input.score#reflection_scaling")).to_be_visible()
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SCREENSHOTS / "formgrader_submission.png"))

        assert page.title() == title != PWNED
        assert page.evaluate(_ACTIVE_JS) == {"handlers": 0, "scripts": 0}
        # Без CDN встроенная настройка MathJax падает; других ошибок на странице нет.
        assert [error for error in errors if "MathJax" not in error] == []

        page.goto(formgrader.url + "/formgrader/manage_assignments", wait_until="load")
        expect(page.locator("#main-table")).to_contain_text(LAB2)
        expect(page.locator("#warning-exchange")).to_have_count(0)


# --------------------------------------------------------------------------- ручная проверка

COMMENT = "Верно: ×100. Добавьте, почему FLOPs линейны и по P, и по N."
PENDING = "ожидает проверки преподавателем"


@pytest.fixture(scope="module")
def grading_copy(graded_class, tmp_path_factory):
    """Копия папки оценивания класса без кэшей: ручные оценки не попадают в общий класс."""
    copy = tmp_path_factory.mktemp("manual-grading") / "work"
    shutil.copytree(graded_class.work, copy, ignore=shutil.ignore_patterns("cache"))
    return copy


def _waiting_for_the_teacher(server) -> tuple[str, list[str]]:
    """Работа 7.2, где formgrader просит ручной оценки, и её ещё не проверенные ответы."""
    listed = api(server, f"submitted_notebooks/{LAB2}/{LAB2}")
    item = next(item for item in listed if item["student"] == HOSTILE)
    assert item["needs_manual_grade"]
    grades = api(server, f"grades?submission_id={item['id']}")
    waiting = sorted(
        grade["name"]
        for grade in grades
        if grade["cell_type"] == "markdown"
        and grade["needs_manual_grade"]
        and grade["auto_score"] is None
        and grade["manual_score"] is None
    )
    return item["id"], waiting


#: Ячейка прямо под ячейкой с полем баллов ``id`` (критерии стоят под ответом).
_NEXT_CELL_JS = """
(id) => document.getElementById(id).closest('.cell').nextElementSibling.innerText
"""


def test_manual_grading_in_formgrader_reaches_the_report(grading_copy, tmp_path):
    chromium = chromium_or_skip("ручная проверка в formgrader")
    from playwright.sync_api import expect

    from feedback.teacher.pages.reports import rewrite_all

    started = time.monotonic()
    with formgrader_server(ROOT, tmp_path / "server", grading_copy) as server:
        submission_id, waiting = _waiting_for_the_teacher(server)
        assert waiting == ["reflection_backward", "reflection_scaling"]
        graded, left = "reflection_scaling", "reflection_backward"
        with server_page(server, chromium) as page:
            open_submission(page, server.url, submission_id)
            score = page.locator(f"input.score#{graded}")
            comment = page.locator(f"textarea#{graded}-comment")
            expect(score).to_be_visible()
            expect(score).to_have_value("")

            # Критерии — прямо под ответом, с образцом из solutions/.
            criteria = page.evaluate(_NEXT_CELL_JS, graded)
            assert "Критерии оценки" in criteria and "Критерии для преподавателя" in criteria
            assert "10-кратно меньшем числе токенов" in criteria
            assert "Критерии для преподавателя" in page.evaluate(_NEXT_CELL_JS, left)

            # formgrader сохраняет по событию change (уход с поля) через свой API.
            grade_in_formgrader(page, graded, "0.5", COMMENT)

            page.reload(wait_until="load")
            page.wait_for_load_state("networkidle")
            expect(score).to_have_value("0.5")
            expect(comment).to_have_value(COMMENT)
            expect(page.locator(f"input.score#{left}")).to_have_value("")
            score.scroll_into_view_if_needed()
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / "formgrader_manual_grading.png"))

    written = rewrite_all(Workspace(grading_copy))  # то, что делает make feedback
    report = grading_copy / "feedback_reports" / HOSTILE / LAB2 / f"{LAB2}.html"
    assert report in written
    page = BeautifulSoup(report.read_text(encoding="utf-8"), "html.parser")
    toc = [" ".join(item.get_text().split()) for item in page.select("#toc li")]
    assert "Письменный ответ: Вопрос 1 (баллы: 0,5 из 1)" in toc
    assert f"Письменный ответ: Вопрос 2 (баллы: {PENDING}, до 1 балла)" in toc
    assert [item for item in toc if "Комментарий" in item] == [
        "Комментарий преподавателя: Вопрос 1"
    ]
    footers = [" ".join(div.get_text(" ").split()) for div in page.select(".panel-footer")]
    assert f"Комментарий преподавателя: {COMMENT}" in footers
    header = " ".join(page.find("h4").get_text().split())
    assert header == f"{TITLE} — 4,5 из 6 баллов, ещё 1 балл — после проверки преподавателем"
    text = page.get_text()
    assert "Критерии" not in text and "10-кратно меньшем числе токенов" not in text
    print(f"ручная проверка в formgrader и отчёт: {time.monotonic() - started:.1f} с")


# --------------------------------------------------------------------------- повторная сдача

ANSWER = "reflection_scaling"
FIRST = "FLOPs растут в 100 раз: и параметров, и токенов в 10 раз больше."
SECOND = "Переписал: в 100 раз, потому что 6·P·N линейна и по P, и по N."
KEPT = "В 100 раз: FLOPs ≈ 6·P·N, а P и N выросли в 10 раз."
IVANOV_COMMENT = "Верно, но почему именно произведение?"
PETROVA_COMMENT = "Верно и с формулой."
CLASS = (
    "id,first_name,last_name,email\n"
    "ivanov,Иван,Иванов,ivanov@example.org\n"
    "petrova,Анна,Петрова,petrova@example.org\n"
)
IVANOV, PETROVA = (
    "Иванов Иван_101_assignsubmission_file_",
    "Анна Петрова_102_assignsubmission_file_",
)
#: Ведомость задания Moodle, скачанная до первой выгрузки: оценок ещё нет.
SHEET = (
    'Идентификатор,"Полное имя","Адрес электронной почты",Статус,Оценка,'
    '"Максимальная оценка","Оценка может быть изменена",'
    '"Последнее изменение (представленный ответ)","Последнее изменение (оценка)",'
    '"Отзыв в виде комментария"\n'
    '"Участник 101","Иван Иванов",ivanov@example.org,"Ответы для оценки",,"6,00",Да,-,-,\n'
    '"Участник 102","Анна Петрова",petrova@example.org,"Ответы для оценки",,"6,00",Да,-,-,\n'
)


def _grade_in_browser(server, chromium, student: str, score: str, comment: str) -> None:
    """Балл и комментарий к письменному ответу — в formgrader, как их ставит преподаватель."""
    from playwright.sync_api import expect

    listed = api(server, f"submitted_notebooks/{LAB2}/{LAB2}")
    item = next(item for item in listed if item["student"] == student)
    with server_page(server, chromium) as page:
        open_submission(page, server.url, item["id"])
        expect(page.locator(f"input.score#{ANSWER}")).to_have_value("")
        grade_in_formgrader(page, ANSWER, score, comment)


def _manual_state(server, student: str) -> tuple[bool, object]:
    """Что formgrader показывает у ответа: ждёт ли проверки и какой ручной балл."""
    listed = api(server, f"submitted_notebooks/{LAB2}/{LAB2}")
    item = next(item for item in listed if item["student"] == student)
    (grade,) = [g for g in api(server, f"grades?submission_id={item['id']}") if g["name"] == ANSWER]
    return item["needs_manual_grade"], grade["manual_score"]


def _by(rows: list[dict], *keys: str) -> dict:
    """Строки таблицы по значению столбца (или по кортежу значений нескольких столбцов)."""
    if len(keys) == 1:
        return {row[keys[0]]: row for row in rows}
    return {tuple(row[key] for key in keys): row for row in rows}


def test_a_resubmitted_answer_waits_for_the_teacher_again_everywhere(
    tmp_path, monkeypatch, sandbox, fresh_work, capsys
):
    """Ручная оценка в formgrader (Chromium), учащийся переписал ответ и сдал заново:
    ``make grade`` → ``make feedback`` → ``make export`` — отчёт, summary.html, grades.csv,
    changes.csv, moodle_grades.csv и ведомость говорят «ждёт ручной проверки», а не прежний
    балл. У Петровой ответ тот же — её оценка и комментарий остаются."""
    chromium = chromium_or_skip("ручная проверка и повторная сдача")

    from feedback.teacher.commands import export as export_command
    from feedback.teacher.commands import feedback as feedback_command
    from feedback.teacher.grading import grade as grading
    from feedback.teacher.records import gradebook, ledger

    started = time.monotonic()
    work = fresh_work(tmp_path / "work")
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(work))
    (tmp_path / "students.csv").write_text(CLASS, encoding="utf-8")
    sheet = tmp_path / "ведомость.csv"
    sheet.write_text(SHEET, encoding="utf-8")

    def semester_step(zip_name: str, ivanov_answer: str) -> None:
        """Архив Moodle → make grade → (formgrader) → make feedback → make export."""
        works = {
            IVANOV: submission(LAB2, {ANSWER: ivanov_answer}),
            PETROVA: submission(LAB2, {ANSWER: KEPT}),
        }
        archive = download_zip(tmp_path / zip_name, LAB2, works)
        grading.grade(archive, jobs=2, roster_file=tmp_path / "students.csv")

    def feedback_and_export() -> dict[str, dict[str, str]]:
        assert feedback_command.main([]) == 0
        assert export_command.main(["--worksheet", str(sheet), "--lab", "7.2"]) == 0
        return _by(read_csv(Workspace(work).moodle_grades), "id")

    semester_step("7.2.zip", FIRST)
    with formgrader_server(ROOT, tmp_path / "server-1", work) as server:
        assert _manual_state(server, "ivanov") == (True, None)
        _grade_in_browser(server, chromium, "ivanov", "1", IVANOV_COMMENT)
        _grade_in_browser(server, chromium, "petrova", "1", PETROVA_COMMENT)
    moodle = feedback_and_export()
    assert (moodle["ivanov"][TITLE], moodle["petrova"][TITLE]) == ("5", "5")  # оценки дошли

    semester_step("7.2-again.zip", SECOND)  # Иванов переписал ответ, Петрова сдала то же
    with formgrader_server(ROOT, tmp_path / "server-2", work) as server:
        assert _manual_state(server, "ivanov") == (True, None)  # formgrader снова просит
        assert _manual_state(server, "petrova") == (False, 1.0)
    moodle = feedback_and_export()
    capsys.readouterr()

    # Отчёт: ответ ждёт проверки, прежних балла и комментария нет.
    report = work / "feedback_reports" / "ivanov" / LAB2 / f"{LAB2}.html"
    page = BeautifulSoup(report.read_text(encoding="utf-8"), "html.parser")
    toc = [" ".join(item.get_text().split()) for item in page.select("#toc li")]
    assert f"Письменный ответ: Вопрос 1 (баллы: {PENDING}, до 1 балла)" in toc
    assert IVANOV_COMMENT not in page.get_text() and SECOND in page.get_text()
    header = " ".join(page.find("h4").get_text().split())
    assert header == f"{TITLE} — 4 из 6 баллов, ещё 1 балл — после проверки преподавателем"
    kept = (work / "feedback_reports" / "petrova" / LAB2 / f"{LAB2}.html").read_text("utf-8")
    assert PETROVA_COMMENT in kept and PENDING not in kept

    # summary.html: в «Ждут преподавателя» — Иванов с этим ответом, Петровой там нет.
    summary = BeautifulSoup((work / "summary.html").read_text("utf-8"), "html.parser")
    rows = summary.select("section#pending tr")[1:]
    waiting = [[" ".join(cell.get_text().split()) for cell in row.find_all("td")] for row in rows]
    # Учащийся, лабораторная и задание — словами курса; баллы ждут оценки, на просмотре — ничего.
    assert waiting == [["ivanov", TITLE, "Вопрос 1", "1", "", "0"]]
    assert [row["data-lab"] for row in rows] == [LAB2]

    # grades.csv и changes.csv: балл ждёт проверки; почему — ответ изменён.
    grades = _by(read_csv(work / "grades.csv"), "student_id", "assignment")
    ivanov, petrova = grades[("ivanov", LAB2)], grades[("petrova", LAB2)]
    assert (ivanov["score"], ivanov["pending_manual_points"]) == ("4.0", "1.0")
    assert (petrova["score"], petrova["pending_manual_points"]) == ("5.0", "0.0")
    changed = _by(read_csv(work / Workspace.CHANGES), "student_id", "task")
    row = changed[("ivanov", ANSWER)]
    assert (row["old_points"], row["new_points"], row["why"]) == ("1", "", ledger.ANSWER_CHANGED)
    row = changed[("petrova", ANSWER)]  # её оценка с прошлого make grade — и осталась
    assert (row["old_points"], row["new_points"], row["why"]) == ("", "1", "ручная оценка")
    (archived,) = read_csv(work / Workspace.MANUAL_ARCHIVE)
    assert (archived["student_id"], archived["manual_points"], archived["comment"]) == (
        "ivanov",
        "1",
        IVANOV_COMMENT,
    )

    # Обе выгрузки для Moodle: у Иванова оценки нет, отзыв — «ждёт ручной проверки».
    assert moodle["ivanov"][TITLE] == ""
    assert "ждёт ручной проверки" in moodle["ivanov"][f"{TITLE} — отзыв"]
    assert moodle["petrova"][TITLE] == "5"
    worksheet = _by(read_csv(Workspace(work).worksheet(LAB2)), "Идентификатор")
    assert worksheet["Участник 101"]["Оценка"] == ""  # не выставлена
    assert worksheet["Участник 102"]["Оценка"] == "5,00"
    assert gradebook.results(Workspace(work))[("ivanov", LAB2)].pending_points == 1
    print(f"повторная сдача от архива до выгрузки: {time.monotonic() - started:.1f} с")

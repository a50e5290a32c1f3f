"""formgrader над оценённым классом: каждая работа открывается, и ни один скрипт из неё не
выполняется в браузере преподавателя.

Настоящий ``jupyter server`` с расширением formgrader из nbgrader, корень — курс (его
nbgrader_config.py), папка оценивания — класс из tests/corpus.py (фикстура
``graded_class``). Через API formgrader перебираются все работы всех лабораторных, и
страница каждой (та, на которую ведут ссылки formgrader) должна ответить 200: с шаблоном
отчёта для учащихся, заданным всем HTMLExporter, formgrader отвечал 500 на каждую.
Затем работа со скриптами в ответах и в выводе открывается в Chromium без окна.

Браузерная часть пропускается без Chromium (или падает при ``COURSE7_REQUIRE_BROWSER=1``).
"""

from __future__ import annotations

import json
import re
import urllib.error
import urllib.request

import pytest
from corpus import LAB2, PWNED

from browser_support import CHROMIUM_FLAGS, ROOT, SCREENSHOTS, chromium_or_skip, formgrader_server

pytestmark = pytest.mark.slow

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


def test_every_submission_page_opens(formgrader, graded_class):
    found = submissions(formgrader)
    on_disk = {
        (path.parent.parent.name, path.parent.name, path.stem)
        for path in (graded_class.work / "autograded").glob("*/*/*.ipynb")
    }
    assert {(s["student"], s["assignment"], s["name"]) for s in found} == on_disk
    graded = {(w.student, w.graded_as or w.lab) for w in graded_class.works if w.points}
    assert graded <= {(s["student"], s["assignment"]) for s in found}

    failed = {}
    for item in found:
        # Ссылка из списка работ formgrader; сервер переадресует на адрес с «/» в конце.
        status, body = fetch(formgrader, f"/formgrader/submissions/{item['id']}")
        rendered = 'id="notebook-container"' in body and "formgrade.js" in body
        if status != 200 or not rendered:
            failed[(item["student"], item["assignment"])] = (status, body[-300:])
    assert failed == {}, f"{failed}\n{formgrader.log_tail()}"


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

    from feedback.teacher.reports import ReportExporter

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
    assert "Ваш ответ" in html and "(баллы: 4.0 из 6.0)" in html


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
    from playwright.sync_api import expect, sync_playwright

    submission_id = _hostile_submission(formgrader)
    path = f"/formgrader/submissions/{submission_id}/"
    status, body = fetch(formgrader, path)
    assert status == 200
    title = re.search(r"<title>(.*?)</title>", body).group(1)
    assert title == LAB2
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            context = browser.new_context(
                extra_http_headers={"Authorization": f"token {formgrader.token}"},
                viewport={"width": 1280, "height": 900},
            )
            context.set_default_timeout(30_000)
            # Наружу сети нет и не нужно: MathJax с CDN и значки Colab отвечают сразу отказом.
            context.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url.startswith(formgrader.url + "/")
                    else route.abort()
                ),
            )
            page = context.new_page()
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
        finally:
            browser.close()

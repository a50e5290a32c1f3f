"""Каждый отчёт и каждая страница formgrader оценённого класса: ничего не выполняют и не грузят.

В классе (tests/support/corpus.py) есть работы со скриптами в ответах и выводе, с обработчиками
событий, со ссылками ``javascript:``, с обратными кавычками в коде заметки, с именем
файла-тегом и с «пикселями слежения» (картинки и стили с чужого адреса). Все страницы —
отчёты и страницы formgrader всех работ — разбираются без браузера
(:func:`page_checks.page_problems`): ни обработчиков, ни скриптов из работы, ни опасных
ссылок, ни ресурсов с другого адреса. А по одной странице на каждый вид враждебной работы
открывается в настоящем Chromium, где перехватываются все запросы: заголовок не стал PWNED, и
ни один запрос не ушёл дальше файла отчёта или сервера formgrader.
"""

from __future__ import annotations

import pytest
from corpus import PWNED
from page_checks import FORMGRADER_OWN, formgrader_handlers, page_problems

from browser_support import CHROMIUM_FLAGS, ROOT, chromium_or_skip, formgrader_server, server_page

#: Страницы в настоящем Chromium: среди тестов класса они идут первыми (tests/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.browser]

#: По работе на каждый вид враждебного содержимого (их страницы открываются в Chromium).
HOSTILE_KINDS = {
    "t72_script_in_answers": "скрипты и обработчики в ответах и выводе",
    "t72_javascript_links": "ссылки javascript: в ответе и выводе Markdown",
    "c72_backtick_in_code": "обратная кавычка в коде заметки для преподавателя",
    "x72_evil_file_name": "имя файла-тег в заметке",
    "t72_calls_home": "картинки и стили с чужого адреса",
}


@pytest.fixture(scope="module")
def formgrader(graded_class, tmp_path_factory):
    with formgrader_server(
        ROOT, tmp_path_factory.mktemp("formgrader-pages"), graded_class.work
    ) as server:
        yield server


def test_no_report_runs_or_loads_anything(graded_class):
    reports = sorted((graded_class.work / "feedback_reports").glob("*/*/*.html"))
    assert len(reports) > 50
    found = {}
    for report in reports:
        problems = page_problems(report.read_text(encoding="utf-8"), PWNED)
        if problems:
            found[report.parent.parent.name] = problems
    assert found == {}
    assert {report.parent.parent.name for report in reports} >= set(HOSTILE_KINDS)


def test_no_formgrader_page_runs_or_loads_anything(graded_class, formgrader):
    from tests.teacher.hub.test_formgrader_browser import fetch, submissions

    listed = submissions(formgrader)
    assert len(listed) > 50
    origin = formgrader.url.rsplit(":", 1)[0]  # http://127.0.0.1 — и любой его порт
    handlers = formgrader_handlers()
    assert "toggle_name(true);" in handlers  # скрыть имя — обработчик шаблона, а не работы
    found = {}
    for item in listed:
        status, body = fetch(formgrader, f"/formgrader/submissions/{item['id']}/")
        problems = page_problems(
            body,
            PWNED,
            origin=origin,
            scripts_allowed=True,
            known=FORMGRADER_OWN,
            own_handlers=handlers,
        )
        # Страница открылась и отрисована formgrader'ом — с его скриптом оценок: с шаблоном
        # отчёта, заданным всем HTMLExporter, formgrader отвечал 500 на каждую.
        if (
            status != 200
            or "formgrade.js" not in body
            or f"<title>{item['assignment']}" not in body
        ):
            problems.append(f"страница formgrader не отрисована ({status})")
        if problems:
            found[(item["student"], item["assignment"])] = problems
    assert found == {}


#: Что в открытой странице было бы следом работы: обработчики, её скрипты, опасные ссылки.
ACTIVE_JS = f"""
(root) => {{
  const scope = document.querySelector(root) || document.body;
  const all = [...scope.querySelectorAll('*')];
  return {{
    title: document.title,
    handlers: all.filter(el => [...el.attributes].some(a => a.name.startsWith('on'))).length,
    scripts: [...document.scripts].filter(s => s.textContent.includes('{PWNED}')).length,
    links: all.filter(el => /^\\s*(javascript|vbscript|data):/i.test(
      el.getAttribute('href') || el.getAttribute('xlink:href') || '')).length,
  }};
}}
"""
CLEAN = {"title_pwned": False, "handlers": 0, "scripts": 0, "links": 0, "requests": []}


def test_one_page_of_each_hostile_kind_in_chromium(graded_class, formgrader):
    """Отчёт и страница formgrader каждой враждебной работы — в Chromium, с перехватом запросов."""
    chromium = chromium_or_skip("страницы в браузере")
    from playwright.sync_api import sync_playwright

    from tests.teacher.hub.test_formgrader_browser import submissions

    ids = {item["student"]: item["id"] for item in submissions(formgrader)}
    seen = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            for student in HOSTILE_KINDS:
                (report,) = (graded_class.work / "feedback_reports" / student).glob("*/*.html")
                seen[(student, "отчёт")] = _open(browser, report.as_uri(), "main", "file:")
        finally:
            browser.close()
    with server_page(formgrader, chromium, timeout_ms=120_000) as page:
        for student in HOSTILE_KINDS:
            url = f"{formgrader.url}/formgrader/submissions/{ids[student]}/"
            found = _inspect(page, url, "#notebook", formgrader.url)
            found["requests"] = [r for r in found["requests"] if not r.startswith(FORMGRADER_OWN)]
            seen[(student, "formgrader")] = found
    assert {key: value for key, value in seen.items() if value != CLEAN} == {}


def _open(browser, url: str, root: str, allowed: str) -> dict:
    page = browser.new_context().new_page()
    try:
        return _inspect(page, url, root, allowed)
    finally:
        page.close()


def _inspect(page, url: str, root: str, allowed: str) -> dict:
    """Открывает страницу; запросы за пределы ``allowed`` обрываются и записываются."""
    requests: list[str] = []

    def route(request_route):
        target = request_route.request.url
        if target.startswith(allowed):
            return request_route.continue_()
        requests.append(target)
        return request_route.abort()

    page.route("**/*", route)
    page.goto(url, wait_until="load", timeout=120_000)
    found = page.evaluate(ACTIVE_JS, root)
    page.unroute("**/*")
    return {
        "title_pwned": found.pop("title") == PWNED,
        **found,
        "requests": requests,
    }

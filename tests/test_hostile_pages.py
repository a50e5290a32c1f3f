"""Каждый отчёт и каждая страница formgrader оценённого класса — в настоящем Chromium.

В классе (tests/corpus.py) есть работы со скриптами в ответах и выводе, с обработчиками
событий, со ссылками ``javascript:``, с обратными кавычками в коде заметки и с именем
файла-тегом. Выполнись где-нибудь хоть один такой скрипт, заголовок страницы стал бы
PWNED. Здесь каждая страница открывается с JavaScript (скрипты самих страниц работают), и
проверяется: заголовок прежний, в тетрадке нет обработчиков ``on…``, скриптов из работ и
ссылок на ``javascript:``/``vbscript:``/``data:``.
"""

from __future__ import annotations

import pytest
from corpus import PWNED

from browser_support import CHROMIUM_FLAGS, ROOT, chromium_or_skip, formgrader_server, server_page

#: Страницы в настоящем Chromium: среди тестов класса они идут первыми (tests/conftest.py).
pytestmark = [pytest.mark.slow, pytest.mark.browser]

#: Что на странице было бы следом работы: обработчики, её скрипты, опасные ссылки.
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
    formgrader: !!document.querySelector('#notebook-container')
      && [...document.scripts].some(s => (s.src || '').includes('formgrade.js')),
  }};
}}
"""


def _inspect(page, url: str, root: str) -> dict:
    response = page.goto(url, wait_until="load", timeout=120_000)
    return {**page.evaluate(ACTIVE_JS, root), "status": response.status if response else None}


def _browser(playwright, chromium):
    return playwright.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_FLAGS)


def test_no_report_runs_anything_from_a_work(graded_class):
    chromium = chromium_or_skip("отчёты в браузере")
    from playwright.sync_api import sync_playwright

    reports = sorted((graded_class.work / "feedback_reports").glob("*/*/*.html"))
    assert len(reports) > 50
    found = {}
    with sync_playwright() as playwright:
        browser = _browser(playwright, chromium)
        try:
            page = browser.new_context().new_page()
            page.route(
                "**/*",
                lambda route: (
                    route.continue_() if route.request.url.startswith("file:") else route.abort()
                ),
            )
            for report in reports:
                seen = _inspect(page, report.as_uri(), "main")
                if seen["title"] == PWNED or seen["handlers"] or seen["scripts"] or seen["links"]:
                    found[report.parent.parent.name] = seen
        finally:
            browser.close()
    assert found == {}


#: Страницы formgrader открываются в нескольких тестах (каждый — своя доля работ): к концу
#: запуска, когда класс оценён, они идут в разные процессы, а не друг за другом.
PARTS = 2


@pytest.mark.parametrize("part", range(PARTS))
def test_no_formgrader_page_runs_anything_from_a_work(graded_class, tmp_path_factory, part):
    chromium = chromium_or_skip("formgrader в браузере")
    from test_formgrader import submissions

    with formgrader_server(
        ROOT, tmp_path_factory.mktemp("formgrader-pages"), graded_class.work
    ) as server:
        listed = submissions(server)
        assert len(listed) > 50
        found = {}
        with server_page(server, chromium, timeout_ms=120_000) as page:
            for item in listed[part::PARTS]:
                # Ссылка из списка работ formgrader; сервер переадресует на адрес с «/» в конце.
                url = f"{server.url}/formgrader/submissions/{item['id']}"
                seen = _inspect(page, url, "#notebook")
                # Страница открылась (200) и отрисована formgrader'ом — с его скриптом оценок:
                # с шаблоном отчёта, заданным всем HTMLExporter, formgrader отвечал 500 на каждую.
                opened = seen["status"] == 200 and seen["formgrader"]
                if (
                    not opened
                    or seen["title"] != item["assignment"]
                    or any(seen[key] for key in ("handlers", "scripts", "links"))
                ):
                    found[(item["student"], item["assignment"])] = seen
    assert found == {}

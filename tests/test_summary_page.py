"""summary.html в настоящем браузере: диаграммы видны, скриптов нет, ничего не выполняется.

Страницу оценённого класса (фикстура ``graded_class``) и страницу со злыми строками из
работ (имена учащихся, фрагменты ответов, причины проблем со скриптами) Chromium без
окна открывает по file://, а все запросы не к файлам обрываются. Проверяется, что каждая
диаграмма отрисовалась (naturalWidth > 0), что на странице нет ни одного элемента
<script> и обработчиков событий, а заголовок не изменился. Снимок страницы класса —
.course-work/screenshots/summary.png.
"""

from __future__ import annotations

from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from corpus import LAB2, LAB4, PWNED

from feedback.teacher import analytics, summary
from feedback.teacher.analytics import ClassData, TaskStats

from browser_support import CHROMIUM_FLAGS, SCREENSHOTS, chromium_or_skip

EVIL = f"<script>document.title='{PWNED}'</script><img src=x onerror=\"document.title='{PWNED}'\">"


def hostile_data(work: Path) -> ClassData:
    """Данные сводки, где всё, что могло прийти из работ, — со скриптами."""
    student = f"x{EVIL}"
    stats = TaskStats(LAB2, "check_compute_num_flops", total=3, passed=1)
    stats.mistakes.update({"flops.forward_only": 1, f"evil{EVIL}": 1})
    stats.hints["flops.forward_only"] = Counter({EVIL: 1})
    report = work / "feedback_reports" / "ok" / LAB2 / f"{LAB2}.html"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("<p>отчёт</p>", encoding="utf-8")
    row = {"student_id": student, "lab": LAB2}
    return ClassData(
        labs=[LAB2],
        scores={LAB2: [(0.0, 4.0), (4.0, 4.0), (2.0, 4.0)]},
        tasks={LAB2: [stats]},
        problems=[{**row, "file": f"{EVIL}.ipynb", "problem": f"javascript:{EVIL}"}],
        review=[{**row, "cell": EVIL, "line": "1", "code": f"`</code>{EVIL}", "reason": EVIL}],
        similar=[
            {
                "lab": LAB2,
                "task": "reflection_scaling",
                "student_a": "ok",
                "student_b": student,
                "similarity": "1.000",
                "fragment": f"</code>{EVIL}",
            }
        ],
        pending=[{"student_id": student, "lab": LAB2, "tasks": [EVIL], "points": 2.0}],
        slowest=[{**row, "seconds": "1.5"}],
    )


def test_every_string_from_uploads_is_escaped(tmp_path):
    page = summary.render(hostile_data(tmp_path), tmp_path)
    assert "<script" not in page.lower()
    tags = _Tags()
    tags.feed(page)
    assert tags.found["script"] == 0
    assert tags.handlers == [], "обработчик события в разметке"
    assert all(href.startswith(("#", "feedback_reports/")) for href in tags.hrefs), tags.hrefs
    assert tags.found["img"] == 2  # только свои диаграммы: из работ ни одной картинки
    assert page.count(html_escape(EVIL)) >= 6
    assert 'href="feedback_reports/ok/' in page  # есть отчёт — есть ссылка
    assert "Content-Security-Policy" in page


class _Tags(HTMLParser):
    """Что браузер увидит в разметке: теги, имена атрибутов, ссылки."""

    def __init__(self):
        super().__init__()
        self.found, self.handlers, self.hrefs = Counter(), [], []

    def handle_starttag(self, tag, attrs):
        self.found[tag] += 1
        self.handlers += [name for name, _ in attrs if name.startswith("on")]
        self.hrefs += [value for name, value in attrs if name == "href"]


def html_escape(text: str) -> str:
    import html

    return html.escape(text, quote=True)


def test_links_only_to_reports_that_exist_inside_the_work_folder(tmp_path):
    (tmp_path / "feedback_reports" / "a" / LAB4).mkdir(parents=True)
    (tmp_path / "feedback_reports" / "a" / LAB4 / f"{LAB4}.html").write_text("x")
    assert summary.report_link(tmp_path, "a", LAB4).startswith('<a href="feedback_reports/a/')
    assert summary.report_link(tmp_path, "b", LAB4) == "b"
    assert "<a" not in summary.report_link(tmp_path, "../..", LAB4)
    assert summary.report_link(tmp_path, "a b", LAB4) == "a b"


def _open(page_url: str, browser, shot: Path | None = None) -> dict:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    blocked: list[str] = []

    def route(request_route):
        url = request_route.request.url
        if url.startswith(("file:", "data:")):
            request_route.continue_()
        else:
            blocked.append(url)
            request_route.abort()

    context.route("**/*", route)
    page = context.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(page_url, wait_until="load")
    page.wait_for_function("() => [...document.images].every(image => image.complete)")
    facts = page.evaluate(
        """() => ({
            title: document.title,
            scripts: document.querySelectorAll('script').length + document.scripts.length,
            images: [...document.images].map(image => image.naturalWidth),
            handlers: [...document.querySelectorAll('*')].flatMap(element =>
                [...element.attributes].map(a => a.name).filter(n => n.startsWith('on'))),
            tables: document.querySelectorAll('table').length,
        })"""
    )
    if shot is not None:
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shot), full_page=True)
    context.close()
    return {**facts, "blocked": blocked, "dialogs": dialogs}


@pytest.mark.slow
@pytest.mark.browser
def test_summary_page_in_chromium(graded_class, tmp_path):
    chromium = chromium_or_skip("браузерный тест сводки")
    from playwright.sync_api import sync_playwright

    work = graded_class.work
    page_path = work / analytics.SUMMARY_HTML
    hostile = tmp_path / "summary.html"
    summary.write_summary(hostile, hostile_data(tmp_path))
    labs = {row["assignment"] for row in analytics.read_table(work / "grades.csv")}
    shot = SCREENSHOTS / "summary.png"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            facts = _open(page_path.as_uri(), browser, shot)
            evil = _open(hostile.as_uri(), browser)
        finally:
            browser.close()
    for found in (facts, evil):
        assert found["title"] == summary.TITLE
        assert found["scripts"] == 0
        assert found["handlers"] == []
        assert found["dialogs"] == []
        assert found["blocked"] == []
        assert found["images"] and all(width > 0 for width in found["images"])
    # По две диаграммы на каждую оценённую лабораторную: баллы и задания.
    assert len(facts["images"]) == 2 * len(labs)
    assert facts["tables"] >= len(labs) + 3
    assert shot.is_file() and shot.stat().st_size > 10_000

"""summary.html: слова курса вместо кода, экранирование и настоящий браузер.

Быстрые тесты разбирают страницу: названия лабораторных и заданий, описания ошибок и
десятичные запятые видны, а коды — только в подсказках; всё из работ экранировано
(шаблон Jinja2 с автоэкранированием). Страницу оценённого класса (фикстура
``graded_class``) и страницу со злыми строками из работ (имена учащихся, фрагменты
ответов, причины проблем со скриптами) Chromium без окна открывает по file://, а все
запросы не к файлам обрываются. Проверяется, что каждая диаграмма (встроенный SVG)
отрисовалась, что на странице нет ни одного элемента <script> и обработчиков событий, а
заголовок не изменился. Снимок страницы класса — .course-work/screenshots/summary.png.
"""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest
from corpus import LAB2, LAB4, PWNED
from markupsafe import escape
from page_checks import page_problems

from feedback.teacher.core.settings import Settings
from feedback.teacher.core.tables import (
    GradeRow,
    MistakeRow,
    Problem,
    ReviewRow,
    SimilarRow,
    TimingRow,
    header,
    read_rows,
)
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.pages import analytics, summary
from feedback.teacher.pages.analytics import ClassData, TaskStats
from feedback.teacher.pages.class_data import Pending, Reopened
from feedback.teacher.records.mistakes import mistake_description

from browser_support import CHROMIUM_FLAGS, SCREENSHOTS, chromium_or_skip

EVIL = f"<script>document.title='{PWNED}'</script><img src=x onerror=\"document.title='{PWNED}'\">"


def hostile_data(work: Path) -> ClassData:
    """Данные сводки, где всё, что могло прийти из работ, — со скриптами."""
    student = f"x{EVIL}"
    stats = TaskStats(LAB2, "check_compute_num_flops", total=3, passed=1)
    stats.students.update({"ok", student, "third"})
    stats.add_mistake(student, "flops.forward_only", EVIL)
    stats.add_mistake("third", f"evil{EVIL}")
    report = work / "feedback_reports" / "ok" / LAB2 / f"{LAB2}.html"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("<p>отчёт</p>", encoding="utf-8")
    return ClassData(
        labs=[LAB2],
        scores={LAB2: [(0.0, 4.0), (4.0, 4.0), (2.0, 4.0)]},
        tasks={LAB2: [stats]},
        problems=[Problem(student, LAB2, f"{EVIL}.ipynb", f"javascript:{EVIL}")],
        review=[ReviewRow(student, LAB2, EVIL, 1, f"`</code>{EVIL}", EVIL)],
        similar=[SimilarRow(LAB2, "reflection_scaling", "ok", student, "1.000", f"</code>{EVIL}")],
        pending=[Pending(student, LAB2, [EVIL], 2.0, [EVIL], 4.0)],
        slowest=[TimingRow.measured(student, LAB2, 1.5)],
        titles={LAB2: f"Лабораторная {EVIL}"},
        task_titles={(LAB2, "reflection_scaling"): EVIL},
        reopened=[Reopened(student, LAB2, EVIL, "1", EVIL, [("-", EVIL), ("+", EVIL), ("@", "")])],
        as_of=EVIL,
    )


def test_every_string_from_uploads_is_escaped(tmp_path):
    page = summary.render(hostile_data(tmp_path), Workspace(tmp_path))
    assert "<script" not in page.lower()
    tags = _Tags()
    tags.feed(page)
    assert tags.found["script"] == 0
    assert tags.handlers == [], "обработчик события в разметке"
    assert all(href.startswith(("#", "feedback_reports/")) for href in tags.hrefs), tags.hrefs
    assert tags.found["img"] == 0  # из работ ни одной картинки
    assert tags.charts == 2  # свои диаграммы — встроенный SVG
    assert page.count(str(escape(EVIL))) >= 10
    assert 'href="feedback_reports/ok/' in page  # есть отчёт — есть ссылка
    assert "Content-Security-Policy" in page
    assert page_problems(page, PWNED) == []


class _Tags(HTMLParser):
    """Что браузер увидит в разметке: теги, имена атрибутов, ссылки."""

    def __init__(self):
        super().__init__()
        self.found, self.handlers, self.hrefs, self.charts = Counter(), [], [], 0

    def handle_starttag(self, tag, attrs):
        self.found[tag] += 1
        self.handlers += [name for name, _ in attrs if name.startswith("on")]
        self.hrefs += [value for name, value in attrs if name == "href"]
        self.charts += tag == "svg" and ("class", "chart") in attrs


def test_links_only_to_reports_that_exist_inside_the_work_folder(tmp_path):
    (tmp_path / "feedback_reports" / "a" / LAB4).mkdir(parents=True)
    (tmp_path / "feedback_reports" / "a" / LAB4 / f"{LAB4}.html").write_text("x")
    assert (
        summary.report_href(Workspace(tmp_path), "a", LAB4)
        == f"feedback_reports/a/{LAB4}/{LAB4}.html"
    )
    assert summary.report_href(Workspace(tmp_path), "b", LAB4) is None
    assert summary.report_href(Workspace(tmp_path), "../..", LAB4) is None
    assert summary.report_href(Workspace(tmp_path), "a b", LAB4) is None


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
    facts = page.evaluate(
        """() => ({
            title: document.title,
            scripts: document.querySelectorAll('script').length + document.scripts.length,
            images: document.images.length,
            charts: [...document.querySelectorAll('svg.chart')].map(chart => {
                const box = chart.getBoundingClientRect();
                const bars = [...chart.querySelectorAll('rect')].filter(
                    rect => rect.getBoundingClientRect().width > 0);
                return box.width > 0 && box.height > 0 ? bars.length : 0;
            }),
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
    page_path = work / Workspace.SUMMARY
    hostile = summary.write_summary(Workspace(tmp_path), hostile_data(tmp_path))
    labs = {row.assignment for row in read_rows(work / GradeRow.FILE, GradeRow)}
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
        assert found["images"] == 0
        assert found["charts"] and all(bars > 0 for bars in found["charts"])
    # По две диаграммы на каждую оценённую лабораторную: баллы и задания.
    assert len(facts["charts"]) == 2 * len(labs)
    assert facts["tables"] >= len(labs) + 3
    assert shot.is_file() and shot.stat().st_size > 10_000


# --------------------------------------------------------------------------- слова курса

LAB2_TITLE = "Лабораторная 7.2. Оцените FLOPs обучения"


def _table(path: Path, header: list[str], rows: list[list]) -> None:
    import csv

    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def course_work(work: Path) -> Path:
    """Рабочая папка после оценивания 7.2: выпуск, оценки по заданиям, ошибки, похожая пара."""
    import shutil

    from notebook_runner import ROOT

    (work / "release" / LAB2).mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / LAB2 / f"{LAB2}.ipynb", work / "release" / LAB2)
    scores = {"s1": 3.0, "s2": 3.5, "s3": 3.5}  # средний балл 3,33…
    by_task = []
    for student in scores:
        passed = 2 if student == "s3" else 0
        by_task.append([student, LAB2, "check_compute_num_flops", passed, 2, "", passed])
        by_task.append([student, LAB2, "check_final_results", 2, 2, "", 2])
    _table(work / "grades_by_task.csv", ["student_id", "assignment", "grade_id", "auto_score",
           "max_score", "manual_score", "score"], by_task)  # fmt: skip
    _table(work / "grades.csv", ["assignment", "student_id", "score", "max_score"],
           [[LAB2, student, score, 4.0] for student, score in scores.items()])  # fmt: skip
    _table(work / Workspace.MISTAKES, header(MistakeRow), [
        [s, LAB2, "check_compute_num_flops", "flops.forward_only", "x", "Подсказка курса"]
        for s in ("s1", "s2")
    ])  # fmt: skip
    _table(work / Workspace.SIMILAR, header(SimilarRow),
           [[LAB2, "reflection_scaling", "s1", "s2", "0.875", "общий кусок"]])  # fmt: skip
    _table(work / "timings.csv", ["student_id", "lab", "seconds"],
           [["s1", LAB2, "1.5"], ["s2", LAB2, "1.5"], ["s3", LAB2, "12.25"]])  # fmt: skip
    return work


class _Visible(HTMLParser):
    """Текст, который видит читатель, и подсказки (атрибуты title) отдельно."""

    def __init__(self):
        super().__init__()
        self.text, self.tips, self._hidden = [], [], 0

    def handle_starttag(self, tag, attrs):
        self.tips += [value for name, value in attrs if name == "title"]
        self._hidden += tag in ("title", "style")

    def handle_endtag(self, tag):
        self._hidden -= tag in ("title", "style")

    def handle_data(self, data):
        if self._hidden:
            self.tips.append(data)
        else:
            self.text.append(data)


def test_the_page_speaks_course_words_and_codes_are_only_tooltips(tmp_path):
    work = course_work(tmp_path)
    page = summary.render(analytics.class_data(Workspace(work), Settings().labs), Workspace(work))
    parsed = _Visible()
    parsed.feed(page)
    visible = " ".join(" ".join(parsed.text).split())
    tips = " ".join(parsed.tips)
    task_title = "Задание 1. Функция compute_num_flops"
    hint = mistake_description("flops.forward_only")
    for shown in (LAB2_TITLE, task_title, "Вопрос 1", hint, "средний балл 3,3 из 4", "12,2"):
        assert shown in visible, shown
    for code in (LAB2, "check_compute_num_flops", "flops.forward_only", "reflection_scaling"):
        assert code not in visible, code
        assert code in tips, code  # код — в подсказке при наведении
    numbers = visible.replace("Лабораторная 7.2", "")  # номер лабораторной — не дробь
    assert not re.search(r"\d\.\d", numbers), re.findall(r"\S*\d\.\d\S*", numbers)
    assert "88 %" in visible  # сходство 0.875 — процентами


def test_the_page_is_rendered_by_an_autoescaping_template():
    env = summary.environment()
    assert env.autoescape is True
    assert (Path(summary.__file__).parent / "templates" / summary.TEMPLATE).is_file()


def test_the_page_says_as_of_when(tmp_path):
    from datetime import datetime, timedelta, timezone

    moment = datetime(2026, 12, 5, 9, 10, tzinfo=timezone(timedelta(hours=3)))
    text = analytics.as_of_text(moment)
    assert text.startswith("5 декабря 2026, ") and text.endswith(")")
    work = course_work(tmp_path)
    page = summary.render(
        analytics.class_data(Workspace(work), Settings().labs, now=moment), Workspace(work)
    )
    assert f"Состояние на {text}" in page


class _Headings(HTMLParser):
    """Заголовки разделов и столбцов страницы (h2, h3, th)."""

    def __init__(self):
        super().__init__()
        self.found, self._open = set(), None

    def handle_starttag(self, tag, attrs):
        if tag in ("h2", "h3", "th"):
            self._open, self._text = tag, []

    def handle_endtag(self, tag):
        if tag == self._open:
            self.found.add(" ".join("".join(self._text).split()))
            self._open = None

    def handle_data(self, data):
        if self._open:
            self._text.append(data)


#: Как руководство называет часть сводки: «в разделе «…»», «`summary.html` — «…»», «столбца: «…»».
DOC_NAME = re.compile(r"(?:раздел\w*|`summary\.html` —|столбц\w*:)\s+«([^»]+)»")


def test_the_guide_names_only_headings_the_page_has(tmp_path):
    """docs/teaching.md называет разделы и столбцы summary.html — такие же, как на странице."""
    from notebook_runner import ROOT

    guide = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    named = {
        match
        for paragraph in guide.split("\n\n")
        if "summary.html" in paragraph
        for match in DOC_NAME.findall(" ".join(paragraph.split()))
    }
    assert {"Ждут преподавателя", "Изменённые ответы", "Ждут оценки"} <= named
    headings = _Headings()
    headings.feed(summary.render(hostile_data(tmp_path), Workspace(tmp_path)))
    assert named - headings.found == set(), sorted(headings.found)

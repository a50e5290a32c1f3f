"""Лабораторная 7.2 в настоящем браузере: JupyterLab, «Run All Cells», ползунок.

То, что видит учащийся, а не то, что лежит в JSON тетрадки: отрисованный русский
Markdown и таблицы, красные вердикты в тетрадке учащегося, зелёные — в решении, ни одной
трассировки, и ползунок ipywidgets, который действительно меняет число FLOPs.

Нужен Chromium из Debian (``apt-get install chromium``; его ставит ``.ci/install-browser``)
и пакет ``playwright`` из extra ``dev``. Без Chromium тест пропускается с причиной
(или падает, если задано ``COURSE7_REQUIRE_BROWSER=1``); другой путь к браузеру —
в ``COURSE7_CHROMIUM``.
Снимки экрана складываются в ``.course-work/screenshots/``.
"""

from __future__ import annotations

import shutil

import nbformat
import pytest

from browser_support import (
    CHROMIUM_FLAGS,
    ROOT,
    SCREENSHOTS,
    cell_summaries,
    chromium_or_skip,
    jupyter_lab,
    open_notebook,
    run_all_cells,
    screenshot,
)

try:
    from playwright.sync_api import expect, sync_playwright
except ImportError:  # окружение без extra dev: фикстура объяснит, что поставить
    expect = sync_playwright = None

#: JupyterLab и Chromium запускаются один раз на модуль: его тесты — в одном процессе xdist.
pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.xdist_group("browser_lab")]

LAB = "lab_7_2_training_flops"
STUDENT = f"{LAB}/{LAB}.ipynb"
SOLUTION = f"{LAB}/solution_{LAB}.ipynb"
NOT_DONE = ("ещё не реализована", "осталось «…»")
TITLE = "Лабораторная 7.2. Оцените FLOPs обучения"


def graded_indices(path) -> list[int]:
    """Номера ячеек автопроверки nbgrader — там учащийся видит вердикт."""
    nb = nbformat.read(path, as_version=4)
    return [
        index
        for index, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade")
    ]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """JupyterLab над временной копией notebooks/ и Chromium, которым управляет Playwright."""
    chromium = chromium_or_skip("браузерный тест JupyterLab")

    work = tmp_path_factory.mktemp("browser")
    root = work / "notebooks"
    shutil.copytree(ROOT / "notebooks", root)
    shutil.copy(ROOT / "solutions" / LAB / f"{LAB}.ipynb", root / SOLUTION)

    with jupyter_lab(root, work) as server, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(work / "chromium-profile"),
            executable_path=chromium,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900},
            locale="ru-RU",
        )
        context.set_default_timeout(30_000)
        try:
            yield server, context, root
        finally:
            context.close()


def run_in_browser(lab, relative: str, workspace: str):
    server, context, _ = lab
    page = context.new_page()
    open_notebook(page, server.notebook_url(relative, workspace))
    run_all_cells(page)
    return page


def assert_rendered_markdown(page) -> None:
    """Заголовок, жирный текст и таблица Markdown отрисованы, а не показаны исходником."""
    h1 = page.locator(".jp-MarkdownCell .jp-RenderedMarkdown h1").first
    assert h1.inner_text().strip().rstrip("¶").strip() == TITLE
    table = page.locator(".jp-MarkdownCell .jp-RenderedMarkdown table", has_text="BERT-Base")
    assert table.count() >= 1
    assert table.first.locator("th").count() >= 3
    strong = page.locator(".jp-MarkdownCell .jp-RenderedMarkdown strong", has_text="6 · P · N")
    assert strong.count() >= 1


def assert_no_traceback(page, cells) -> None:
    assert "Traceback" not in page.locator(".jp-NotebookPanel").inner_text()
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    shown = [text for text in errors.all_inner_texts() if "Error" in text]
    assert shown == [], shown
    assert all("Traceback" not in cell["text"] for cell in cells)


def test_student_notebook_shows_red_russian_verdicts(lab):
    _, _, root = lab
    page = run_in_browser(lab, STUDENT, "student")
    try:
        cells = cell_summaries(page)
        screenshot(page, "lab_7_2_student.png")
        for index in graded_indices(root / STUDENT):
            cell = page.locator(".jp-NotebookPanel .jp-Notebook .jp-Cell").nth(index)
            cell.screenshot(path=str(SCREENSHOTS / f"lab_7_2_student_check_{index}.png"))
        assert len(cells) == len(nbformat.read(root / STUDENT, as_version=4).cells)
        assert_rendered_markdown(page)
        graded = graded_indices(root / STUDENT)
        assert graded, "в тетрадке нет ячеек проверки"
        for index in graded:
            checks = cells[index]["checks"]
            assert len(checks) == 1, (index, cells[index]["text"])
            assert checks[0]["passed"] == "false", checks
            assert any(phrase in checks[0]["text"] for phrase in NOT_DONE), checks
            assert "❌" in checks[0]["text"]
        assert_no_traceback(page, cells)
    finally:
        page.close()


def test_solution_is_green_and_slider_changes_flops(lab):
    _, _, root = lab
    page = run_in_browser(lab, SOLUTION, "solution")
    try:
        cells = cell_summaries(page)
        screenshot(page, "lab_7_2_solution.png")
        assert_rendered_markdown(page)
        graded = graded_indices(root / SOLUTION)
        for index in graded:
            checks = cells[index]["checks"]
            assert [check["passed"] for check in checks] == ["true"], (index, checks)
            assert "✅" in checks[0]["text"]
        verdicts = page.locator(".course7-check")
        # Кроме проверок с баллами, в 7.2 одна проверка без баллов (время обучения, задание 4).
        assert verdicts.count() == len(graded) + 1
        assert page.locator(".course7-check[data-passed='false']").count() == 0
        # Таблица pandas и логарифмический график под ней.
        assert page.locator(".jp-OutputArea-output table", has_text="PaLM").count() >= 1
        assert page.locator(".jp-OutputArea-output img").count() >= 1
        assert_no_traceback(page, cells)

        widget = page.locator(".widget-vbox", has=page.locator(".widget-slider")).first
        value = widget.locator(".course7-flops-value")
        expect(value).to_have_text("6·10²¹ FLOPs", timeout=30_000)
        slider = widget.locator(".widget-hslider", has_text="log_param_count")
        handle = slider.locator(".noUi-handle").first
        handle.scroll_into_view_if_needed()
        widget.screenshot(path=str(SCREENSHOTS / "lab_7_2_slider_before.png"))
        handle.focus()
        handle.press("ArrowRight")
        expect(slider.locator(".widget-readout")).to_have_text("10", timeout=10_000)
        # HTML-виджет перерисовывается целиком: ждём по локатору, а не по старому элементу.
        expect(value).to_have_text("6·10²² FLOPs", timeout=15_000)
        widget.screenshot(path=str(SCREENSHOTS / "lab_7_2_slider_after.png"))
    finally:
        page.close()

"""Отчёт для учащегося: та же страница, что у nbconvert, без разбора её целиком."""

from __future__ import annotations

import functools
import re

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbconvert.exporters import HTMLExporter

from feedback.teacher.core.workspace import Workspace
from feedback.teacher.course.release import ROOT
from feedback.teacher.pages.reports import ReportExporter, report_config

from submissions import record_unit

ALT = "Рисунок из вывода ячейки"
HOSTILE_SIZE = {"width": "1 onerror=alert(1)", "height": "2 onload=alert(2)"}


def _resources() -> dict:
    grades = {"student": "s01", "assignment": "lab", "notebook": "lab"}
    return {"nbgrader": {**grades, "score": 1.0, "max_score": 2.0, "late_penalty": 0}}


def _render(exporter_class: type[HTMLExporter], notebook: nbformat.NotebookNode) -> str:
    html, _ = exporter_class(config=report_config()).from_notebook_node(
        notebook, resources=_resources()
    )
    return html


def _image_cell() -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("plot()")
    cell.outputs = [
        nbformat.v4.new_output(
            "display_data",
            data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"},
            metadata={"image/png": HOSTILE_SIZE},
        ),
        nbformat.v4.new_output(
            "display_data",
            data={"image/jpeg": "/9j/4AAQSkZJRg==", "text/plain": "<Image>"},
            metadata={"image/jpeg": HOSTILE_SIZE},
        ),
    ]
    return cell


def test_output_images_have_a_russian_caption_and_no_attributes_from_the_work():
    html = _render(ReportExporter, nbformat.v4.new_notebook(cells=[_image_cell()]))
    images = BeautifulSoup(html, "html.parser").find_all("img")
    assert [image.get("alt") for image in images] == [ALT, ALT]
    assert all(set(image.attrs) == {"src", "alt"} for image in images)
    assert "onerror" not in html and "onload" not in html
    assert "No description has been provided" not in html


def _normalised(html: str) -> str:
    """Страница после разбора, без двух правок, которые nbconvert делает разбором."""
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.find_all(True):
        tag.attrs.pop("tabindex", None)
    return str(soup)


@pytest.mark.parametrize("lab", ["lab_7_2_training_flops", "lab_7_6_gradient_accumulation"])
def test_report_is_the_page_nbconvert_would_write(lab):
    """Пропущен только разбор страницы: содержимое то же, что у HTMLExporter."""
    notebook = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    for cell in notebook.cells:  # как после GetGrades: баллы из базы в метаданных ячейки
        grading = cell.metadata.get("nbgrader", {})
        if grading.get("grade") or grading.get("task"):
            grading.update(score=0.0, points=grading.get("points", 0), comment=None)
    notebook.cells.append(_image_cell())
    ours = _render(ReportExporter, notebook)
    theirs = _render(HTMLExporter, notebook)
    assert "highlight" in ours and "rendered_html" in ours and ALT in ours
    assert _normalised(ours) == _normalised(theirs)


def test_the_page_is_not_parsed_again(monkeypatch):
    """Разбор всей страницы стоил половину времени отчёта; отчёт без него обходится."""
    import nbconvert.exporters.html

    def refuse(*args, **kwargs):
        raise AssertionError("страница отчёта разбирается BeautifulSoup")

    monkeypatch.setattr(nbconvert.exporters.html, "BeautifulSoup", refuse)
    html = _render(ReportExporter, nbformat.v4.new_notebook(cells=[_image_cell()]))
    assert html.count(ALT) == 2
    with pytest.raises(AssertionError, match="BeautifulSoup"):
        _render(HTMLExporter, nbformat.v4.new_notebook(cells=[_image_cell()]))


#: SHA-256 исходника HTMLExporter.from_notebook_node в nbconvert 7.17 — метода, начало
#: которого повторяет ReportExporter.from_notebook_node (feedback/teacher/pages/reports.py).
COPIED_NBCONVERT_SOURCE = "3dccafff45cc4e749766089c7de2f5385ac071e03f4f5a15bfb3b025f54893b9"


def test_the_copied_nbconvert_code_is_still_what_nbconvert_does():
    """Ограда: ReportExporter повторяет закрытый код nbconvert 7.17 (pyproject.toml — <7.18)."""
    import hashlib
    import inspect

    import nbconvert

    source = inspect.getsource(HTMLExporter.from_notebook_node)
    assert hashlib.sha256(source.encode()).hexdigest() == COPIED_NBCONVERT_SOURCE, (
        f"В nbconvert {nbconvert.__version__} изменился HTMLExporter.from_notebook_node. "
        "Сверьте с ним ReportExporter.from_notebook_node (feedback/teacher/pages/reports.py): "
        "подсветку кода (Highlight2HTML), _init_resources, фильтр WidgetsDataTypeFilter с "
        "_nb_metadata и то, что делается после разбора страницы BeautifulSoup (подпись alt, "
        "tabindex). Если всё по-прежнему верно — обновите COPIED_NBCONVERT_SOURCE здесь и "
        "границу версии nbconvert в pyproject.toml."
    )
    exporter = HTMLExporter()
    for private in ("_init_resources", "_nb_metadata"):
        assert hasattr(exporter, private), f"в nbconvert больше нет HTMLExporter.{private}"


# ------------------------------------------------------------------- что читает учащийся

LAB4 = "lab_7_4_gpu_memory"
LAB4_TITLE = "Лабораторная 7.4. Оцените память GPU"
PENDING = "ожидает проверки преподавателем"
ANSWER = "Состояние оптимизатора Adam: два момента на каждый параметр."


@pytest.fixture(scope="module")
def lab4_work(tmp_path_factory):
    """База оценок с одной работой 7.4, записанной так же, как её пишет ``make grade``.

    Лабораторная заносится в базу препроцессором nbgrader SaveCells (его же зовёт
    ``generate_assignment``), работа — :func:`feedback.teacher.records.gradebook.record` из
    результата единицы: 1 балл автопроверки из 5, ответ на вопрос 1 написан (его ждёт
    преподаватель), на вопросы 2 и 3 ответа нет; под ответами — ячейки критериев.
    """
    import json

    from nbgrader.preprocessors import SaveCells

    from feedback.teacher.core.results import TaskOutcome, UnitResult
    from feedback.teacher.records import gradebook
    from feedback.teacher.unit import pipeline as unit

    work = tmp_path_factory.mktemp("reports-work")
    db = f"sqlite:///{work / 'gradebook.db'}"
    release = ROOT / "notebooks" / LAB4 / f"{LAB4}.ipynb"
    with gradebook._open(Workspace(work)) as gb:  # база — так же, как её создаёт make grade
        gb.update_or_create_assignment(LAB4)
    resources = {"nbgrader": {"notebook": LAB4, "assignment": LAB4, "db_url": db}}
    SaveCells().preprocess(nbformat.read(release, as_version=4), resources)

    notebook = nbformat.read(release, as_version=4)
    for cell in notebook.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "reflection_largest":
            cell.source = ANSWER
    found = unit.rubrics(ROOT / "solutions" / LAB4 / f"{LAB4}.ipynb")
    notebook.cells = unit.with_rubrics(notebook.cells, found)
    tests = {
        "check_calculate_param_memory": TaskOutcome(score=1.0, points=1),
        "check_calculate_input_data_memory": TaskOutcome(score=0.0, points=1),
    }
    autograded = nbformat.from_dict(json.loads(nbformat.writes(notebook)))
    record_unit(Workspace(work), UnitResult("ivanov", LAB4, autograded, tests))
    return work


def _grade(work, grade_id: str, score: float | None = None, comment: str | None = None) -> None:
    """Баллы и комментарий преподавателя — то, что formgrader пишет в базу (api/grade, comment)."""
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{work / 'gradebook.db'}") as gb:
        if score is not None:
            grade = gb.find_grade(grade_id, LAB4, LAB4, "ivanov")
            grade.manual_score = score
            grade.needs_manual_grade = False
        if comment is not None:
            gb.find_comment(grade_id, LAB4, LAB4, "ivanov").manual_comment = comment
        gb.db.commit()


def _report(work) -> BeautifulSoup:
    path = work / "autograded" / "ivanov" / LAB4 / f"{LAB4}.ipynb"
    html = _writer(work).write("ivanov", LAB4, path).read_text(encoding="utf-8")
    return BeautifulSoup(html, "html.parser")


@functools.cache
def _writer(work):
    """Один экспортёр отчётов на папку: его шаблоны загружаются секунду."""
    from feedback.teacher.pages.reports import ReportWriter

    return ReportWriter(Workspace(work))


def _toc(page: BeautifulSoup) -> list[str]:
    return [" ".join(item.get_text().split()) for item in page.select("#toc li")]


def _panel(page: BeautifulSoup, grade_id: str) -> str:
    anchor = page.find("input", id=f"to-{grade_id}")
    return " ".join(anchor.find_next("div", class_="panel-heading").get_text(" ").split())


def test_an_answer_waiting_for_the_teacher_is_not_a_zero(lab4_work):
    page = _report(lab4_work)
    assert PENDING in _panel(page, "reflection_largest")
    assert "Баллы: 0 из 2" not in _panel(page, "reflection_largest")
    assert "Баллы: 0 из 4" in _panel(page, "reflection_input")  # ответа нет — ноль
    toc = _toc(page)
    assert f"Письменный ответ: Вопрос 1 (баллы: {PENDING}, до 2 баллов)" in toc
    header = " ".join(page.find("h4").get_text(" ").split())
    assert header == f"{LAB4_TITLE} — 1 из 13 баллов, ещё 2 балла — после проверки преподавателем"


def test_titles_are_russian_not_identifiers(lab4_work):
    page = _report(lab4_work)
    assert page.title.get_text() == LAB4_TITLE
    assert LAB4 not in page.find("h4").get_text()
    toc = _toc(page)
    assert "Проверка «Задание 1. Память под веса» (баллы: 1 из 1)" in toc
    assert not [item for item in toc if "check_" in item or "reflection_" in item]
    assert _panel(page, "check_calculate_param_memory").startswith(
        "Проверка: Задание 1. Память под веса"
    )


def test_summary_line_says_what_to_fix_first(lab4_work):
    summary = " ".join(_report(lab4_work).select_one("p.course7-summary").get_text().split())
    assert summary == (
        "Автопроверка: 1 из 5 баллов. Письменные ответы: 0 из 8 баллов, ещё 2 балла — после "
        "проверки преподавателем. Исправьте сначала: «Задание 2. Память под входные данные»."
    )


def test_criteria_for_the_teacher_stay_out_of_the_report(lab4_work):
    autograded = lab4_work / "autograded" / "ivanov" / LAB4 / f"{LAB4}.ipynb"
    assert "Критерии для преподавателя" in autograded.read_text(encoding="utf-8")
    html = str(_report(lab4_work))
    assert "Критерии для преподавателя" not in html and "Образец ответа" not in html


def test_manual_points_have_a_decimal_comma_and_blank_comments_are_no_entries(lab4_work):
    _grade(lab4_work, "reflection_largest", score=0.5, comment="  \n ")
    _grade(lab4_work, "reflection_input", comment="")
    page = _report(lab4_work)
    toc = _toc(page)
    assert "Письменный ответ: Вопрос 1 (баллы: 0,5 из 2)" in toc
    assert not [item for item in toc if "Комментарий" in item]
    text = page.get_text()
    assert "0.5" not in text and ".0 из" not in text and "1.5" not in text
    header = " ".join(page.find("h4").get_text(" ").split())
    assert header == f"{LAB4_TITLE} — 1,5 из 13 баллов"
    assert "ещё" not in page.select_one("p.course7-summary").get_text()

    _grade(lab4_work, "reflection_largest", comment="Верно, но почему моментов два?")
    page = _report(lab4_work)
    assert [item for item in _toc(page) if "Комментарий" in item] == [
        "Комментарий преподавателя: Вопрос 1"
    ]
    footers = [" ".join(div.get_text(" ").split()) for div in page.select(".panel-footer")]
    assert "Комментарий преподавателя: Верно, но почему моментов два?" in footers
    assert "Замечание: Нет ответа." in footers  # вопрос 3 без ответа: не комментарий


# ------------------------------------------------------------------- что печатает make grade

#: Родитель — как при ``python -m feedback.teacher.commands.grade``: главный модуль — команда.
#: Процесс единицы порождается тем же шаблоном (forkserver), что и в оценивании.
_UNIT_PROCESS = """
import importlib.util, sys
sys.modules["__main__"].__spec__ = importlib.util.find_spec("feedback.teacher.commands.grade")
from feedback.teacher.unit import runner
runner.preload("feedback.teacher.grading.grade")  # как commands.grade.main
process = runner._CONTEXT.Process(target=print, args=("единица",))
process.start()
process.join()
sys.exit(process.exitcode)
"""


#: Как JupyterLab 4 (@jupyterlab/htmlviewer) показывает HTML-файл: разбирает его, ставит <base
#: href> на адрес файла на сервере (target _self), открывает blob: во фрейме-песочнице
#: allow-same-origin без скриптов («Trust HTML» не нажата).
HTML_VIEWER = """<html><body><iframe id="viewer" sandbox="allow-same-origin"
 style="width:900px;height:600px"></iframe><script>
const doc = new DOMParser().parseFromString(REPORT, "text/html");
const base = doc.createElement("base");
base.href = "http://127.0.0.1:9/user/ivanov/files/feedback/report.html"; base.target = "_self";
doc.head.insertBefore(base, doc.head.firstChild);
document.getElementById("viewer").src = URL.createObjectURL(
  new Blob([doc.documentElement.innerHTML], {type: "text/html"}));
</script></body></html>"""


def _jumps(page: BeautifulSoup) -> dict[str, str]:
    """Переходы по отчёту: текст → id места, к которому он ведёт."""
    return {
        " ".join(label.get_text().split()): label["for"]
        for label in page.select("label.course7-link")
    }


def test_jumps_inside_the_report_are_labels_not_fragment_links(lab4_work):
    """Ссылка «#…» в HTML-просмотрщике JupyterLab уводила фрейм на сервер: переходы по отчёту
    — <label for> к невидимому полю у каждого места, и каждое место есть."""
    _grade(lab4_work, "reflection_largest", comment="Почему моментов два?")
    try:
        page = _report(lab4_work)
    finally:
        _grade(lab4_work, "reflection_largest", comment="")
    assert page.select('a[href^="#"]') == []
    jumps = _jumps(page)
    assert jumps["Комментарий преподавателя: Вопрос 1"] == "to-comment-reflection_largest"
    assert jumps["(к началу)"] == "to-top"
    targets = {field["id"] for field in page.select("input.course7-anchor")}
    assert set(jumps.values()) <= targets and "to-check_calculate_param_memory" in targets


@pytest.mark.slow
@pytest.mark.browser
def test_jumps_work_in_the_jupyterlab_html_viewer(lab4_work):
    import json

    from playwright.sync_api import sync_playwright

    from browser_support import CHROMIUM_FLAGS, chromium_or_skip

    chromium = chromium_or_skip("переходы по отчёту в HTML-просмотрщике JupyterLab")
    _grade(lab4_work, "reflection_largest", comment="Почему моментов два?")
    try:
        html = str(_report(lab4_work))
    finally:
        _grade(lab4_work, "reflection_largest", comment="")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            page = browser.new_page()
            page.set_content(HTML_VIEWER.replace("REPORT", json.dumps(html)))
            page.wait_for_function("document.getElementById('viewer').src.startsWith('blob:')")
            viewer = page.frame_locator("#viewer")
            viewer.locator("#toc").wait_for()
            frame = next(frame for frame in page.frames if frame.url.startswith("blob:"))
            start = frame.url
            viewer.get_by_text("Комментарий преподавателя: Вопрос 1").click()
            page.wait_for_timeout(300)
            top = frame.evaluate(
                "document.getElementById('to-comment-reflection_largest')"
                ".getBoundingClientRect().top"
            )
            scrolled = frame.evaluate("window.scrollY")
            assert (frame.url, scrolled > 500, 0 <= top < 200) == (start, True, True)
            viewer.locator("label.course7-link", has_text="(к началу)").first.click()
            page.wait_for_timeout(300)
            assert (frame.url, frame.evaluate("window.scrollY")) == (start, 0)
        finally:
            browser.close()


@pytest.mark.slow  # настоящий make grade
def test_unit_processes_of_make_grade_print_no_runpy_warning():
    """Каждая единица заново выполняет главный модуль родителя (multiprocessing): уже
    импортированный шаблоном главный модуль (команда make grade) давал английское RuntimeWarning
    runpy."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-c", _UNIT_PROCESS],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "единица" in done.stdout
    assert "RuntimeWarning" not in done.stderr and "Warning" not in done.stderr, done.stderr


# ------------------------------------------------------------------- первый экран и таблицы


def _course_code(page: BeautifulSoup) -> list:
    """Ячейки кода на странице: (свёрнута ли, текст кода)."""
    found = []
    for cell in page.select("div.code_cell"):
        folded = cell.find_parent("details", class_="course7-course-cell") is not None
        found.append((folded, " ".join(cell.get_text(" ").split())))
    return found


def test_course_code_without_points_is_folded_and_graded_cells_are_not(lab4_work):
    page = _report(lab4_work)
    cells = _course_code(page)
    install = [folded for folded, text in cells if "COURSE_REPOSITORY" in text]
    assert install == [True]  # ячейка установки пакета — первая на странице — свёрнута
    graded = [folded for folded, text in cells if "check_calculate_param_memory" in text]
    answers = [folded for folded, text in cells if "def calculate_param_memory" in text]
    assert graded and answers and not any(graded + answers)
    folds = page.select("details.course7-course-cell")
    assert folds and all(not fold.has_attr("open") for fold in folds)
    assert all("без баллов" in fold.summary.get_text() for fold in folds)
    # Ни одной ячейки кода курса без баллов, которая осталась бы развёрнутой.
    notebook = nbformat.read(
        lab4_work / "autograded" / "ivanov" / LAB4 / f"{LAB4}.ipynb", as_version=4
    )
    course = [
        cell
        for cell in notebook.cells
        if cell.cell_type == "code"
        and not cell.metadata.get("nbgrader", {}).get("grade")
        and not cell.metadata.get("nbgrader", {}).get("solution")
    ]
    assert len(folds) == len(course)
    assert "<script" not in str(page)


def test_report_tables_have_cell_padding(lab4_work):
    page = _report(lab4_work)
    styles = " ".join(style.get_text() for style in page.find_all("style"))
    rules = re.findall(r"([^{}]+)\{([^{}]*)\}", styles)
    padded = {
        selector.strip()
        for selectors, body in rules
        if re.search(r"padding:\s*0?\.\d+em\s+0?\.\d+em", body)
        for selector in selectors.split(",")
    }
    assert {".rendered_html td", "div.output_html td", ".rendered_html th"} <= padded

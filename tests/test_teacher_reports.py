"""Отчёт для учащегося: та же страница, что у nbconvert, без разбора её целиком."""

from __future__ import annotations

import nbformat
import pytest
from bs4 import BeautifulSoup
from nbconvert.exporters import HTMLExporter

from feedback.teacher.release import ROOT
from feedback.teacher.reports import ReportExporter, report_config

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

"""Заметки оценивания: имена файлов и код из работы не становятся HTML или ссылками."""

import json
from html.parser import HTMLParser

import nbformat
import pytest
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from feedback.teacher.core.results import Finding, Job
from feedback.teacher.core.settings import CPU_LIMITS
from feedback.teacher.notebook.safe_html import code_span, markdown_text
from feedback.teacher.unit import pipeline as unit
from feedback.teacher.unit.execute import Execution

HOSTILE_NAME = "ivanov/<img src=x onerror=alert(1)>[жми](javascript:alert(2))*_x_*.ipynb"
HOSTILE_CODE = "s = '`'; t = '<img src=x onerror=alert(3)>' ``` [a](javascript:alert(4))"


class _Page(HTMLParser):
    """Теги, ссылки и текст внутри ``<code>`` отрисованной заметки."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attrs: list[tuple[str, str | None]] = []
        self.code: list[str] = []
        self._in_code = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.attrs += attrs
        if tag == "code":
            self._in_code += 1
            self.code.append("")

    def handle_endtag(self, tag):
        if tag == "code":
            self._in_code -= 1

    def handle_data(self, data):
        if self._in_code:
            self.code[-1] += data


def rendered(markdown: str) -> _Page:
    """Заметка так, как её отрисуют отчёт и formgrader (nbconvert ``markdown2html``)."""
    page = _Page()
    page.feed(markdown2html_mistune(markdown))
    page.close()
    return page


def assert_inert(page: _Page) -> None:
    assert "img" not in page.tags and "a" not in page.tags
    assert not any(name.startswith("on") or name == "href" for name, _ in page.attrs)


def test_markdown_text_shows_the_string_as_is():
    page = rendered(f"- Файл {markdown_text(HOSTILE_NAME)} назван как lab")
    assert_inert(page)
    assert "em" not in page.tags and "strong" not in page.tags
    html = markdown2html_mistune(f"- {markdown_text(HOSTILE_NAME + chr(10) + '# h')}")
    assert "<h1" not in html


@pytest.mark.parametrize("code", [HOSTILE_CODE, "`", "``", "a ` b", " x <b>*y*</b> "])
def test_code_span_holds_any_code(code):
    page = rendered(f"- ответ, строка 1: причина — {code_span(code)}")
    assert_inert(page)
    assert page.tags.count("code") == 1 and page.code == [code]


def _release() -> dict:
    cell = nbformat.v4.new_markdown_cell("Задание")
    return json.loads(nbformat.writes(nbformat.v4.new_notebook(cells=[cell])))


def test_grading_and_review_notes_of_a_unit_are_inert(tmp_path, monkeypatch):
    finding = Finding("ответ", 3, HOSTILE_CODE, "обращается к `_expected` <b>напрямую</b>")
    monkeypatch.setattr(unit, "scan", lambda *args, **kwargs: [finding])
    monkeypatch.setattr(
        unit, "execute", lambda notebook, *args: Execution(notebook=notebook, status=[])
    )
    note = f"Файл {HOSTILE_NAME} назван как lab_7_1, но это lab_7_2: оценен как lab_7_2."
    job = Job(
        student="ivanov",
        lab="lab_7_2",
        release=_release(),
        upload={"cells": []},
        notes=[note],
        seed="s",
        sandbox="none",
        limits=CPU_LIMITS,
        unit_dir=str(tmp_path),
    )
    result = unit.run_unit(job)
    grading, review = result.autograded.cells[:2]
    assert grading.metadata["course7"] == unit.GRADING_NOTE
    assert review.metadata["course7"] == unit.REVIEW_NOTE
    for cell in (grading, review):
        assert_inert(rendered(cell.source))
    assert rendered(review.source).code == [HOSTILE_CODE]
    assert "<strong>Замечания оценивания</strong>" in markdown2html_mistune(grading.source)
    assert result.problems == [note]  # в problems.csv — без экранирования


def test_unassessed_note_is_inert():
    problem = f"у учащегося несколько файлов этой лабораторной ({HOSTILE_NAME}, b.ipynb)"
    result = unit.unassessed("ivanov", "lab_7_2", "x.ipynb", _release(), problem)
    note = "".join(result.autograded["cells"][0]["source"])
    assert_inert(rendered(note))
    assert "onerror=alert(1)" in markdown2html_mistune(note).replace("&lt;", "<")

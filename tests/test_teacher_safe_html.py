"""HTML из работ без активного содержимого, но с оформлением курса."""

from feedback.result import failed
from feedback.teacher.safe_html import clean_html, clean_notebook


def test_scripts_handlers_frames_and_javascript_links_are_removed():
    dirty = (
        "<script>fetch('/api')</script><b onclick=\"steal()\">жирный</b>"
        "<a href=\"javascript:steal()\">ссылка</a><iframe src='/lab'></iframe>"
        "<img src=x onerror=steal()><svg onload=steal()></svg><style>*{}</style>"
    )
    clean = clean_html(dirty)
    for bad in ("<script", "onclick", "javascript:", "<iframe", "onerror", "onload", "<svg"):
        assert bad not in clean
    assert "<b>жирный</b>" in clean


def test_course_verdicts_and_tables_keep_their_look():
    verdict = failed("f", "ответ неверный.", "Ожидалось: 2")._repr_html_()
    clean = clean_html(verdict)
    assert "border-left:4px solid #a12622" in clean and "data-passed" in clean
    table = "<table><thead><tr><th>A</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>"
    assert clean_html(table) == table
    png = '<img src="data:image/png;base64,AAAA" alt="график">'
    assert clean_html(png) == png


def test_notebook_outputs_and_learner_markdown_are_cleaned():
    nb = {
        "cells": [
            {
                "cell_type": "markdown",
                "metadata": {"nbgrader": {"solution": True}},
                "source": "Ответ <script>x()</script>",
            },
            {"cell_type": "markdown", "metadata": {}, "source": "Текст курса <b>как есть</b>"},
            {
                "cell_type": "code",
                "metadata": {},
                "outputs": [
                    {
                        "output_type": "display_data",
                        "data": {
                            "text/html": ["<p>ok</p>", "<script>x()</script>"],
                            "application/javascript": "x()",
                        },
                    }
                ],
            },
        ]
    }
    cells = clean_notebook(nb)["cells"]
    assert "<script" not in cells[0]["source"] and cells[0]["source"].startswith("Ответ")
    assert cells[1]["source"] == "Текст курса <b>как есть</b>"
    assert cells[2]["outputs"][0]["data"] == {"text/html": "<p>ok</p>x()"}


def test_images_svg_and_markdown_outputs_cannot_carry_active_content():
    from feedback.teacher.safe_html import clean_output_data

    escape = 'iVBOR"><script>alert(1)</script>'
    data = {
        "image/png": escape,
        "image/jpeg": "/9j/4AAQ\nSkZJRg==",
        "image/svg+xml": "<svg onload='x()'></svg>",
        "text/markdown": "**ok** <script>x()</script>",
        "text/plain": "текст",
    }
    assert clean_output_data(data) == {
        "image/jpeg": "/9j/4AAQ\nSkZJRg==",
        "text/markdown": "**ok** x()",
        "text/plain": "текст",
    }


def test_image_size_from_output_metadata_cannot_add_attributes():
    """Ширину картинки nbconvert пишет без кавычек; метаданные вывода отчёт не получает."""
    import nbformat
    from nbconvert import HTMLExporter

    from feedback.teacher.safe_html import clean_notebook

    output = {
        "output_type": "display_data",
        "data": {"image/png": "iVBORw0KGgo=", "text/plain": "<Image>"},
        "metadata": {"image/png": {"width": "1 onerror=alert(1)"}},
    }
    nb = {"cells": [{"cell_type": "code", "source": "x", "metadata": {}, "outputs": [output]}]}
    cleaned = clean_notebook(nb)
    assert cleaned["cells"][0]["outputs"][0]["metadata"] == {}
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x")])
    notebook.cells[0].outputs = [nbformat.from_dict(cleaned["cells"][0]["outputs"][0])]
    html, _ = HTMLExporter(template_name="classic").from_notebook_node(notebook)
    assert "onerror" not in html and "iVBORw0KGgo=" in html

"""HTML и Markdown из работ без активного содержимого, но с оформлением курса."""

import ast
import base64
import copy
import functools
import io
import time
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter
from nbconvert.filters.markdown_mistune import markdown2html_mistune

from feedback.engine.result import failed
from feedback.teacher.core.settings import CPU_LIMITS, GPU_LIMITS
from feedback.teacher.notebook import safe_html
from feedback.teacher.notebook.safe_html import (
    HTML_LIMIT,
    MARKDOWN_LIMIT,
    MARKDOWN_NOTEBOOK_LIMIT,
    TOO_BIG,
    TOO_BIG_ANSWER,
    clean_html,
    clean_markdown,
    clean_notebook,
    clean_output_data,
)
from feedback.teacher.pages import TEMPLATES


class _Urls(HTMLParser):
    """Все адреса ``href`` и ``src`` страницы — так, как их прочтёт браузер."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.handlers: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.urls += [value or "" for name, value in attrs if name in ("href", "src")]
        self.handlers += [f"{name}={value}" for name, value in attrs if name.startswith("on")]


def dangerous_urls(page: str) -> list[str]:
    """Адреса ``javascript:``, ``vbscript:``, ``data:`` (кроме картинок) и обработчики ``on…``."""
    parser = _Urls()
    parser.feed(page)
    bad = list(parser.handlers)
    for url in parser.urls:
        # Браузер отбрасывает пробелы по краям и табуляции и переводы строк внутри адреса.
        plain = "".join(ch for ch in url if ch not in "\t\n\r").strip().lower()
        if plain.startswith(("javascript:", "vbscript:", "data:")) and not plain.startswith(
            ("data:image/png;base64,", "data:image/jpeg;base64,", "data:image/gif;base64,")
        ):
            bad.append(url)
    return bad


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
    assert "fetch" not in clean  # скрипт и стиль уходят вместе с содержимым


@pytest.mark.parametrize(
    "html",
    [
        '<a href="javascript:alert(1)">t</a>',
        '<a href=" JaVaScRiPt:alert(1)">t</a>',
        '<a href="java&#9;script:alert(1)">t</a>',
        '<a href="vbscript:msgbox(1)">t</a>',
        '<a href="data:text/html;base64,PHNjcmlwdD4=">t</a>',
        '<a href="data:image/png;base64,AAAA">t</a>',
        '<a href="/api/shutdown">t</a>',
        '<a href="//evil.example/x">t</a>',
        '<a href="file:///etc/passwd">t</a>',
        '<img src="javascript:alert(1)">',
        '<img src="data:text/html,<script>alert(1)</script>">',
        '<img src="data:image/svg+xml;base64,PHN2Zz4=">',
        '<img src="data:image/png;base64,AA&quot;onerror=alert(1)">',
        '<img src="/files/x.png">',
    ],
)
def test_only_web_mail_and_anchor_links_and_safe_images_are_kept(html):
    clean = clean_html(html)
    assert "href=" not in clean and "src=" not in clean, clean


def test_safe_links_and_images_are_kept():
    html = (
        '<a href="https://example.org/a?b=1&amp;c=2" target="_blank">веб</a>'
        '<a href="http://example.org">веб</a><a href="mailto:t@example.org">почта</a>'
        '<a href="#Задание-1">якорь</a><img src="https://example.org/a.png" alt="a">'
        '<img src="data:image/gif;base64,R0lGODlh" alt="b">'
    )
    clean = clean_html(html)
    for kept in (
        'href="https://example.org/a?b=1&amp;c=2" target="_blank"',
        'href="http://example.org"',
        'href="mailto:t@example.org"',
        'href="#Задание-1"',
        'src="data:image/gif;base64,R0lGODlh"',
    ):
        assert kept in clean


@pytest.mark.parametrize(
    "html",
    [
        '<img src="https://tracker.example/p.png?who=ivanov" alt="график">',
        '<img src="//tracker.example/p.png" alt="график">',
        '<img srcset="https://tracker.example/p.png 2x" alt="график">',
        '<p style="background: url(https://tracker.example/p.png)">текст</p>',
        "<p style=\"color: red; background-image: URL( '//tracker.example/p.png' )\">текст</p>",
        '<p style="background: u\\72 l(https://tracker.example/p.png)">текст</p>',
        '<video poster="https://tracker.example/p.png"></video>',
        '<table background="https://tracker.example/p.png"><tr><td>1</td></tr></table>',
    ],
)
def test_nothing_from_another_host_is_loaded(html):
    """Картинка или стиль с чужого адреса — пиксель слежения: от них остаётся только текст."""
    clean = clean_html(html)
    assert "tracker.example" not in clean, clean
    if "<img" in html and "srcset" not in html:
        assert f"[{safe_html.REMOTE_IMAGE}: график]" in clean


def test_remote_images_in_markdown_answers_and_course_cells():
    """В ответе — пометка; в Markdown курса (значки Colab и Kaggle) — подпись вместо картинки."""
    answer = clean_markdown("Вот: ![мой график](https://tracker.example/p.png)")
    assert "tracker.example" not in answer and safe_html.REMOTE_IMAGE in answer
    course = (
        '<a href="https://colab.research.google.com/x"><img src="https://colab.research.google.com'
        '/assets/colab-badge.svg" alt="Открыть в Colab"/></a> ![схема](http://example.org/s.png)'
    )
    shown = safe_html.without_remote_images(course)
    assert shown == '<a href="https://colab.research.google.com/x">Открыть в Colab</a> схема'


def test_every_page_we_write_carries_the_content_security_policy():
    template = TEMPLATES / "feedback_ru" / "index.html.j2"
    assert safe_html.CSP_META in template.read_text(encoding="utf-8")
    assert "mathjax" not in template.read_text(encoding="utf-8").split("{#- Без MathJax")[0]


def test_course_verdicts_tables_and_plots_keep_their_look():
    verdict = failed("f", "ответ неверный.", "Ожидалось: 2")._repr_html_()
    assert clean_html(verdict) == (
        '<div class="course7-check" data-passed="false" style="border-left:4px solid #a12622;'
        'background:#fdecea;padding:0.5em 0.8em;margin:0.3em 0;color:#222"><b>❌ f</b>: '
        'ответ неверный.<ul style="margin:0.3em 0 0 0"><li>Ожидалось: 2</li></ul></div>'
    )
    table = "<table><thead><tr><th>A</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>"
    assert clean_html(table) == table
    assert clean_html('<p style="color:red;position:fixed">x</p>') == '<p style="color:red">x</p>'

    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame({"a": [1, 2], "b": ["x<y", "z"]})
    clean = clean_html(frame._repr_html_())
    assert '<table class="dataframe">' in clean and "<td>x&lt;y</td>" in clean
    assert ".dataframe tbody" not in clean  # CSS из <style> не становится видимым текстом

    pyplot = pytest.importorskip("matplotlib.pyplot")
    figure = pyplot.figure()
    pyplot.plot([1, 2])
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    pyplot.close(figure)
    data = base64.b64encode(buffer.getvalue()).decode()
    png = f'<img src="data:image/png;base64,{data}" alt="г">'
    assert clean_html(png) == png


def test_nested_tags_are_cleaned_in_linear_time():
    """bleach тратил на это 342 с; nh3 — доли секунды."""
    html = "<b><i><u><s>" * (480 * 1024 // len("<b><i><u><s>"))
    seconds = []
    for _ in range(3):  # лучшее из трёх: машина с тестами бывает занята другими
        started = time.perf_counter()
        clean_html(html)
        seconds.append(time.perf_counter() - started)
    assert min(seconds) < 1.0


def test_bleach_is_not_used():
    tree = ast.parse(Path(safe_html.__file__).read_text(encoding="utf-8"))
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    } | {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
    }
    assert "bleach" not in imported and "nh3" in imported


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
    assert "<script" not in cells[0]["source"] and "Ответ" in cells[0]["source"]
    assert cells[1]["source"] == "Текст курса <b>как есть</b>"
    assert cells[2]["outputs"][0]["data"] == {"text/html": "<p>ok</p>"}


def test_images_svg_and_markdown_outputs_cannot_carry_active_content():
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
        "text/markdown": '<div class="course7-markdown"><p><strong>ok</strong> </p></div>',
        "text/plain": "текст",
    }


def test_image_size_from_output_metadata_cannot_add_attributes():
    """Ширину картинки nbconvert пишет без кавычек; метаданные вывода отчёт не получает."""
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


#: Ссылки в Markdown, которые nbconvert отрисовывает как есть (allow_harmful_protocols).
HOSTILE_MARKDOWN = [
    "[жми](javascript:alert(1))",
    "[жми](JAVASCRIPT:alert(1) 'заголовок')",
    "[жми](<javascript:alert(1)>)",
    "[жми](&#106;avascript:alert(1))",
    "[жми](javascript&#58;alert(1))",
    "[жми][r]\n\n[r]: javascript:alert(1)",
    "[жми][r]\n\n[r]:\n  vbscript:msgbox(1)",
    "<javascript:alert(1)>",
    "![к](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "[жми](data:text/html,<script>alert(1)</script>)",
    "<custom>[жми](javascript:alert(1))</custom>",
    '<a href="javascript:alert(1)">жми</a>',
    "<img src=x onerror=alert(1)>",
]
ORDINARY_MARKDOWN = (
    "# Вывод\n\n**Жирный**, *курсив*, ~~зачёркнуто~~, `код<b>`, "
    "[сайт](https://example.org/a?b=1), <mailto:t@example.org>, [к выводу](#Вывод).\n\n"
    "> цитата\n\n- пункт\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
    "```python\nx = 1\n\ny = 2\n```\n"
)


@functools.cache
def _exporter() -> HTMLExporter:
    return HTMLExporter(template_name="classic")


def _pages(nb: dict) -> str:
    """Тетрадка так, как её покажут отчёт и formgrader: nbconvert, шаблон classic."""
    notebook = nbformat.from_dict(copy.deepcopy(nb))
    html, _ = _exporter().from_notebook_node(notebook)
    return html


def _with_markdown(source: str) -> dict:
    answer = nbformat.v4.new_markdown_cell(source)
    answer.metadata["nbgrader"] = {"solution": True, "grade_id": "answer"}
    code = nbformat.v4.new_code_cell("x")
    code.outputs = [nbformat.v4.new_output("display_data", data={"text/markdown": source})]
    return nbformat.v4.new_notebook(cells=[answer, code])


@pytest.mark.parametrize("source", HOSTILE_MARKDOWN)
def test_markdown_links_stay_harmless_after_rendering(source):
    assert dangerous_urls(_pages(_with_markdown(source)))  # без чистки ссылка живая
    cleaned = clean_notebook(_with_markdown(source))
    page = _pages(cleaned)
    assert dangerous_urls(page) == []
    assert "жми" in page or "жми" not in source
    for text in (cleaned["cells"][0]["source"], cleaned["cells"][1]["outputs"][0]["data"]):
        rendered = markdown2html_mistune(text if isinstance(text, str) else text["text/markdown"])
        assert dangerous_urls(rendered) == []


def test_ordinary_markdown_keeps_links_and_formatting():
    page = _pages(clean_notebook(_with_markdown(ORDINARY_MARKDOWN)))
    for kept in (
        "<strong>Жирный</strong>",
        "<em>курсив</em>",
        "<del>зачёркнуто</del>",
        "<code>код&lt;b&gt;</code>",
        'href="https://example.org/a?b=1"',
        'href="mailto:t@example.org"',
        'href="#%D0%92%D1%8B%D0%B2%D0%BE%D0%B4"',
        "<blockquote>",
        "<li>пункт</li>",
        "<td>2</td>",
        "\n\n",  # пустая строка в блоке кода осталась
    ):
        assert page.count(kept) >= 2, kept  # и в ответе, и в выводе


def test_plain_answers_stay_as_written_and_cleaning_twice_changes_nothing():
    plain = "_Впишите сюда свой ответ._ Ответ: **42**, $x^2$."
    assert clean_markdown(plain) == plain  # нетронутый ответ совпадает с выпуском
    # Без «<» и «[» ссылки бывают только http(s), и кавычка из них не выходит в атрибуты.
    bare = 'см. https://a.b/"onmouseover="alert(1)"x'
    assert clean_markdown(bare) == bare and dangerous_urls(markdown2html_mistune(bare)) == []
    nb = clean_notebook(_with_markdown(ORDINARY_MARKDOWN + HOSTILE_MARKDOWN[0]))
    assert clean_notebook(copy.deepcopy(nb)) == nb


def test_markdown_images_from_attachments_are_kept():
    cell = nbformat.v4.new_markdown_cell("![график](attachment:plot.png) [x](javascript:1)")
    cell.metadata["course7"] = "added"
    cell["attachments"] = {"plot.png": {"image/png": "iVBORw0KGgo="}}
    source = clean_notebook({"cells": [cell]})["cells"][0]["source"]
    assert 'src="data:image/png;base64,iVBORw0KGgo="' in source and "javascript" not in source


def test_big_outputs_and_answers_become_a_short_note():
    assert HTML_LIMIT == CPU_LIMITS.output_bytes == GPU_LIMITS.output_bytes
    big_html = "<p>" + "x" * HTML_LIMIT + "</p>"
    big_markdown = "[a](b) " * (MARKDOWN_LIMIT // 7 + 1)
    data = clean_output_data({"text/html": big_html, "text/markdown": big_markdown})
    assert TOO_BIG in data["text/html"] and len(data["text/html"]) < 200
    assert TOO_BIG in data["text/markdown"] and len(data["text/markdown"]) < 200

    answer = nbformat.v4.new_markdown_cell(big_markdown)
    answer.metadata["nbgrader"] = {"solution": True}
    assert TOO_BIG_ANSWER in clean_notebook({"cells": [answer]})["cells"][0]["source"]

    # Каждый вывод меньше предела, но вместе — больше предела тетрадки.
    part = "[a](https://example.org) " * (MARKDOWN_LIMIT // 26)
    count = MARKDOWN_NOTEBOOK_LIMIT // len(part) + 2
    code = nbformat.v4.new_code_cell("x")
    code.outputs = [
        nbformat.v4.new_output("display_data", data={"text/markdown": part}) for _ in range(count)
    ]
    outputs = clean_notebook({"cells": [code]})["cells"][0]["outputs"]
    shown = [output["data"]["text/markdown"] for output in outputs]
    assert TOO_BIG not in shown[0] and TOO_BIG in shown[-1]


def test_lone_surrogates_do_not_stop_cleaning():
    assert clean_html("<b>\ud800</b>") == "<b>?</b>"
    assert "\ud800" not in clean_markdown("[a](https://x.org) \ud800")

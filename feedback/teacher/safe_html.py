"""HTML из работ учащихся без активного содержимого: для formgrader и отчётов.

Проверенную тетрадку преподаватель открывает в formgrader — в своём сеансе Jupyter.
Скрипт в выводе ячейки или в письменном ответе выполнился бы там с правами
преподавателя (и мог бы, например, запустить код в его ядре). Поэтому HTML из работы
чистится библиотекой bleach (на ней же стоит санитайзер nbconvert): таблицы, картинки,
оформление и ссылки остаются, скрипты, фреймы, обработчики событий и ссылки
``javascript:`` — нет.
"""

from __future__ import annotations

import re

import bleach
from bleach.css_sanitizer import CSSSanitizer

#: Теги, которыми пользуются вывод pandas, matplotlib, проверок курса и Markdown.
TAGS = frozenset(
    {
        "a", "abbr", "b", "blockquote", "br", "caption", "code", "col", "colgroup", "dd",
        "del", "details", "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3",
        "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd", "li", "mark", "ol", "p", "pre", "q",
        "s", "samp", "small", "span", "strong", "sub", "summary", "sup", "table", "tbody",
        "td", "tfoot", "th", "thead", "tr", "u", "ul",
    }
)  # fmt: skip
ATTRIBUTES = {
    "*": ["class", "id", "style", "title", "data-passed", "align", "colspan", "rowspan"],
    "a": ["href", "target"],
    "img": ["src", "alt", "width", "height"],
}
#: Свойства CSS, которыми оформлены вердикты, таблицы и заметки курса.
CSS_PROPERTIES = frozenset(
    {
        "background", "background-color", "border", "border-collapse", "border-left",
        "color", "display", "font-size", "font-style", "font-weight", "height", "margin",
        "margin-left", "margin-top", "max-width", "overflow-wrap", "padding", "table-layout",
        "text-align", "vertical-align", "white-space", "width",
    }
)  # fmt: skip
_CLEANER = bleach.Cleaner(
    tags=TAGS,
    attributes=ATTRIBUTES,
    protocols={"http", "https", "data", "mailto"},
    strip=True,
    strip_comments=True,
    css_sanitizer=CSSSanitizer(allowed_css_properties=CSS_PROPERTIES),
)
#: Выводы, которые в проверенную тетрадку не попадают совсем: скрипты и SVG (nbconvert
#: вставляет SVG в страницу как есть, а в нём бывают скрипты и обработчики событий).
ACTIVE_TYPES = (
    "application/javascript",
    "text/javascript",
    "application/x-javascript",
    "image/svg+xml",
)
#: Картинки, которые nbconvert подставляет в ``src="data:…;base64,{данные}"`` без
#: экранирования: допустимы только символы base64, иначе кавычка вывела бы их из атрибута.
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")


def clean_html(text: str) -> str:
    """HTML без скриптов, фреймов, обработчиков событий и опасных ссылок."""
    return _CLEANER.clean(text)


def clean_notebook(nb: dict) -> dict:
    """Чистит HTML в выводах и в Markdown ячеек, которые написал учащийся (на месте)."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown" and _written_by_learner(cell):
            cell["source"] = clean_html(_joined(cell.get("source", "")))
        for output in cell.get("outputs", []) or []:
            if "metadata" in output:
                # nbconvert пишет width и height картинки в тег без кавычек: «1 onerror=…»
                # из метаданных вывода стал бы атрибутом. Метаданные отчёту не нужны.
                output["metadata"] = {}
            data = output.get("data")
            if not isinstance(data, dict):
                continue
            clean_output_data(data)
    return nb


def clean_output_data(data: dict) -> dict:
    """Данные одного вывода (по типам MIME) без активного содержимого (на месте)."""
    for mime in ACTIVE_TYPES:
        data.pop(mime, None)
    for mime in IMAGE_TYPES:
        if mime in data and not _BASE64.fullmatch(_joined(data[mime])):
            data.pop(mime)
    for mime in ("text/html", "text/markdown"):  # Markdown nbconvert тоже пропускает HTML
        if mime in data:
            data[mime] = clean_html(_joined(data[mime]))
    return data


def _joined(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _written_by_learner(cell: dict) -> bool:
    metadata = cell.get("metadata", {})
    return bool(metadata.get("nbgrader", {}).get("solution")) or metadata.get("course7") == "added"

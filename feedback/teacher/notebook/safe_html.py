"""HTML и Markdown из работ учащихся без активного содержимого: для formgrader и отчётов.

Проверенную тетрадку преподаватель открывает в formgrader — в своём сеансе Jupyter.
Скрипт в выводе ячейки или в письменном ответе выполнился бы там с правами
преподавателя (и мог бы, например, запустить код в его ядре). Поэтому HTML из работы
чистится библиотекой nh3 (Ammonia на Rust, время линейно от размера; bleach на вложенных
тегах работал квадратично — 480 КБ за минуты): таблицы, картинки в самой странице,
оформление и ссылки остаются, скрипты, фреймы, обработчики событий и ссылки не на
``http``, ``https``, ``mailto`` или якорь страницы — нет. Ничто не загружается с других
адресов: картинка из интернета становится пометкой, из стилей уходят ``url(…)``, а каждая
страница курса несёт :data:`CSP_META`.

Markdown formgrader и отчёт отрисовывают сами, уже после нас, и nbconvert пропускает в нём
любые ссылки, в том числе ``[т](javascript:…)``. Поэтому Markdown учащегося отрисовывается
здесь тем же nbconvert, результат чистится и сохраняется как одна строка HTML внутри
``<div>``: по CommonMark такая строка — готовый блок HTML, который повторная отрисовка
не трогает (:func:`clean_markdown`).

Заметки оценивания (наш Markdown со строками из работы: имена файлов, строки кода) не
чистятся, а собираются из экранированных кусков: :func:`markdown_text`,
:func:`code_span`.

Чистка стоит времени основного процесса оценивания, поэтому у неё есть пределы: вывод
больше предела заменяется короткой пометкой (:data:`HTML_LIMIT`, :data:`MARKDOWN_LIMIT`).
"""

from __future__ import annotations

import html
import re

import nh3

from feedback.teacher.core.settings import Limits
from feedback.teacher.notebook.assemble import ADDED, cell_source

#: Политика безопасности содержимого каждой страницы, которую пишет курс (отчёты, сводка):
#: вторая линия защиты — даже уцелей в странице чужая картинка или стиль, браузер ничего не
#: загрузит и не выполнит.
CONTENT_SECURITY_POLICY = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"
CSP_META = f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'

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
#: Теги, которые удаляются вместе с содержимым (остальные неразрешённые — только сами теги).
DROPPED_WITH_CONTENT = frozenset(
    {"script", "style", "template", "noscript", "iframe", "object", "svg", "math", "textarea"}
)
#: Куда может вести ссылка: веб, почта, якорь на той же странице.
_SAFE_LINK = re.compile(r"(?i)(?:https?:|mailto:|#)")
#: Откуда может быть картинка: только PNG, JPEG, GIF прямо в странице (base64). Картинка с
#: другого сайта загружалась бы при каждом открытии отчёта или работы в formgrader, и сайт
#: учащегося узнавал бы, кто, когда и откуда её открыл (пиксель слежения).
_SAFE_IMAGE = re.compile(r"(?i)data:image/(?:png|jpeg|gif);base64,[a-z0-9+/=\s]*")
#: Чем отмечается картинка с другого адреса, пока пометка не заняла её место (адрес
#: ``data:`` ничего не загружает, даже если пометку поставить не удалось).
_REMOTE_MARK = "data:,course7-remote-image"
_REMOTE_IMG = re.compile(r"<img\b[^>]*\bsrc=\"" + re.escape(_REMOTE_MARK) + r"\"[^>]*>")
_ALT = re.compile(r'\balt="([^"]*)"')
#: Что видно вместо картинки с другого адреса.
REMOTE_IMAGE = "картинка из интернета не показана"
#: Что в стилях загружает ресурсы: ``url(…)``, ``image-set(…)``, ``@import``; ``\`` — их
#: запись через escape-последовательности CSS.
_CSS_FETCH = re.compile(r"(?i)url\s*\(|image-set|@import|\\")


def _attribute(tag: str, name: str, value: str) -> str | None:
    """Адреса в ``href`` и ``src`` — только разрешённые; стили — без загрузки ресурсов."""
    if name == "href":
        return value if _SAFE_LINK.match(value.strip()) else None
    if name == "src":
        if _SAFE_IMAGE.fullmatch(value.strip()):
            return value
        return _REMOTE_MARK if tag == "img" and value.strip() else None
    if name == "style":
        kept = [part for part in value.split(";") if not _CSS_FETCH.search(part)]
        return ";".join(kept) if len(kept) == len(value.split(";")) else ";".join(kept) or None
    return value


_CLEANER = nh3.Cleaner(
    tags=set(TAGS),
    clean_content_tags=set(DROPPED_WITH_CONTENT),
    attributes={tag: set(names) for tag, names in ATTRIBUTES.items()},
    attribute_filter=_attribute,
    strip_comments=True,
    url_schemes={"http", "https", "mailto", "data"},
    filter_style_properties=set(CSS_PROPERTIES),
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

#: Предел HTML одного вывода (байты UTF-8): столько же песочница оставляет от вывода ячейки
#: (а от всей тетрадки — 8 МиБ). nh3 линеен: в худшем случае (вложенные теги) около 1 с на
#: МиБ, то есть не больше ~10 с на тетрадку.
HTML_LIMIT = Limits.output_bytes
#: Предел Markdown одного вывода или письменного ответа. Отрисовка mistune медленнее nh3
#: в сотни раз (64 КиБ ``*_[*_[…`` — около 3 с), а тот же Markdown ещё раз отрисует отчёт,
#: поэтому предел в 32 раза меньше; ответы курса — несколько абзацев.
MARKDOWN_LIMIT = Limits.output_bytes // 32
#: Предел всего Markdown одной тетрадки (ответы и выводы вместе, 256 КиБ): дальше — пометки.
MARKDOWN_NOTEBOOK_LIMIT = Limits.total_output_bytes // 32
TOO_BIG = "вывод слишком большой для отчёта"
TOO_BIG_ANSWER = "ответ слишком большой для отчёта"
#: Обёртка отрисованного Markdown: строка, начатая с ``<div``, — блок HTML по CommonMark.
MARKDOWN_BLOCK = '<div class="course7-markdown">'


def clean_html(text: str) -> str:
    """HTML без скриптов, фреймов, обработчиков событий, опасных ссылок и чужих ресурсов.

    Картинка с другого адреса становится пометкой :data:`REMOTE_IMAGE` (с её подписью, без
    ссылки), из стилей уходит всё, что загружает ресурсы.
    """
    return _REMOTE_IMG.sub(_remote_note, _CLEANER.clean(_encodable(text)))


def _remote_note(match: re.Match) -> str:
    alt = _ALT.search(match[0])
    label = f"{REMOTE_IMAGE}: {alt[1]}" if alt and alt[1].strip() else REMOTE_IMAGE
    return f'<span class="course7-remote-image">[{label}]</span>'


#: Картинки с другого адреса в Markdown курса: ``![подпись](http…)`` и ``<img … src="http…">``.
_MARKDOWN_REMOTE = re.compile(r"!\[([^\]]*)\]\(\s*<?https?:[^)]*\)")
_HTML_REMOTE = re.compile(r"(?is)<img\b[^>]*\bsrc\s*=\s*[\"']?\s*(?:https?:)?//[^>]*>")
_HTML_ALT = re.compile(r"(?is)\balt\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")


def without_remote_images(markdown: str) -> str:
    """Markdown курса без картинок с других адресов: вместо картинки — её подпись.

    Так значки «Открыть в Colab» в отчёте и в formgrader — просто ссылки: открыть страницу
    не значит обратиться к сайтам Colab и Kaggle.
    """
    if "http" not in markdown and "//" not in markdown:
        return markdown

    def alt_of(match: re.Match) -> str:
        alt = _HTML_ALT.search(match[0])
        text = (alt[1] or alt[2]) if alt else ""
        return text.strip() or f"[{REMOTE_IMAGE}]"

    markdown = _MARKDOWN_REMOTE.sub(lambda m: m[1].strip() or f"[{REMOTE_IMAGE}]", markdown)
    return _HTML_REMOTE.sub(alt_of, markdown)


def clean_markdown(text: str, attachments: dict | None = None) -> str:
    """Markdown учащегося, который после отрисовки nbconvert не несёт активного содержимого.

    Без ``<`` и ``[`` в Markdown нет ни HTML, ни ссылок, ни картинок (адреса без них
    бывают только ``http(s)://…``) — такой текст, в том числе нетронутый ответ, остаётся
    как есть. Иначе Markdown отрисовывается так же, как его отрисуют formgrader и отчёт
    (nbconvert, ``markdown2html``), HTML чистится и возвращается одной строкой в
    :data:`MARKDOWN_BLOCK` — повторная отрисовка оставит её как есть. ``attachments`` —
    вложения ячейки (картинки ``attachment:…``). Предел размера здесь не проверяется.
    """
    text = _encodable(text)
    if "<" not in text and "[" not in text:
        return text
    try:
        rendered = _render_markdown(text, _image_attachments(attachments))
    except Exception:  # в том числе ссылка на отсутствующее вложение: показать как текст
        rendered = f"<pre>{html.escape(text, quote=False)}</pre>"
    block = clean_html(rendered).strip().replace("\r", "&#13;").replace("\n", "&#10;")
    # Уже готовый блок (повторная чистка) не оборачивается ещё раз: он и так одна строка.
    return block if block.startswith(MARKDOWN_BLOCK) else f"{MARKDOWN_BLOCK}{block}</div>"


def clean_notebook(nb: dict) -> dict:
    """Чистит HTML в выводах и Markdown ячеек, которые написал учащийся (на месте).

    В Markdown курса картинки с других адресов заменяются подписями (:func:`without_remote_images`).

    Повторная чистка ничего не меняет. Markdown всей тетрадки вместе ограничен
    :data:`MARKDOWN_NOTEBOOK_LIMIT`: дальше ответы и выводы заменяются пометкой.
    """
    budget = _Budget(MARKDOWN_NOTEBOOK_LIMIT)
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown" and _written_by_learner(cell):
            source = cell_source(cell)
            if budget.fits(source):
                cell["source"] = clean_markdown(source, cell.get("attachments"))
            else:
                cell["source"] = f"_{_too_big(TOO_BIG_ANSWER, source, MARKDOWN_LIMIT)}_"
        elif cell.get("cell_type") == "markdown":
            cell["source"] = without_remote_images(cell_source(cell))
        for output in cell.get("outputs", []) or []:
            if "metadata" in output:
                # nbconvert пишет width и height картинки в тег без кавычек: «1 onerror=…»
                # из метаданных вывода стал бы атрибутом. Метаданные отчёту не нужны.
                output["metadata"] = {}
            data = output.get("data")
            if not isinstance(data, dict):
                continue
            _clean_output_data(data, budget)
    return nb


def clean_output_data(data: dict) -> dict:
    """Данные одного вывода (по типам MIME) без активного содержимого (на месте)."""
    return _clean_output_data(data, _Budget(MARKDOWN_LIMIT))


def _clean_output_data(data: dict, budget: _Budget) -> dict:
    for mime in ACTIVE_TYPES:
        data.pop(mime, None)
    for mime in IMAGE_TYPES:
        if mime in data and not _BASE64.fullmatch(_joined(data[mime])):
            data.pop(mime)
    if "text/html" in data:
        text = _joined(data["text/html"])
        if _size(text) <= HTML_LIMIT:
            data["text/html"] = clean_html(text)
        else:
            data["text/html"] = f"<p><em>{_too_big(TOO_BIG, text, HTML_LIMIT)}</em></p>"
    if "text/markdown" in data:
        text = _joined(data["text/markdown"])
        if budget.fits(text):
            data["text/markdown"] = clean_markdown(text)
        else:
            data["text/markdown"] = f"_{_too_big(TOO_BIG, text, MARKDOWN_LIMIT)}_"
    return data


def markdown_text(text: object) -> SafeMarkdown:
    """Строка из работы как текст внутри строки Markdown заметки: без разметки и HTML.

    Переводы строк становятся пробелами (иначе с новой строки начался бы заголовок, блок
    HTML или определение ссылки ``[x]: javascript:…``), ``<>&"'`` — ссылками на символы
    HTML, знаки разметки Markdown (ссылки, выделение, код, формулы) экранируются ``\\``.
    Уже собранный :class:`SafeMarkdown` возвращается как есть.
    """
    if isinstance(text, SafeMarkdown):
        return text
    line = _LINE_BREAKS.sub(" ", _encodable(str(text)))
    return SafeMarkdown(html.escape(_MARKDOWN_SYNTAX.sub(r"\\\1", line), quote=True))


def code_span(code: object) -> SafeMarkdown:
    """Строка кода из работы как ``<code>`` в заметке: обратная кавычка её не закроет.

    Внутри ``<code>`` Markdown ещё разбирается, поэтому содержимое экранируется так же,
    как в :func:`markdown_text`.
    """
    return SafeMarkdown(f"<code>{markdown_text(code)}</code>")


class SafeMarkdown(str):
    """Markdown, собранный из экранированных кусков: заметка вставляет его как есть."""


#: Знаки с разметкой в Markdown nbconvert (CommonMark, таблицы, зачёркивание, формулы).
_MARKDOWN_SYNTAX = re.compile(r"([\\`*_\[\]()#+\-.!|~$^{}:])")
_LINE_BREAKS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f\x85\u2028\u2029]+")


class _Budget:
    """Сколько байт Markdown ещё можно отрисовать: по ячейке и по тетрадке."""

    def __init__(self, total: int) -> None:
        self.left = total

    def fits(self, text: str) -> bool:
        size = _size(text)
        if size > MARKDOWN_LIMIT or size > self.left:
            return False
        self.left -= size
        return True


def _too_big(what: str, text: str, limit: int) -> str:
    return f"{what} ({_size(text) // 1024} КиБ; предел {limit // 1024} КиБ)"


def _size(text: str) -> int:
    return len(text.encode("utf-8", "replace"))


def _encodable(text: str) -> str:
    """Без одиночных суррогатов (JSON их допускает, а nh3 на них падает)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def _render_markdown(text: str, attachments: dict) -> str:
    """Markdown → HTML тем же кодом, что и ``markdown2html`` в шаблонах nbconvert."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    renderer = IPythonRenderer(escape=False, attachments=attachments)
    return MarkdownWithMath(renderer=renderer).render(text)


def _image_attachments(attachments: object) -> dict:
    """Вложения-картинки PNG и JPEG с данными base64 (остальные не показываются)."""
    if not isinstance(attachments, dict):
        return {}
    kept = {}
    for name, bundle in attachments.items():
        if not isinstance(bundle, dict):
            continue
        images = {
            mime: _joined(bundle[mime])
            for mime in ("image/png", "image/jpeg")
            if mime in bundle and _BASE64.fullmatch(_joined(bundle[mime]))
        }
        if images:
            kept[str(name)] = images
    return kept


def _joined(value: object) -> str:
    return "".join(value) if isinstance(value, list) else str(value)


def _written_by_learner(cell: dict) -> bool:
    metadata = cell.get("metadata", {})
    return bool(metadata.get("nbgrader", {}).get("solution")) or metadata.get("course7") == ADDED

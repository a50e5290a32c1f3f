"""Разбор страницы без браузера: что в ней выполнилось бы или загрузилось с другого адреса.

Каждый отчёт и каждая страница formgrader класса проверяются так (это быстро и ничего не
пропускает), а в Chromium открывается по одной странице на каждый вид враждебной работы
(tests/teacher/pages/test_hostile_pages_browser.py): разбор и браузер дополняют друг друга.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urlsplit

#: Атрибуты, по которым браузер сам загружает ресурс.
RESOURCE_ATTRIBUTES = {"src", "srcset", "poster", "background", "data", "lowsrc", "dynsrc"}
#: Теги, у которых ресурс в ``href``.
HREF_RESOURCES = {"link", "image", "use"}
_DANGEROUS_LINK = re.compile(r"^\s*(javascript|vbscript|data):", re.IGNORECASE)
_CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)", re.IGNORECASE)


class _Page(HTMLParser):
    def __init__(
        self,
        origin: str | None,
        marker: str,
        scripts_allowed: bool,
        known: tuple[str, ...],
        own_handlers: frozenset[str],
    ) -> None:
        super().__init__(convert_charrefs=True)
        self.origin, self.marker, self.scripts_allowed = origin, marker, scripts_allowed
        self.known, self.own_handlers = known, own_handlers
        self.problems: list[str] = []
        self._in_script = self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            value = value or ""
            if name.startswith("on") and value not in self.own_handlers:
                self.problems.append(f"обработчик {name} у <{tag}>")
            if name in ("href", "xlink:href", "action", "formaction") and _DANGEROUS_LINK.match(
                value
            ):
                self.problems.append(f"ссылка {value[:60]!r} у <{tag}>")
            if name in RESOURCE_ATTRIBUTES or (name == "href" and tag in HREF_RESOURCES):
                for url in value.split(","):
                    self._resource(tag, url.strip().split(" ")[0])
            if name == "style":
                for url in _CSS_URL.findall(value):
                    self._resource(f"{tag} style", url)
        if tag == "script":
            self._in_script = True
            if not self.scripts_allowed:
                self.problems.append("скрипт на странице")
        if tag == "style":
            self._in_style = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_script and self.marker in data:
            self.problems.append("скрипт из работы")
        if self._in_style:
            for url in _CSS_URL.findall(data):
                self._resource("style", url)

    def _resource(self, where: str, url: str) -> None:
        if not url or url.startswith("data:") or url.startswith("#"):
            return
        parts = urlsplit(url)
        if parts.scheme or parts.netloc:
            host = f"{parts.scheme}://{parts.netloc}" if parts.scheme else f"//{parts.netloc}"
            if url.startswith(self.known):
                return
            if self.origin is None or not url.startswith(self.origin):
                self.problems.append(f"ресурс с другого адреса у {where}: {host}")


#: Что грузит сама страница formgrader (шаблон nbgrader formgrade, не работа): MathJax с CDN.
FORMGRADER_OWN = ("https://cdnjs.cloudflare.com/ajax/libs/mathjax/",)


def formgrader_handlers() -> frozenset[str]:
    """Обработчики событий из шаблонов самого formgrader (скрыть и показать имя учащегося).

    Берутся из установленного nbgrader, а не списком: обработчик с другим текстом — уже не
    шаблона, а работы.
    """
    import nbgrader

    templates = Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"
    found = set()
    for template in templates.rglob("*"):
        if template.is_file():
            found.update(_HANDLER.findall(template.read_text(encoding="utf-8")))
    return frozenset(found)


_HANDLER = re.compile(r'\bon[a-z]+="([^"{}]+)"')


def page_problems(
    html: str,
    marker: str,
    origin: str | None = None,
    scripts_allowed: bool = False,
    known: tuple[str, ...] = (),
    own_handlers: frozenset[str] = frozenset(),
) -> list[str]:
    """Что на странице выполнилось бы или загрузилось бы с другого адреса (пусто — ничего).

    ``origin`` — адрес сервера страницы (его ресурсы свои), ``marker`` — строка, по которой
    узнаётся скрипт из работы; ``scripts_allowed`` — у страницы есть свои скрипты (formgrader);
    ``known`` — адреса, которые грузит сама страница, а не работа (:data:`FORMGRADER_OWN`);
    ``own_handlers`` — тексты обработчиков шаблона страницы (:func:`formgrader_handlers`).
    """
    page = _Page(origin, marker, scripts_allowed, known, own_handlers)
    page.feed(html)
    page.close()
    return page.problems

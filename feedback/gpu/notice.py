"""Заметные предупреждения для тетрадок: HTML в Jupyter, рамка из символов в терминале."""

from __future__ import annotations

import html
import sys

_STYLES = {
    "warning": ("#fff4ce", "#c77c00"),
    "info": ("#e8f1fb", "#2f6db5"),
}


def notice_text(title: str, body: str) -> str:
    """Простой текст предупреждения в рамке (для терминала и логов CI)."""
    bar = "=" * 78
    return f"{bar}\n{title}\n{bar}\n{body}\n{bar}"


def notice_html(title: str, body: str, level: str = "warning") -> str:
    """HTML-блок предупреждения; абзацы тела разделяются пустой строкой."""
    background, border = _STYLES.get(level, _STYLES["warning"])
    paragraphs = "".join(
        f"<p style='margin:0.4em 0'>{html.escape(part).replace(chr(10), '<br>')}</p>"
        for part in body.split("\n\n")
    )
    return (
        f"<div style='background:{background};border-left:6px solid {border};"
        f"padding:0.6em 1em;margin:0.5em 0;color:#222'>"
        f"<p style='margin:0.2em 0;font-weight:bold;font-size:1.1em'>{html.escape(title)}</p>"
        f"{paragraphs}</div>"
    )


def _in_notebook() -> bool:
    ipython_module = sys.modules.get("IPython")
    if ipython_module is None:
        return False
    shell = ipython_module.get_ipython()
    return shell is not None and "Terminal" not in type(shell).__name__


def show_notice(title: str, body: str, level: str = "warning") -> None:
    """Показывает предупреждение: в тетрадке — цветной блок, иначе — текст в рамке."""
    if _in_notebook():
        from IPython.display import display

        display(
            {"text/html": notice_html(title, body, level), "text/plain": notice_text(title, body)},
            raw=True,
        )
    else:
        print(notice_text(title, body), flush=True)

"""Генерации двух моделей рядом: HTML-таблица «запрос — Gemma-1B — Gemma-4B»."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from feedback.generation.visible import tiny_label_html, visible, visible_html


def _printable(text: str) -> str:
    """Непечатаемые символы (их выдаёт крошечная модель) — метками «⟨U+XXXX⟩»."""
    return visible(text)


def _escape(text: str) -> str:
    return visible_html(text)


def _shorten(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_TEXT_CELL = "text-align:left;vertical-align:top;white-space:pre-wrap;overflow-wrap:anywhere"


def _generation_cell(prompt: str, generations: Any, index: int) -> str:
    try:
        text = generations[index]
    except Exception:
        return "<td style='color:#888'>—</td>"
    if not isinstance(text, str):
        return f"<td style='color:#a12622'>не строка: {html.escape(type(text).__name__)}</td>"
    if text.startswith(prompt):
        head, tail = prompt, text[len(prompt) :]
    elif text.lstrip().startswith(prompt.strip()):
        head, tail = prompt.strip(), text.lstrip()[len(prompt.strip()) :]
    else:
        head, tail = "", text
    shown_head = f"<span style='color:#777'>{_escape(head)}</span>" if head else ""
    return f"<td style='{_TEXT_CELL}'>{shown_head}<b>{_escape(tail)}</b></td>"


def side_by_side_html(
    prompts: Sequence[str],
    gens_1b: Any,
    gens_4b: Any,
    names: tuple[str, str] = ("Gemma-1B", "Gemma-4B"),
    tiny: bool | None = None,
) -> str:
    """HTML-таблица: запрос и продолжения двух моделей в одной строке.

    ``tiny`` — учебный режим (по умолчанию — как сейчас в процессе): над таблицей пометка, что
    это генерации крошечной модели.
    """
    rows = []
    for index, prompt in enumerate(prompts):
        rows.append(
            f"<tr><td style='vertical-align:top'>{index + 1}</td>"
            f"<td style='{_TEXT_CELL}'><i>{_escape(prompt)}</i></td>"
            f"{_generation_cell(prompt, gens_1b, index)}"
            f"{_generation_cell(prompt, gens_4b, index)}</tr>"
        )
    missing = [
        name
        for name, gens in zip(names, (gens_1b, gens_4b), strict=True)
        if not isinstance(gens, list | tuple) or len(gens) != len(prompts)
    ]
    note = (
        "<p style='color:#a12622'>Пока не хватает генераций: "
        + html.escape(", ".join(missing))
        + ". Вернитесь к заданиям 1 и 2.</p>"
        if missing
        else ""
    )
    return (
        "<div class='course7-side-by-side'>"
        f"{tiny_label_html(tiny)}"
        f"<p style='margin:0.3em 0;color:#555'>Серым — запрос, жирным — продолжение модели.</p>"
        "<table style='table-layout:fixed;width:100%'>"
        "<colgroup><col style='width:3%'><col style='width:21%'><col style='width:38%'>"
        "<col style='width:38%'></colgroup>"
        f"<thead><tr><th>№</th><th>Запрос</th><th>{html.escape(names[0])}</th>"
        f"<th>{html.escape(names[1])}</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>{note}</div>"
    )


def show_side_by_side(prompts: Sequence[str], gens_1b: Any, gens_4b: Any) -> Any:
    """Показывает генерации двух моделей рядом, по строке на запрос (HTML)."""
    from IPython.display import HTML

    return HTML(side_by_side_html(prompts, gens_1b, gens_4b))

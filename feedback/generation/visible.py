"""Текст генерации так, чтобы непечатаемое было видно, и пометка учебного режима.

Крошечная учебная модель со случайными весами выдаёт и управляющие символы (звонок, стирание
экрана, переводы кодировки), и «�» — обрывки байтов, которые не складываются в символ UTF-8.
Напечатанные как есть, они выглядят пустыми квадратиками или портят вывод. Здесь каждый такой
символ заменяется видимой меткой с его кодом: в тексте — «⟨U+0007⟩», в HTML — такой же меткой
в рамке. Пробелы, переводы строк и табуляция остаются как есть.
"""

from __future__ import annotations

import html

from feedback.gpu.tiny_mode import is_tiny_mode

#: Символ замены: им декодер обозначает байты, не сложившиеся в символ UTF-8.
REPLACEMENT = "\ufffd"

#: Пометка учебного режима над генерациями и таблицами.
TINY_LABEL = (
    "Учебный режим: это генерации крошечной модели со случайными весами — бессмысленный набор "
    "слов и символов. Непечатаемые символы показаны кодами, например ⟨U+FFFD⟩."
)


def is_hidden(char: str) -> bool:
    """Символ, который нельзя показать как есть: управляющий, невидимый или «�»."""
    return char == REPLACEMENT or (not char.isprintable() and char not in "\n\t")


def _label(char: str) -> str:
    return f"⟨U+{ord(char):04X}⟩"


def visible(text: str) -> str:
    """Текст, где каждый непечатаемый символ заменён меткой «⟨U+XXXX⟩»."""
    return "".join(_label(char) if is_hidden(char) else char for char in str(text))


def visible_html(text: str) -> str:
    """То же для HTML: текст экранирован, метки — в рамке, чтобы не спутать их с текстом."""
    parts = []
    for char in str(text):
        if is_hidden(char):
            parts.append(
                "<span class='course7-hidden-char' style='border:1px solid #bbb;"
                "border-radius:3px;padding:0 2px;color:#a12622;font-size:0.8em'>"
                f"{html.escape(_label(char))}</span>"
            )
        else:
            parts.append(html.escape(char))
    return "".join(parts)


#: Пометка учебного режима над замерами времени.
TINY_TIMING_LABEL = (
    "Учебный режим: это время крошечной модели на процессоре — о скорости настоящих Gemma "
    "оно ничего не говорит."
)


def tiny_label_html(tiny: bool | None = None, label: str = TINY_LABEL) -> str:
    """Жёлтая пометка «учебный режим» (пусто, если работает настоящая модель)."""
    if not (is_tiny_mode() if tiny is None else tiny):
        return ""
    return (
        "<p class='course7-tiny-label' style='background:#fff4cc;border-left:4px solid #e0a800;"
        f"padding:0.3em 0.6em;margin:0.3em 0;color:#222'>⚠ {html.escape(label)}</p>"
    )


def show_texts(texts: object, tiny: bool | None = None) -> None:
    """Печатает генерации по номерам, непечатаемое — метками; в учебном режиме — с пометкой."""
    if is_tiny_mode() if tiny is None else tiny:
        print(f"⚠ {TINY_LABEL}\n")
    if isinstance(texts, str):
        texts = [texts]
    if not isinstance(texts, list | tuple):
        print(f"Нужен список строк, а получен объект типа {type(texts).__name__}.")
        return
    for number, text in enumerate(texts, start=1):
        print(f"{number}. {visible(text)}\n" if isinstance(text, str) else f"{number}. {text!r}\n")

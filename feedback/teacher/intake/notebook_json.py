"""Байты сданного файла → тетрадка Jupyter (словарь), или русская причина, почему это не она.

Файл от учащегося может быть пустым, не в UTF-8, не JSON, JSON-бомбой (32 МиБ пустых списков
развернулись бы в гигабайт объектов), с сотнями уровней вложенности или с одиночными
суррогатами UTF-16. Поэтому до разбора лексемы JSON только считаются (:func:`check_structure`),
а после разбора тетрадка любого формата 4.x (и старого 3) приводится к списку ячеек. Отдельно
от чтения папок и архивов (:mod:`feedback.teacher.intake.archives`) и от того, чья это работа
(:mod:`feedback.teacher.intake.uploads`): этот же разбор нужен и JupyterHub курса.
"""

from __future__ import annotations

import json
import re
from typing import Any

#: Пределы JSON тетрадки (:func:`check_structure`). Выполненные эталонные решения курса:
#: глубина 7–8, списков и словарей 144–438, значений 881–2295. Сотни уровней
#: вложенности ломают рекурсивный разбор дальше (nbformat, json); на пределах списков и
#: значений разобранная тетрадка занимает меньше 100 МиБ (без них 32 МиБ пустых списков —
#: больше 700 МиБ).
MAX_JSON_DEPTH = 100
MAX_JSON_CONTAINERS = 100_000
#: Значение — строка, число, литерал, список или словарь (строка вывода — тоже значение).
MAX_JSON_VALUES = 1_000_000


class UnreadableUpload(ValueError):
    """Файл не удаётся прочитать как тетрадку; текст — русское объяснение."""


TOO_DEEP = "слишком глубокая вложенность JSON"

#: Лексемы JSON по порядку: строка (до закрывающей кавычки или до конца файла), открытие,
#: закрытие, число или литерал. Повторы — сверхжадные (``*+``): обычный повтор группы
#: копит состояние возврата на каждый экранированный символ (гигабайты на 32 МиБ «\\n»),
#: а незакрытая строка без ``\Z`` сканировалась бы заново с каждой кавычки — квадратично.
_TOKEN = re.compile(
    rb'(")[^"\\]*+(?:\\.[^"\\]*+)*+(?:"|\\?\Z)|([\[{])|([\]}])|([^\s\[\]{}",:]++)', re.S
)
_OPEN, _CLOSE = 2, 3


def _number(value: int) -> str:
    return f"{value:,}".replace(",", "\u00a0")


def check_structure(data: bytes) -> None:
    """Отказ до разбора, если JSON слишком глубок или в нём абсурдно много значений.

    ``json.loads`` строит все объекты сразу: файл из пустых списков занимает в памяти
    в 20 раз больше, чем на диске, а сотни уровней вложенности ломают рекурсивный разбор
    дальше по цепочке (``RecursionError``, которую легко принять за другую беду). Здесь
    лексемы только считаются, без построения объектов: память — постоянная, время —
    линейное и кончается на первом превышенном пределе. Синтаксис не проверяется — это
    дело ``json.loads``.
    """
    depth = containers = values = 0
    for token in _TOKEN.finditer(data):
        kind = token.lastindex
        if kind == _CLOSE:
            depth -= 1
            continue
        values += 1
        if values > MAX_JSON_VALUES:
            raise UnreadableUpload(
                f"не похоже на тетрадку курса: больше {_number(MAX_JSON_VALUES)} значений JSON "
                "(в тетрадке с выводами их тысячи) — очистите выводы и сдайте заново"
            )
        if kind != _OPEN:
            continue
        depth += 1
        containers += 1
        if depth > MAX_JSON_DEPTH:
            raise UnreadableUpload(
                f"файл повреждён: {TOO_DEEP} (больше {MAX_JSON_DEPTH} уровней, "
                "в тетрадке Jupyter их меньше десяти)"
            )
        if containers > MAX_JSON_CONTAINERS:
            raise UnreadableUpload(
                f"не похоже на тетрадку курса: больше {_number(MAX_JSON_CONTAINERS)} списков "
                "и словарей JSON (в тетрадке с выводами их сотни) — очистите выводы и сдайте "
                "заново"
            )


#: Экранированная половина суррогатной пары (``\ud83d``): после разбора может остаться
#: одиночной, а одиночный суррогат не записать в UTF-8 — ни в задание единицы, ни в CSV.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def read_notebook(data: bytes, notes: list[str] | None = None) -> dict[str, Any]:
    """Тетрадка из байтов: любой формат 4.x (Colab, Kaggle), без строгой проверки схемы.

    Одиночные суррогаты UTF-16 из JSON (обрезанный эмодзи) заменяются на «�»; о замене
    дописывается заметка в ``notes``.
    """
    if not data.strip():
        raise UnreadableUpload("пустой файл")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableUpload("файл не в кодировке UTF-8 — это не тетрадка Jupyter") from None
    check_structure(data)
    try:
        nb = json.loads(text)
    except RecursionError:
        raise UnreadableUpload(f"файл повреждён: {TOO_DEEP}") from None
    except ValueError as error:
        raise UnreadableUpload(f"файл повреждён: это не JSON ({error})") from None
    del text
    if _SURROGATE_ESCAPE.search(data):
        dumped = json.dumps(nb, ensure_ascii=False)
        if _SURROGATE.search(dumped):
            nb = json.loads(_SURROGATE.sub("\ufffd", dumped))
            if notes is not None:
                notes.append(
                    "В файле были недопустимые символы (одиночные суррогаты): заменены на «�»."
                )
    if not isinstance(nb, dict):
        raise UnreadableUpload("это не тетрадка Jupyter: в файле нет ячеек")
    if "worksheets" in nb and "cells" not in nb:  # формат 3
        worksheets = nb.get("worksheets") or [{}]
        nb = {"cells": worksheets[0].get("cells", []) if isinstance(worksheets[0], dict) else []}
        for cell in nb["cells"]:
            if isinstance(cell, dict) and "input" in cell:
                cell["source"] = cell.pop("input")
    if not isinstance(nb.get("cells"), list):
        raise UnreadableUpload("это не тетрадка Jupyter: в файле нет ячеек")
    return nb

"""Таблицы CSV для преподавателя, которые безопасно открывать в Excel и LibreOffice.

В ячейки попадает то, что пришло от учащихся: имена файлов и папок, код, причины
проблем с цитатами из работы. Ячейку, которая начинается с ``=``, ``+``, ``-``, ``@``,
табуляции или возврата каретки, табличный редактор может выполнить как формулу
(CSV injection, правило OWASP), поэтому такие ячейки пишутся с апострофом впереди.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from feedback.teacher.files import replacing

#: С чего начинается формула (список OWASP).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """Ячейка, которую табличный редактор не примет за формулу: ``'`` перед опасным началом.

    Обезвреживаются только строки: в них и попадает текст из работ. Числа (``int``,
    ``float``) остаются числами: их считаем мы сами (баллы, секунды, номера строк), и
    отрицательными они здесь не бывают; число, которое нужно обезвредить, передавайте
    строкой. ``None`` — пустая ячейка, как в :mod:`csv`.
    """
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


def write_csv(path: Path, header: list[str], rows: Iterable[Iterable[Any]]) -> None:
    """Пишет таблицу UTF-8 с заголовком; каждая ячейка проходит через :func:`safe_cell`.

    Таблица пишется целиком или никак (:func:`feedback.teacher.files.replacing`).

    Символы, которых нет в UTF-8 (одиночные суррогаты из имён файлов или JSON работы),
    заменяются на ``?``: одна такая ячейка не должна оставить таблицу недописанной.
    """
    with replacing(path, "w", newline="", encoding="utf-8", errors="replace") as fh:
        writer = csv.writer(fh)
        writer.writerow([safe_cell(cell) for cell in header])
        writer.writerows([safe_cell(cell) for cell in row] for row in rows)

"""Проверки курса по имени из ячейки-теста: ``"flops.check_compute_num_flops"`` → проверка.

Ячейка-тест тетрадки вызывает проверку модуля лабораторной
(``flops.check_compute_num_flops(compute_num_flops)``). Программа оценивания находит эту
проверку по имени вызова, а зонд в песочнице — по имени, которое ему передали. Модули
лабораторных, в которых объявлены проверки, перечислены в :data:`CHECK_MODULES`: это
место, где программа курса импортирует модуль лабораторной по строке; движок проверок
(:func:`feedback.engine.graded.check_function`) ищет проверку только в уже импортированных
модулях и сам их не импортирует (слои — ``tests/project/test_import_graph.py``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from feedback.engine import graded
from feedback.engine.graded import GradedCheck
from feedback.engine.result import CheckResult

#: Модули лабораторных (``feedback.<имя>``), в которых объявлены проверки ячеек-тестов.
CHECK_MODULES = ("accumulation", "flops", "generation", "memory", "precision", "wall")


def load(name: str) -> str:
    """Импортирует модуль лабораторной, где объявлена проверка ``name``; возвращает его имя.

    Модуль не из :data:`CHECK_MODULES` — :class:`KeyError`: по имени из тетрадки
    импортируется только модуль курса с проверками.
    """
    module = graded.check_module(name)
    if module not in CHECK_MODULES:
        raise KeyError(f"в feedback.{module} нет проверок курса: {name!r}")
    return importlib.import_module(f"feedback.{module}").__name__


def check_function(name: str) -> Callable[..., CheckResult]:
    """Функция проверки по имени из ячейки-теста (модуль импортируется, если нужно)."""
    load(name)
    return graded.check_function(name)


def find(name: str) -> GradedCheck:
    """Описание проверки (:class:`~feedback.engine.graded.GradedCheck`) по её имени."""
    return check_function(name).graded  # type: ignore[attr-defined]

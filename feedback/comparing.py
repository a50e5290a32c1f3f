"""Общий движок проверок «функция → число».

Проверка вызывает функцию учащегося на нескольких случаях (не только на константах
лабораторной, чтобы жёстко вписанный ответ не прошёл), сравнивает с эталоном и,
если ответ совпал с типичной ошибкой, добавляет подсказку именно про неё.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from feedback.calling import as_number, call_learner, describe_case
from feedback.formatting import format_number, format_pair, plural
from feedback.result import CheckResult, failed, passed

Formula = Callable[..., float]


@dataclass(frozen=True)
class Mistake:
    """Типичная ошибка: что получилось бы по неверной формуле и подсказка к ней."""

    formula: Formula
    hint: str


def is_close(got: float, expected: float, rel_tol: float) -> bool:
    """Совпадение с относительной точностью (и нулями, сравниваемыми точно)."""
    return math.isclose(got, expected, rel_tol=rel_tol, abs_tol=0.0)


def find_mistake(
    got: float, case: dict[str, Any], expected: float, mistakes: Sequence[Mistake], rel_tol: float
) -> str | None:
    """Подсказка к первой типичной ошибке, с которой совпал ответ."""
    for mistake in mistakes:
        wrong = mistake.formula(*case.values())
        if not is_close(wrong, expected, rel_tol) and is_close(got, wrong, rel_tol):
            return mistake.hint
    return None


def named_cases(
    cases: Sequence[Sequence[float]] | None, defaults: Sequence[dict[str, Any]]
) -> Sequence[dict[str, Any]]:
    """Свои случаи (кортежи аргументов по порядку) с именами аргументов из ``defaults``.

    Так скрытые тесты nbgrader проверяют функцию на числах, которых учащийся не видел.
    """
    if cases is None:
        return defaults
    names = list(defaults[0])
    return [dict(zip(names, case, strict=True)) for case in cases]


def check_numeric_function(
    title: str,
    fn: Any,
    cases: Sequence[dict[str, Any]],
    formula: Formula,
    mistakes: Sequence[Mistake] = (),
    formatter: Callable[..., str] = format_number,
    rel_tol: float = 1e-6,
    generic_hint: str | None = None,
) -> CheckResult:
    """Сверяет функцию учащегося с эталонной формулой на всех случаях.

    Останавливается на первом неверном случае и называет его, ожидаемое и
    полученное значения (с достаточным числом цифр) и подсказку, если ошибка
    известна.
    """
    for case in cases:
        got = as_number(call_learner(fn, case), case)
        expected = formula(*case.values())
        if is_close(got, expected, rel_tol):
            continue
        shown_expected, shown_got = format_pair(expected, got, formatter)
        details = [describe_case(case), f"Ожидалось: {shown_expected}", f"Получено: {shown_got}"]
        hint = find_mistake(got, case, expected, mistakes, rel_tol) or generic_hint
        if hint:
            details.append(f"Подсказка: {hint}")
        return failed(title, "ответ неверный.", *details)
    checked = plural(len(cases), "случай", "случая", "случаев")
    return passed(title, f"верно во всех проверенных случаях ({checked}).")

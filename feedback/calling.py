"""Безопасный вызов функции учащегося и разбор того, что она вернула.

Проверка не должна оставлять учащегося с трассировкой из глубин пакета: всё, что
может пойти не так у функции (не реализована, упала, вернула не число), здесь
превращается в :class:`LearnerProblem` с коротким русским объяснением. Сама
обёртка :func:`guarded_check` ловит и ошибки внутри наших проверок.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable
from typing import Any

from feedback.result import CheckResult, failed, settle


class LearnerProblem(Exception):
    """Ответ учащегося нельзя проверить по существу; текст — русский вердикт."""

    def __init__(self, headline: str, *details: str) -> None:
        super().__init__(headline)
        self.headline = headline
        self.details = details


def describe_case(case: dict[str, Any]) -> str:
    """Строка «Случай: a = 1, b = 2» для сообщений."""
    from feedback.formatting import format_number

    parts = [f"{name} = {format_number(value)}" for name, value in case.items()]
    return "Случай: " + ", ".join(parts)


def call_learner(fn: Any, case: dict[str, Any]) -> Any:
    """Вызывает ``fn`` с аргументами случая по позиции и возвращает её ответ.

    Любое исключение функции превращается в :class:`LearnerProblem`.
    """
    if fn is Ellipsis or fn is None:
        raise LearnerProblem("функция ещё не реализована: вместо неё передано «…» или None.")
    if not callable(fn):
        raise LearnerProblem(
            f"проверке нужно передать саму функцию, а передан объект типа {type(fn).__name__}.",
            "Передавайте функцию без скобок: check_…(my_function), а не check_…(my_function()).",
        )
    try:
        return fn(*case.values())
    except NotImplementedError:
        raise LearnerProblem(
            "функция ещё не реализована.",
            "Замените строку raise NotImplementedError(...) своим кодом и выполните ячейку.",
        ) from None
    except TypeError as error:
        text = str(error)
        if "argument" in text:
            raise LearnerProblem(
                "функцию не удалось вызвать с нужными аргументами.",
                describe_case(case),
                f"Python ответил: {text}",
                "Проверьте, что функция принимает аргументы в том порядке, что указан в задании.",
            ) from None
        raise _crashed(error, case) from None
    except Exception as error:
        raise _crashed(error, case) from None


def _crashed(error: BaseException, case: dict[str, Any]) -> LearnerProblem:
    return LearnerProblem(
        f"функция завершилась с ошибкой {type(error).__name__}.",
        describe_case(case),
        f"Сообщение ошибки: {error}" if str(error) else "Сообщение ошибки пустое.",
        "Вызовите функцию в отдельной ячейке с этими аргументами, чтобы увидеть, где она падает.",
    )


def as_number(value: Any, case: dict[str, Any] | None = None) -> float:
    """Приводит ответ к float или объясняет, почему это не число.

    Подходят int, float, числа numpy и массив numpy из одного элемента.
    """
    where = (describe_case(case),) if case else ()
    if value is Ellipsis:
        raise LearnerProblem("функция ещё не реализована: она вернула «…».", *where)
    if value is None:
        raise LearnerProblem(
            "функция вернула None — похоже, в ней нет return или она ещё не дописана.", *where
        )
    if isinstance(value, bool):
        raise LearnerProblem(
            "функция вернула логическое значение (True/False), а нужно число.", *where
        )
    if isinstance(value, str):
        raise LearnerProblem(
            f"функция вернула строку {value[:40]!r}, а нужно число.",
            *where,
            "Верните само число, без форматирования: форматировать будем при выводе.",
        )
    size = getattr(value, "size", None)
    if size == 1 and hasattr(value, "item") and not isinstance(value, numbers.Number):
        value = value.item()
    if isinstance(value, list | tuple | dict | set) or (size is not None and size != 1):
        raise LearnerProblem(
            f"функция вернула {_kind(value)}, а нужно одно число.",
            *where,
        )
    if not isinstance(value, numbers.Real):
        raise LearnerProblem(
            f"функция вернула объект типа {type(value).__name__}, а нужно число.", *where
        )
    number = float(value)
    if math.isnan(number):
        raise LearnerProblem(
            "функция вернула NaN («не число»).",
            *where,
            "Так бывает, если в вычислении встретилось 0/0 или inf − inf.",
        )
    if math.isinf(number):
        raise LearnerProblem(
            "функция вернула бесконечность.",
            *where,
            "Проверьте, нет ли деления на ноль или слишком большой степени.",
        )
    return number


def _kind(value: Any) -> str:
    kinds = {list: "список", tuple: "кортеж", dict: "словарь", set: "множество"}
    for kind, name in kinds.items():
        if isinstance(value, kind):
            return name
    return f"массив из {getattr(value, 'size', '?')} элементов"


def guarded_check(title: str) -> Callable[[Callable[..., CheckResult]], Callable[..., CheckResult]]:
    """Декоратор проверки: что бы ни случилось внутри, учащийся видит вердикт.

    :class:`LearnerProblem` становится непройденной проверкой с её текстом; любая
    другая ошибка — вердиктом «проверка не смогла завершиться» без трассировки.
    В строгом режиме непройденная проверка роняет ячейку (см. ``settle``).
    """

    def decorate(body: Callable[..., CheckResult]) -> Callable[..., CheckResult]:
        @functools.wraps(body)
        def check(*args: Any, **kwargs: Any) -> CheckResult:
            try:
                result = body(*args, **kwargs)
            except LearnerProblem as problem:
                result = failed(title, problem.headline, *problem.details)
            except Exception as error:  # наша собственная ошибка или что-то неожиданное
                result = failed(
                    title,
                    "проверка не смогла завершиться.",
                    f"Причина: {type(error).__name__}: {error}",
                    "Проверьте, что передали в проверку то, что просит задание; "
                    "если всё верно — сообщите преподавателю.",
                )
            return settle(result)

        return check

    return decorate

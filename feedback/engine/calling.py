"""Вызов функции учащегося и разбор того, что она вернула.

Проверка не должна оставлять учащегося с трассировкой из глубин пакета: всё, что
может пойти не так у функции (не реализована, упала, зависла, вернула не число),
здесь превращается в :class:`LearnerProblem` с коротким русским объяснением.

Вызов (:func:`observe_call`) и разбор исхода (:func:`learner_value`) разделены: при
оценивании первый выполняется в песочнице с кодом учащегося, а второй — вне её.
"""

from __future__ import annotations

import contextlib
import io
import math
import numbers
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from feedback.engine.values import describe, describe_error, revive, revive_error
from feedback.formatting import format_plain
from feedback.settings import CALL_TIMEOUT


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


def require_function(fn: Any) -> None:
    """Бросает :class:`LearnerProblem`, если вместо функции передано не то."""
    if fn is Ellipsis or fn is None:
        raise LearnerProblem("функция ещё не реализована: вместо неё передано «…» или None.")
    if not callable(fn):
        raise LearnerProblem(
            f"проверке нужно передать саму функцию, а передан объект типа {type(fn).__name__}.",
            "Передавайте функцию без скобок: check_…(my_function), а не check_…(my_function()).",
        )


#: Сколько секунд ждать один вызов функции учащегося. При оценивании бюджет задаёт
#: преподаватель переменной ``COURSE7_CALL_TIMEOUT`` (:data:`feedback.settings.CALL_TIMEOUT`),
#: а программа оценивания передаёт её ядру под тем же именем.
CALL_TIME_LIMIT = float(CALL_TIMEOUT.default)


def call_time_limit() -> float:
    """Предел одного вызова: из ``COURSE7_CALL_TIMEOUT``, иначе :data:`CALL_TIME_LIMIT`."""
    value = CALL_TIMEOUT.raw()
    if value is None:
        return CALL_TIME_LIMIT
    return CALL_TIMEOUT.read_or(CALL_TIME_LIMIT)


class _CallTimeLimit(BaseException):
    """Вызов функции учащегося длится дольше :data:`CALL_TIME_LIMIT` секунд.

    Наследует ``BaseException``, чтобы ``except Exception`` в коде учащегося его не
    проглотил.
    """


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Прерывает долгий вызов сигналом SIGALRM (если это возможно в этом потоке)."""
    usable = (
        seconds > 0
        and hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
    )
    if not usable:
        yield
        return

    def alarm(signum: int, frame: Any) -> None:
        raise _CallTimeLimit

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def observe_call(
    fn: Callable[..., Any], case: dict[str, Any], time_limit: float | None = None
) -> dict[str, Any]:
    """Вызывает ``fn`` с аргументами случая по позиции и описывает исход (JSON).

    Исход — описание возвращённого значения (:func:`feedback.engine.values.describe`),
    ``{"t": "raised", …}`` для исключения или ``{"t": "timeout"}`` для вызова дольше
    ``time_limit`` секунд (по умолчанию :func:`call_time_limit`).
    """
    time_limit = call_time_limit() if time_limit is None else time_limit
    printed = _Tee(sys.stdout)
    try:
        with _time_limit(time_limit), contextlib.redirect_stdout(printed):
            value = fn(*case.values())
    except _CallTimeLimit:
        return {"t": "timeout", "seconds": time_limit}
    except Exception as error:
        return describe_error(error)
    outcome = describe(value)
    if value is None and printed.text.strip():
        # print вместо return: вердикт назовёт напечатанное (issue 42, п. 7).
        outcome["printed"] = printed.text.strip()[:PRINTED_LIMIT]
    return outcome


#: Сколько напечатанных функцией символов запоминает исход вызова.
PRINTED_LIMIT = 200


class _Tee(io.TextIOBase):
    """Поток, который пишет в исходный ``stdout`` и запоминает начало напечатанного.

    Функция учащегося печатает как обычно (отладочный print виден), а проверка узнаёт, что
    функция напечатала, — чтобы подсказать «замените print на return».
    """

    def __init__(self, target: Any) -> None:
        super().__init__()
        self._target = target
        self._parts: list[str] = []
        self._size = 0

    def write(self, text: str) -> int:
        text = str(text)
        if self._size < PRINTED_LIMIT:
            self._parts.append(text[: PRINTED_LIMIT - self._size])
            self._size += len(self._parts[-1])
        try:
            self._target.write(text)
        except Exception:
            pass
        return len(text)

    def flush(self) -> None:
        try:
            self._target.flush()
        except Exception:
            pass

    @property
    def text(self) -> str:
        return "".join(self._parts)


def learner_value(outcome: Any, case: dict[str, Any]) -> Any:
    """Значение из исхода :func:`observe_call`; ошибка или зависание — :class:`LearnerProblem`."""
    kind = outcome.get("t") if isinstance(outcome, dict) else None
    if kind == "timeout":
        raise LearnerProblem(
            f"функция не вернула ответ за {format_plain(float(outcome.get('seconds', 0)), 1)} с.",
            describe_case(case),
            "Проверьте, нет ли в ней бесконечного цикла.",
        )
    if kind == "raised":
        raise _problem_from_error(revive_error(outcome), case)
    if kind == "skipped":
        raise LearnerProblem("функция не вызывалась: предыдущий вызов не завершился.")
    if kind == "none" and isinstance(outcome.get("printed"), str) and outcome["printed"].strip():
        raise _printed_not_returned(outcome["printed"], case)
    return revive(outcome)


def _printed_not_returned(printed: str, case: dict[str, Any]) -> LearnerProblem:
    """Функция напечатала ответ, а вернула None: подсказка «замените print на return»."""
    shown = " ".join(printed.split())
    shown = "".join(ch if ch.isprintable() else "·" for ch in shown)
    if len(shown) > 60:
        shown = shown[:59] + "…"
    found = LearnerProblem(
        f"функция напечатала «{shown}», но вернула None: замените print на return.",
        describe_case(case),
        "print только показывает число на экране, а проверка и остальной код получают то, "
        "что функция возвращает: return <выражение>.",
    )
    found.mistake = PRINTED_NOT_RETURNED  # type: ignore[attr-defined]
    return found


#: Код ошибки «напечатала вместо того, чтобы вернуть» (:mod:`feedback.answers.mistakes`).
PRINTED_NOT_RETURNED = "calling.printed_not_returned"


def _problem_from_error(error: BaseException, case: dict[str, Any]) -> LearnerProblem:
    if isinstance(error, NotImplementedError):
        return LearnerProblem(
            "функция ещё не реализована.",
            "Замените строку raise NotImplementedError(...) своим кодом и выполните ячейку.",
        )
    text = str(error)
    if isinstance(error, TypeError) and "argument" in text:
        return LearnerProblem(
            "функцию не удалось вызвать с нужными аргументами.",
            describe_case(case),
            f"Python ответил: {text}",
            "Проверьте, что функция принимает аргументы в том порядке, что указан в задании.",
        )
    return LearnerProblem(
        f"функция завершилась с ошибкой {type(error).__name__}.",
        describe_case(case),
        f"Сообщение ошибки: {text}" if text else "Сообщение ошибки пустое.",
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

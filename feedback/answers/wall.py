"""Эталон лабораторной 7.3: вердикт задания «память под веса Gemma-4B во float32».

Здесь то, что нужно только вердикту: верный ответ (P · b / 1024³), допуск для округлённого
ответа и типичные ошибки с подсказками (байты, ГБ вместо ГиБ, bfloat16 вместо float32,
биты, круглые 4 млрд параметров, 15 ГиБ памяти T4 вместо весов). Наблюдение — само число
учащегося — снимает :mod:`feedback.wall`; в песочнице оценивания этой папки нет.

Формулу :func:`feedback.wall.weights_gib` вердикт берёт из :mod:`feedback.wall`: по ней
же строятся сводка и диаграмма лабораторной, и поэтому она остаётся в модуле лабораторной.
"""

from __future__ import annotations

import math
from typing import Any

from feedback.answers.mistakes import problem
from feedback.engine.calling import LearnerProblem
from feedback.engine.comparing import ANSWER_REL_TOL
from feedback.engine.result import UNKNOWN, CheckResult, failed, passed
from feedback.engine.values import revive
from feedback.formatting import PARAMETERS, format_gib, plural
from feedback.wall import GEMMA_4B_PARAMS, WEIGHTS_TITLE, weights_gib

#: Допуск — правило курса (ANSWER_REL_TOL, 1 %): ответ, округлённый до 14,5 или 14,45 ГиБ,
#: принимается.
WEIGHTS_REL_TOL = ANSWER_REL_TOL
#: Память T4 в ГиБ (15 360 МиБ): её записывают вместо памяти под веса.
T4_GIB = 15


def _weights_mistakes(
    param_count: float, bytes_per_param: float
) -> tuple[tuple[float, str, str], ...]:
    """Что получилось бы при типичной ошибке, подсказка к ней и код ошибки."""
    in_bytes = param_count * bytes_per_param
    return (
        (in_bytes, "это байты, а нужны ГиБ: разделите на 1024³.", "wall.bytes_not_gib"),
        (
            in_bytes / 1e9,
            "вы разделили на 10⁹ — это ГБ. Нужны ГиБ: делите на 1024³ = 1 073 741 824 "
            "(разница около 7 %).",
            "wall.gb_not_gib",
        ),
        (
            in_bytes / 1024**2,
            "получились МиБ: делите на 1024³, а не на 1024².",
            "wall.mib_not_gib",
        ),
        (
            weights_gib(param_count, 2),
            "это веса в bfloat16 (2 байта на параметр). Во float32 каждый параметр "
            "занимает 4 байта.",
            "wall.bfloat16_not_float32",
        ),
        (
            weights_gib(param_count, 8 * bytes_per_param),
            "вы умножили на 32 — это биты. В байте 8 бит, поэтому float32 — 4 байта.",
            "wall.bits_not_bytes",
        ),
        (
            weights_gib(param_count, 1),
            "забыт множитель: каждый параметр во float32 занимает 4 байта.",
            "wall.forgot_bytes_per_param",
        ),
        (
            weights_gib(4e9, bytes_per_param),
            "это для круглых 4 млрд параметров. Возьмите точное число параметров "
            "пресета — GEMMA_4B_PARAMS.",
            "wall.rounded_param_count",
        ),
        (
            T4_GIB,
            "15 ГиБ — это вся память T4 (15 360 МиБ), а нужна память под веса Gemma-4B: число "
            "параметров × 4 байта / 1024³. С памятью видеокарты сравним сразу после проверки.",
            "wall.t4_memory",
        ),
    )


def _as_gib(value: Any) -> float:
    """Ответ учащегося как число или русский вердикт о том, почему это не число."""
    if value is Ellipsis:
        raise LearnerProblem(
            "значение ещё не заполнено: в weights_gib_float32 осталось «…».",
            "Замените «…» выражением, которое считает память под веса в ГиБ.",
        )
    if value is None:
        raise LearnerProblem("в weights_gib_float32 записано None, а нужно число ГиБ.")
    if isinstance(value, bool) or not isinstance(value, int | float):
        kind = f"строка {value[:40]!r}" if isinstance(value, str) else type(value).__name__
        raise problem(
            "wall.number_as_string" if isinstance(value, str) else UNKNOWN,
            f"в weights_gib_float32 записано не число ({kind}).",
            "Запишите само число ГиБ, без кавычек и единиц: форматировать будем при выводе.",
        )
    if not math.isfinite(value):
        raise LearnerProblem("в weights_gib_float32 не конечное число (NaN или бесконечность).")
    return float(value)


def judge_weights_memory(
    observation: Any, param_count: float = GEMMA_4B_PARAMS, bytes_per_param: float = 4
) -> CheckResult:
    """Вердикт: совпадает ли число с P · b / 1024³ (с точностью до 1 %)."""
    got = _as_gib(revive(observation))
    expected = weights_gib(param_count, bytes_per_param)
    if math.isclose(got, expected, rel_tol=WEIGHTS_REL_TOL):
        return passed(
            WEIGHTS_TITLE,
            f"верно: {plural(param_count, *PARAMETERS)} × "
            f"{plural(bytes_per_param, 'байт', 'байта', 'байт')} / 1024³ ≈ {format_gib(expected)}.",
        )
    # Верный ответ не называется: его учащийся считает сам, подсказка называет ошибку.
    details = [f"Получено: {format_gib(got, 3)}"]
    mistakes = _weights_mistakes(param_count, bytes_per_param)
    # Сначала точные совпадения: ровно 15 — это память T4, хотя и 14,9 для круглых 4 млрд
    # параметров отличается от 15 меньше чем на 1 %; потом — с допуском на округление.
    for rel_tol in (1e-9, WEIGHTS_REL_TOL):
        for wrong, hint, mistake in mistakes:
            if math.isclose(got, wrong, rel_tol=rel_tol):
                details.append(f"Подсказка: {hint}")
                return failed(WEIGHTS_TITLE, "ответ неверный.", *details, mistake=mistake)
    details.append(
        "Подсказка: память под веса — число параметров × байты на параметр, делённое на 1024³."
    )
    return failed(WEIGHTS_TITLE, "ответ неверный.", *details, mistake=UNKNOWN)

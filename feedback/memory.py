"""Проверки лабораторной 7.4 «Оцените память GPU».

Каждая функция учащегося возвращает объём в ГиБ (байты / 1024³). Проверки вызывают
её не только с константами лабораторной, но и с другими числами. Верные формулы и
типичные ошибки — в :mod:`feedback.answers.memory` (в песочнице оценивания их нет).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from feedback.engine.comparing import ANSWER_REL_TOL, FunctionTask, choice, integers, log_uniform
from feedback.engine.graded import graded_check
from feedback.engine.result import CheckResult
from feedback.formatting import format_gib

Cases = Sequence[Sequence[float]] | None

#: Как тянуть аргументы для случаев оценивания.
SAMPLERS = {
    "param_count": log_uniform(1e6, 1e12),
    "bytes_per_param": choice(1, 2, 4, 8),
    "bytes_per_token_id": choice(2, 4, 8),
    "batch_size": integers(1, 64),
    "max_length": choice(128, 256, 400, 512, 1024, 2048, 4096, 8192),
    "num_layers": integers(2, 96),
    "embedding_dim": choice(512, 768, 1024, 1152, 2048, 2560, 3072, 4096, 5120),
}
#: Глобальные переменные тетрадки, которые по ошибке берут вместо аргументов.
GLOBALS = {
    "param_count": "PARAM_COUNT",
    "bytes_per_param": "BYTES_PER_PARAMETER",
    "bytes_per_token_id": "BYTES_PER_TOKEN_ID",
    "batch_size": "BATCH_SIZE",
    "max_length": "MAX_LENGTH",
    "num_layers": "NUM_LAYERS",
    "embedding_dim": "EMBEDDING_DIM",
}


def _task(title: str, cases: tuple, answer: str) -> FunctionTask:
    """Задание на функцию в ГиБ; эталон и ошибки — ``feedback.answers.memory.<answer>``.

    Допуск — правило курса (:data:`~feedback.engine.comparing.ANSWER_REL_TOL`, 1 %), как у
    лабораторных 7.3 и 7.5: ответ, округлённый до сотых ГиБ, принимается, если округление
    не увело его дальше 1 % от верного.
    """
    return FunctionTask(
        title,
        cases,
        f"memory.{answer}",
        formatter=format_gib,
        rel_tol=ANSWER_REL_TOL,
        samplers={name: SAMPLERS[name] for name in cases[0]},
        globals_hint={name: GLOBALS[name] for name in cases[0]},
    )


PARAM_CASES = (
    {"param_count": 4e9, "bytes_per_param": 4},
    {"param_count": 4e9, "bytes_per_param": 2},
    {"param_count": 1e9, "bytes_per_param": 2},
    {"param_count": 123_456_789, "bytes_per_param": 4},
)
PARAM_MEMORY = _task("calculate_param_memory", PARAM_CASES, "PARAM_MEMORY")


@graded_check(PARAM_MEMORY.graded("memory.check_calculate_param_memory"))
def check_calculate_param_memory(fn: Any, cases: Cases = None) -> CheckResult:
    """Проверяет ``calculate_param_memory(param_count, bytes_per_param)`` = P·b в ГиБ."""


#: Открытые случаи идут цепочкой: каждый следующий меняет у предыдущего (или у первого) один
#: аргумент. Функция, которая вместо аргумента берёт глобальную переменную тетрадки, впервые
#: ошибается как раз на таком соседе — и подсказка называет эту переменную.
INPUT_CASES = (
    {"batch_size": 8, "max_length": 1024, "bytes_per_token_id": 4},
    {"batch_size": 8, "max_length": 1024, "bytes_per_token_id": 2},
    {"batch_size": 32, "max_length": 1024, "bytes_per_token_id": 4},
    {"batch_size": 32, "max_length": 2048, "bytes_per_token_id": 4},
    {"batch_size": 3, "max_length": 400, "bytes_per_token_id": 2},
)
INPUT_MEMORY = _task("calculate_input_data_memory", INPUT_CASES, "INPUT_MEMORY")


@graded_check(INPUT_MEMORY.graded("memory.check_calculate_input_data_memory"))
def check_calculate_input_data_memory(fn: Any, cases: Cases = None) -> CheckResult:
    """Проверяет ``calculate_input_data_memory(batch, length, bytes_per_id)`` = B·L·t в ГиБ."""


GRADIENT_MEMORY = _task("calculate_gradient_memory", PARAM_CASES, "GRADIENT_MEMORY")


@graded_check(GRADIENT_MEMORY.graded("memory.check_calculate_gradient_memory"))
def check_calculate_gradient_memory(fn: Any, cases: Cases = None) -> CheckResult:
    """Проверяет ``calculate_gradient_memory(param_count, bytes_per_param)`` = P·b в ГиБ."""


OPTIMIZER_MEMORY = _task("calculate_optimizer_memory", PARAM_CASES, "OPTIMIZER_MEMORY")


@graded_check(OPTIMIZER_MEMORY.graded("memory.check_calculate_optimizer_memory"))
def check_calculate_optimizer_memory(fn: Any, cases: Cases = None) -> CheckResult:
    """Проверяет ``calculate_optimizer_memory(param_count, bytes_per_param)`` = 2·P·b в ГиБ."""


ACTIVATION_ARGS = ("batch_size", "max_length", "num_layers", "embedding_dim", "bytes_per_param")
#: Цепочка, как у INPUT_CASES: от констант лабораторной по одному аргументу за шаг.
ACTIVATION_CASES = tuple(
    dict(zip(ACTIVATION_ARGS, values, strict=True))
    for values in (
        (8, 1024, 32, 2560, 4),
        (8, 1024, 32, 2560, 2),  # bytes_per_param
        (3, 1024, 32, 2560, 2),  # batch_size
        (3, 400, 32, 2560, 2),  # max_length
        (3, 400, 26, 2560, 2),  # num_layers
        (3, 400, 26, 1152, 2),  # embedding_dim
        (16, 2048, 48, 3840, 4),
    )
)
ACTIVATION_MEMORY = _task("calculate_activation_memory", ACTIVATION_CASES, "ACTIVATION_MEMORY")


@graded_check(ACTIVATION_MEMORY.graded("memory.check_calculate_activation_memory"))
def check_calculate_activation_memory(fn: Any, cases: Cases = None) -> CheckResult:
    """Проверяет ``calculate_activation_memory(B, L, layers, d, b)`` = B·L·layers·d·b в ГиБ."""

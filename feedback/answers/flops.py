"""Эталон лабораторной 7.2: 6·P·N и типичные ошибки счёта FLOPs."""

from __future__ import annotations

from feedback.engine.comparing import Answer, Mistake


def training_flops(param_count: float, num_tokens: float) -> float:
    """Число операций одной эпохи обучения, 6·P·N."""
    return 6 * param_count * num_tokens


FLOPS_MISTAKES = (
    Mistake(
        lambda p, n: 2 * p * n,
        "похоже, учтён только прямой проход (2·P·N). При обучении есть ещё обратный проход, "
        "он примерно вдвое дороже прямого (4·P·N): всего 6·P·N.",
        "flops.forward_only",
    ),
    Mistake(
        lambda p, n: 4 * p * n,
        "похоже, учтён только обратный проход (4·P·N). Добавьте прямой проход (2·P·N): "
        "всего 6·P·N.",
        "flops.backward_only",
    ),
    Mistake(
        lambda p, n: p * n,
        "не хватает множителя 6: на каждый параметр и каждый токен приходится около "
        "2 операций в прямом проходе и 4 в обратном.",
        "flops.missing_factor_6",
    ),
    Mistake(
        lambda p, n: 6 * (p + n),
        "параметры и токены нужно перемножить, а не сложить: каждый токен проходит "
        "через все параметры.",
        "flops.sum_not_product",
    ),
)

COMPUTE_NUM_FLOPS = Answer(training_flops, FLOPS_MISTAKES)

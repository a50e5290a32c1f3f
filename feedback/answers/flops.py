"""Эталон лабораторной 7.2: 6·P·N, время обучения и типичные ошибки счёта."""

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
        "получилось 4·P·N: так выходит, если учесть только обратный проход или взять оценку "
        "для LoRA из врезки «А если обучать не все веса?». Но здесь обучение полное: прямой "
        "проход (2·P·N) и обратный с градиентами и по входам, и по весам (4·P·N) — всего 6·P·N.",
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

#: Во сколько раз всё обучение BERT дороже одной эпохи из таблицы (сноска задания 2).
BERT_PASSES = 40


def _exponent_slips() -> tuple[Mistake, ...]:
    """Ответ в 10 раз больше или меньше верного: ошибка на единицу в показателе степени."""
    hint = (
        "ответ отличается от верного ровно в 10 раз: похоже, ошибка на единицу в показателе "
        "степени (например, 3.3e8 вместо 3.3e9). Проверьте, как записаны P и N."
    )
    return tuple(
        Mistake(lambda p, n, k=factor: k * 6 * p * n, hint, "flops.table_exponent_slip")
        for factor in (10, 0.1)
    )


#: Ошибки таблицы задания 2: те же, что у функции, и ещё две, которые бывают только в таблице.
TABLE_MISTAKES = (
    *FLOPS_MISTAKES,
    Mistake(
        lambda p, n: BERT_PASSES * 6 * p * n,
        f"похоже, FLOPs умножены на {BERT_PASSES} — число проходов BERT по корпусу из сноски. "
        "Сноска объясняет, чем эпоха из таблицы отличается от всего обучения BERT, а в столбец "
        "FLOPs нужна одна эпоха: 6·P·N для данных P и N.",
        "flops.table_all_bert_passes",
    ),
    *_exponent_slips(),
)

FINAL_RESULTS = Answer(training_flops, TABLE_MISTAKES)


# --------------------------------------------------------------------------- время обучения


def training_seconds(num_flops: float, peak_flops_per_second: float, utilization: float) -> float:
    """Секунды обучения: FLOPs, делённые на полезную скорость (пик × доля пика, MFU)."""
    return num_flops / (peak_flops_per_second * utilization)


TRAINING_SECONDS = Answer(
    training_seconds,
    (
        Mistake(
            lambda f, peak, u: f / peak,
            "похоже, FLOPs поделены на паспортный пик. При обучении видеокарта выдаёт лишь "
            "долю пика — utilization (MFU): полезная скорость — peak_flops_per_second × "
            "utilization.",
            "flops.time_at_peak",
        ),
        Mistake(
            lambda f, peak, u: f * u / peak,
            "доля пика utilization оказалась в числителе: с ней время стало меньше, чем на пике, "
            "а должно стать больше. Делите на полезную скорость: "
            "num_flops / (peak_flops_per_second × utilization).",
            "flops.time_utilization_inverted",
        ),
        Mistake(
            lambda f, peak, u: f / (peak * u) / 3600,
            "получились часы, а нужны секунды: FLOPs, делённые на FLOPS (операций в секунду), — "
            "это уже секунды, переводить не нужно.",
            "flops.time_in_hours",
        ),
    ),
)

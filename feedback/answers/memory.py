"""Эталоны лабораторной 7.4: память весов, входа, градиентов, Adam и активаций в ГиБ."""

from __future__ import annotations

from collections.abc import Callable

from feedback.engine.comparing import Answer, Mistake
from feedback.formatting import BYTES_PER_GIB

Bytes = Callable[..., float]
#: Аргументы функции активаций по порядку (как в задании).
ACTIVATION_ARGS = ("batch_size", "max_length", "num_layers", "embedding_dim", "bytes_per_param")


def _unit_mistakes(in_bytes: Bytes, rounding: tuple[int, ...]) -> tuple[Mistake, ...]:
    """Ошибки единиц и округления (до ``rounding`` знаков), общие для всех пяти функций."""
    return (
        Mistake(
            in_bytes,
            "функция вернула байты, а нужны ГиБ: разделите результат на 1024³ "
            "(для этого есть bytes_to_gb).",
            "memory.bytes_not_gib",
        ),
        Mistake(
            lambda *args: in_bytes(*args) / 1e9,
            "вы разделили на 10⁹ (это ГБ), а нужны ГиБ: делите на 1024³ = 1 073 741 824. "
            "Разница около 7 %.",
            "memory.gb_not_gib",
        ),
        Mistake(
            lambda *args: in_bytes(*args) / 1024**2,
            "получились МиБ: делите на 1024³, а не на 1024².",
            "memory.mib_not_gib",
        ),
        *_rounded_results(in_bytes, rounding),
    )


def _rounded_results(in_bytes: Bytes, rounding: tuple[int, ...]) -> tuple[Mistake, ...]:
    """Ответ, округлённый до ``rounding`` знаков после запятой в ГиБ.

    Проверка принимает отклонение до 1 % (правило курса), поэтому округлённый ответ проходит,
    пока объём большой; маленький объём округление уводит дальше 1 % или обнуляет. У весов,
    градиентов и Adam на случаях проверки округление до сотых остаётся в допуске — там ошибкой
    считается только округление до целых и десятых.
    """
    hint = (
        "похоже, результат округлён (round). Проверка принимает ответ с точностью до 1 %, "
        "но маленький объём округление до сотых ГиБ искажает сильнее или превращает в 0. "
        "Верните само число, без округления: округлять будем при выводе."
    )
    return tuple(
        Mistake(
            lambda *args, d=digits: round(in_bytes(*args) / BYTES_PER_GIB, d),
            hint,
            "memory.rounded_result",
        )
        for digits in rounding
    )


#: До скольких знаков округление — ошибка: у больших объёмов (веса, градиенты, Adam)
#: сотые ГиБ укладываются в допуск 1 %, у маленьких (вход, активации) — нет.
LARGE_VOLUME_ROUNDING = (0, 1)
SMALL_VOLUME_ROUNDING = (0, 1, 2)


def in_gib(
    in_bytes: Bytes, *mistakes: Mistake, rounding: tuple[int, ...] = LARGE_VOLUME_ROUNDING
) -> Answer:
    """Эталон в ГиБ (байты / 1024³); ошибки единиц и округления добавляются сами."""
    return Answer(
        lambda *args: in_bytes(*args) / BYTES_PER_GIB,
        (*mistakes, *_unit_mistakes(in_bytes, rounding)),
    )


def _weights_bytes(param_count: float, bytes_per_param: float) -> float:
    return param_count * bytes_per_param


_FORGOT_BYTES = Mistake(
    lambda p, b: p / BYTES_PER_GIB,
    "забыт множитель bytes_per_param: каждый параметр занимает столько байт.",
    "memory.forgot_bytes_per_param",
)


PARAM_MEMORY = in_gib(
    _weights_bytes,
    _FORGOT_BYTES,
    Mistake(
        lambda p, b: 8 * p * b / BYTES_PER_GIB,
        "получились биты, а не байты: bytes_per_param — уже байты на параметр, умножать на 8 "
        "не нужно.",
        "memory.bits_not_bytes",
    ),
)

INPUT_MEMORY = in_gib(
    lambda b, n, t: b * n * t,
    Mistake(
        lambda b, n, t: b * n / BYTES_PER_GIB,
        "забыт множитель bytes_per_token_id: каждый номер токена занимает "
        "несколько байт (int32 — 4 байта).",
        "memory.forgot_bytes_per_token_id",
    ),
    Mistake(
        lambda b, n, t: 2 * b * n / BYTES_PER_GIB,
        "вместо аргумента bytes_per_token_id в формуле стоит постоянное число 2. Сколько байт "
        "занимает номер токена, функция узнаёт из аргумента bytes_per_token_id: умножайте на "
        "него.",
        "memory.constant_bytes_per_token_id",
    ),
    rounding=SMALL_VOLUME_ROUNDING,
)

GRADIENT_MEMORY = in_gib(
    _weights_bytes,
    _FORGOT_BYTES,
    Mistake(
        lambda p, b: 2 * p * b / BYTES_PER_GIB,
        "градиент — одно число на каждый параметр, поэтому P·b. Два числа на параметр "
        "хранит оптимизатор Adam — это следующая функция.",
        "memory.gradient_doubled",
    ),
)

OPTIMIZER_MEMORY = in_gib(
    lambda p, b: 2 * p * b,
    Mistake(
        lambda p, b: p * b / BYTES_PER_GIB,
        "Adam хранит для каждого параметра два числа — первый момент (скользящее среднее "
        "градиента) и второй (скользящее среднее его квадрата), поэтому 2·P·b.",
        "memory.adam_one_moment",
    ),
    Mistake(
        lambda p, b: 3 * p * b / BYTES_PER_GIB,
        "похоже, сюда добавлены сами веса. Их считает calculate_param_memory; здесь — "
        "только состояние оптимизатора: два момента Adam, 2·P·b.",
        "memory.adam_with_weights",
    ),
    Mistake(
        lambda p, b: 2 * p / BYTES_PER_GIB,
        "забыт множитель bytes_per_param: 2 момента × P параметров × b байт.",
        "memory.adam_forgot_bytes_per_param",
    ),
)


def _activation_bytes(*args: float) -> float:
    product = 1.0
    for value in args:
        product *= value
    return product


def _missing_factor(position: int) -> Mistake:
    name = ACTIVATION_ARGS[position]
    return Mistake(
        lambda *args: _activation_bytes(*args) / args[position] / BYTES_PER_GIB,
        f"в произведении не хватает множителя {name}: в упрощённой модели курса "
        "активации — это batch_size × max_length × num_layers × embedding_dim × "
        "bytes_per_param.",
        f"memory.activation_missing_{name}",
    )


ACTIVATION_MEMORY = in_gib(
    _activation_bytes,
    *(_missing_factor(position) for position in range(len(ACTIVATION_ARGS))),
    rounding=SMALL_VOLUME_ROUNDING,
)

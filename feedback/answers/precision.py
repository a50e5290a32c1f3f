"""Эталон лабораторной 7.5: вердикты проверок bfloat16, LoRA и типа весов для загрузки.

Здесь то, что нужно только вердикту: какой тип весов верный (bfloat16), какой ранг и
какие обучаемые веса ожидаются у LoRA, подсказки к типичным ошибкам (смешанная точность,
float16, float32 по умолчанию, повторно размороженные слои). Наблюдение снимает
:mod:`feedback.precision` — в песочнице оценивания этой папки нет, и код учащегося не
может ни спросить вердикт, ни прочитать, что в нём считается верным.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from feedback.formatting import (
    PARAMETERS,
    format_gib,
    format_number,
    format_significant,
    plural,
)
from feedback.precision import (
    BFLOAT16_TITLE,
    BYTES_PER_DTYPE,
    LOADABLE_DTYPES,
    LORA_TITLE,
    MIXED_POLICIES,
    WEIGHTS_DTYPE_TITLE,
    VariableFacts,
    dtype_choice,
)
from feedback.result import UNKNOWN, CheckResult, failed, passed
from feedback.values import revive
from feedback.wall import GEMMA_4B_PARAMS

#: Что печатает задание 1 лабораторной 7.5 (показывается в вердикте рядом с типом).
LAB_PATH = 'model.backbone.get_layer("decoder_block_0").attention.query_dense.kernel.dtype'

#: Сколько имён переменных показывать в сообщении.
SHOWN_PATHS = 3


def _share(part: int, whole: int) -> str:
    if not whole:
        return "0 %"
    percent = 100 * part / whole
    return f"{format_significant(percent, 2)} %"


def _list_paths(paths: Sequence[str]) -> str:
    names = list(paths[:SHOWN_PATHS])
    more = len(paths) - len(names)
    text = ", ".join(names)
    return f"{text} и ещё {format_number(more)}" if more > 0 else text


def _variables(raw: Any) -> list[VariableFacts]:
    return [VariableFacts.parse(item) for item in raw]


def _memory(variables: Sequence[VariableFacts]) -> float:
    return sum(v.size * BYTES_PER_DTYPE.get(v.dtype, 4) for v in variables)


# --------------------------------------------------------------------------- bfloat16


def judge_bfloat16(facts: dict[str, Any]) -> CheckResult:
    """Вердикт по :func:`feedback.precision.bfloat16_facts`."""
    title = BFLOAT16_TITLE
    variables = _variables(facts["variables"])
    lora = [v for v in variables if v.lora]
    main = [v for v in variables if not v.lora]
    wrong = [v for v in main if v.dtype != "bfloat16"]
    found = Counter(v.dtype for v in wrong)
    policy = facts.get("policy")
    lab_dtype = facts.get("lab_dtype")

    details = []
    if lab_dtype is not None:
        details.append(f"{LAB_PATH} → {lab_dtype}")

    if wrong:
        found_text = ", ".join(name for name, _ in found.most_common())
        details += [
            f"Не в bfloat16: {format_number(len(wrong))} из {format_number(len(main))} "
            f"переменных ({found_text}), например: {_list_paths([v.path for v in wrong])}.",
        ]
        if policy:
            details.append(f"Политика точности модели: {policy}.")
        if policy and str(policy).startswith("mixed_"):
            mistake = "precision.mixed_policy"
            details.append(
                f"Подсказка: политика {policy} — это смешанная точность: вычисления идут "
                "в 16 битах, а веса хранятся во float32 (4 байта на параметр), так что "
                'памяти под веса она не экономит. Загрузите модель с dtype="bfloat16".'
            )
        elif "float32" in found:
            mistake = "precision.float32_left"
            details.append(
                "Подсказка: по умолчанию from_preset загружает веса во float32 — 4 байта на "
                'параметр вместо 2. Загрузите модель заново с dtype="bfloat16": '
                'Gemma3CausalLM.from_preset(..., dtype="bfloat16").'
            )
        elif "float16" in found:
            mistake = "precision.float16"
            details.append(
                "Подсказка: float16 тоже занимает 2 байта, но у него узкий диапазон "
                "(максимум около 65 504), и при обучении легко получить inf. В лабораторной "
                'нужен bfloat16: dtype="bfloat16".'
            )
        else:
            mistake = "precision.not_bfloat16"
            details.append('Подсказка: загрузите модель с dtype="bfloat16".')
        return failed(
            title, f"веса хранятся в {found_text}, а не в bfloat16.", *details, mistake=mistake
        )
    if not main:
        return failed(title, "у модели нет весов основной сети.", mistake=UNKNOWN)

    details.append(
        f"Веса основной сети: {plural(sum(v.size for v in main), *PARAMETERS)} × "
        f"2 байта ≈ {format_gib(_memory(main) / 1024**3)}."
    )
    if lora:
        lora_types = ", ".join(sorted({v.dtype for v in lora}))
        details.append(
            f"Матрицы LoRA ({format_number(len(lora))} шт., "
            f"{plural(sum(v.size for v in lora), *PARAMETERS)}) хранятся в "
            f"{lora_types} — так задумано в Keras: маленькие обучаемые матрицы держат в "
            "полной точности, чтобы небольшие обновления не терялись при округлении."
        )
    return passed(
        title,
        "все переменные основной сети "
        f"({plural(len(main), 'переменная', 'переменные', 'переменных')}) хранятся в bfloat16.",
        *details,
    )


# --------------------------------------------------------------------------- LoRA


def judge_lora(facts: dict[str, Any], rank: int = 4) -> CheckResult:
    """Вердикт по :func:`feedback.precision.lora_facts`."""
    title = LORA_TITLE
    lora_layers = [(str(path), layer_rank) for path, layer_rank in facts["lora_layers"]]
    trainable_count, total_count = (int(number) for number in facts["counts"])
    counts = (
        f"Обучаемых параметров: {format_number(trainable_count)} из "
        f"{format_number(total_count)} ({_share(trainable_count, total_count)})."
    )

    if not lora_layers:
        return failed(
            title,
            "LoRA не включена: ни в одном слое модели нет адаптеров.",
            counts,
            f"Подсказка: после загрузки вызовите model.backbone.enable_lora(rank={rank}) — "
            "до compile и fit.",
            mistake="lora.not_enabled",
        )

    ranks = Counter(layer_rank for _, layer_rank in lora_layers)
    if set(ranks) != {rank}:
        found = ", ".join(str(value) for value, _ in ranks.most_common())
        return failed(
            title,
            f"ранг LoRA — {found}, а нужен {rank}.",
            counts,
            f"Ранг — число столбцов матрицы A и строк матрицы B: чем он больше, тем больше "
            f"обучаемых параметров. Включить LoRA в том же слое второй раз нельзя, поэтому "
            f"загрузите модель заново и вызовите model.backbone.enable_lora(rank={rank}).",
            mistake="lora.wrong_rank",
        )

    missing = [str(path) for path in facts["missing"]]
    if missing:
        return failed(
            title,
            "LoRA включена не во всех слоях внимания.",
            f"Без адаптеров: {plural(len(missing), 'слой', 'слоя', 'слоёв')}, например: "
            + ", ".join(missing[:SHOWN_PATHS])
            + ".",
            f"Подсказка: вызовите model.backbone.enable_lora(rank={rank}) без "
            "target_layer_names — Keras Hub сам выберет слои query и value.",
            mistake="lora.missing_layers",
        )

    trainable = _variables(facts["trainable"])
    extra = [v for v in trainable if not v.lora]
    if extra:
        extra_params = sum(v.size for v in extra)
        return failed(
            title,
            "кроме матриц LoRA обучаются и другие веса.",
            f"Лишних обучаемых переменных: {format_number(len(extra))} "
            f"({plural(extra_params, *PARAMETERS)}), например: "
            f"{_list_paths([v.path for v in extra])}.",
            counts,
            "Подсказка: enable_lora замораживает всю модель, кроме адаптеров. Похоже, "
            "какой-то слой потом снова сделали обучаемым (layer.trainable = True или "
            "model.backbone.trainable = True). Загрузите модель заново и вызовите только "
            f"enable_lora(rank={rank}).",
            mistake="lora.extra_trainable",
        )

    if not any(v.lora for v in trainable):
        return failed(
            title,
            "матрицы LoRA заморожены: обучаемых весов нет совсем.",
            counts,
            "Подсказка: похоже, после enable_lora модель заморозили "
            "(trainable = False). Загрузите модель заново и вызовите только "
            f"enable_lora(rank={rank}).",
            mistake="lora.frozen",
        )

    return passed(
        title,
        f"LoRA ранга {rank} включена в {plural(len(lora_layers), 'слое', 'слоях', 'слоях')}; "
        "обучаются только её матрицы.",
        counts,
        "Слои с адаптерами, например: "
        + ", ".join(path for path, _ in lora_layers[:SHOWN_PATHS])
        + ".",
    )


# --------------------------------------------------------------------------- тип до загрузки


def judge_weights_dtype(observation: Any) -> CheckResult:
    """Вердикт по выбранному типу весов (наблюдение — :func:`feedback.values.describe`)."""
    choice = dtype_choice(revive(observation))
    title = WEIGHTS_DTYPE_TITLE
    if choice == "bfloat16":
        return passed(
            title,
            "bfloat16 — 2 байта на параметр.",
            f"Веса gemma3_4b_text займут ≈ {format_gib(GEMMA_4B_PARAMS * 2 / 1024**3)} "
            "вместо ≈ 14,5 ГиБ во float32 и поместятся в T4.",
        )
    if choice in ("float32", "float64"):
        return failed(
            title,
            f"{choice} — {plural(LOADABLE_DTYPES[choice], 'байт', 'байта', 'байт')} на параметр: "
            "веса Gemma-4B займут "
            f"≈ {format_gib(GEMMA_4B_PARAMS * LOADABLE_DTYPES[choice] / 1024**3)} и не "
            "поместятся в T4 (лабораторная 7.3).",
            "Подсказка: нужен 16-битный тип с тем же диапазоном, что у float32.",
            mistake="dtype.float32",
        )
    if choice == "float16":
        return failed(
            title,
            "float16 тоже занимает 2 байта, но его диапазон узок (максимум около 65 504): при "
            "обучении легко получить inf.",
            "Подсказка: нужен 16-битный тип с тем же диапазоном, что у float32, — bfloat16.",
            mistake="dtype.float16",
        )
    if choice in MIXED_POLICIES:
        return failed(
            title,
            f"{choice} — это смешанная точность: вычисления в 16 битах, а веса хранятся во "
            "float32, так что памяти под веса она не экономит.",
            'Подсказка: нужен тип самих весов, например "bfloat16".',
            mistake="dtype.mixed_policy",
        )
    return failed(
        title,
        f"Keras не знает тип весов {choice[:40]!r}.",
        "Подходят строки " + ", ".join(f'"{name}"' for name in LOADABLE_DTYPES) + ".",
        mistake="dtype.unknown_name",
    )

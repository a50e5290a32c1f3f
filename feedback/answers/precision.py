"""Эталон лабораторной 7.5: вердикты проверок бюджета памяти, bfloat16, LoRA и типа весов.

Здесь то, что нужно только вердикту: сколько памяти займут веса Gemma-4B в каждом формате
(P · b / 1024³) и типичные ошибки этого расчёта, какой тип весов верный (bfloat16), какой
ранг и какие обучаемые веса ожидаются у LoRA, подсказки к типичным ошибкам (смешанная
точность, float16, float32 по умолчанию — веса поместились бы, а обучение нет, повторно
размороженные слои), формула числа параметров LoRA и её типичные ошибки. Наблюдение снимает
:mod:`feedback.precision` — в песочнице оценивания этой папки нет, и код учащегося не может
ни спросить вердикт, ни прочитать, что в нём считается верным. Таблицы типов весов и память
обучения сверх весов берутся из :mod:`feedback.precision_loading`: по ним же ячейка загрузки
решает, загружать ли модель, и вердикт задания 1 с ней не расходится.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from feedback.engine.calling import LearnerProblem
from feedback.engine.comparing import ANSWER_REL_TOL, Answer, Mistake
from feedback.engine.result import UNKNOWN, CheckResult, failed, passed
from feedback.engine.values import revive
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
    LORA_TITLE,
    WEIGHTS_BUDGET_TITLE,
    WEIGHTS_DTYPE_TITLE,
    VariableFacts,
)
from feedback.precision_loading import (
    LOADABLE_DTYPES,
    MIXED_POLICIES,
    dtype_choice,
    measured_overhead_source,
    training_overhead_gib,
)
from feedback.settings import LAB_TRAINING_XLA
from feedback.wall import GEMMA_4B_PARAMS, t4_usable, weights_gib

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


# --------------------------------------------------------------------------- число параметров LoRA


def lora_parameters(
    hidden_dim: int, head_dim: int, q_heads: int, kv_heads: int, rank: int, blocks: int
) -> int:
    """Параметры LoRA на query и value, как их раскладывает Keras (EinsumDense по головам).

    У каждой головы своя матрица A размером hidden_dim × rank, а B размером rank × head_dim —
    одна на все головы слоя: q_heads · hidden · r + r · head_dim для запросов, то же с kv_heads
    для значений, и так в каждом из blocks блоков.
    """
    per_block = rank * hidden_dim * (q_heads + kv_heads) + 2 * rank * head_dim
    return blocks * per_block


LORA_PARAMETERS = Answer(
    lora_parameters,
    (
        Mistake(
            lambda d, h, q, kv, r, n: n * r * (2 * d + (q + kv) * h),
            "это общая формула для плоских матриц W (d × k → d·r + r·k): одна матрица A на "
            "всю W. Keras же хранит веса запросов и значений по головам, и матрица A своя у "
            "каждой головы: num_query_heads (или num_kv_heads) матриц hidden_dim × rank, а B "
            "размером rank × head_dim — одна на слой.",
            "lora.count_flat_matrices",
        ),
        Mistake(
            lambda d, h, q, kv, r, n: n * r * d * (q + kv),
            "посчитаны только матрицы A. У каждой поправки есть и матрица B размером "
            "rank × head_dim — одна на запросы и одна на значения в каждом блоке.",
            "lora.count_without_b",
        ),
        Mistake(
            lambda d, h, q, kv, r, n: r * d * (q + kv) + 2 * r * h,
            "это параметры одного блока. LoRA стоит в слое внимания каждого блока: умножьте "
            "на num_blocks.",
            "lora.count_one_block",
        ),
    ),
)


# --------------------------------------------------------------------------- бюджет памяти

#: Задание 1 лабораторной 7.5: форматы, для которых учащийся считает память под веса
#: Gemma-4B, и байты на одно число (таблица BYTES_PER_NUMBER тетрадки).
BUDGET_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
#: Параметров в пресете gemma3_4b_text (GEMMA_4B_PARAMS тетрадки).
BUDGET_PARAMS = GEMMA_4B_PARAMS
#: Допуск — правило курса (ANSWER_REL_TOL, 1 %): ответ, округлённый до сотых ГиБ (14,45 и
#: 7,23), принимается.
BUDGET_REL_TOL = ANSWER_REL_TOL


#: T4_USABLE_GIB тетрадки: доля 0,95 (LAB_TRAINING_XLA) от 15 ГиБ T4. Остаток на обучение
#: ячейка считает от него.
LAB_USABLE_GIB = t4_usable(LAB_TRAINING_XLA).gib


def _bytes_word(count: float) -> str:
    return plural(count, "байт", "байта", "байт")


@dataclass(frozen=True)
class BudgetMistake:
    """Типичная ошибка расчёта памяти под веса: что получилось бы, подсказка и код."""

    id: str
    value: Callable[[int], float]  # байт на число → ГиБ при этой ошибке
    hint: str
    #: Допуск в ГиБ сверх относительного: остаток 0,25 ГиБ, округлённый до сотых, — на 2 % мимо.
    abs_tol: float = 0.0


#: Остаток на обучение вместо памяти под веса и круглые 4 млрд параметров: для 16-битных
#: форматов они почти совпадают (7,47 и 7,45 ГиБ), и различает их только float32.
REMAINDER = BudgetMistake(
    "budget.remainder_not_weights",
    lambda size: LAB_USABLE_GIB - weights_gib(BUDGET_PARAMS, size),
    "записано, сколько памяти останется на обучение, а в weights_gib нужна память под сами "
    "веса — остаток ячейка посчитает и напечатает сама.",
    abs_tol=0.01,
)
ROUNDED_PARAM_COUNT = BudgetMistake(
    "budget.rounded_param_count",
    lambda size: weights_gib(4e9, size),
    "взяты круглые 4 млрд параметров. Возьмите точное число параметров пресета — GEMMA_4B_PARAMS.",
)
#: Типичные ошибки задания «память под веса в каждом формате» (P — GEMMA_4B_PARAMS).
BUDGET_MISTAKES = (
    BudgetMistake(
        "budget.bytes_not_gib",
        lambda size: BUDGET_PARAMS * size,
        "получились байты, а нужны ГиБ: разделите на 1024³.",
    ),
    BudgetMistake(
        "budget.gb_not_gib",
        lambda size: BUDGET_PARAMS * size / 1e9,
        "вы разделили на 10⁹ — это ГБ. Нужны ГиБ: делите на 1024³ = 1 073 741 824 "
        "(разница около 7 %).",
    ),
    BudgetMistake(
        "budget.mib_not_gib",
        lambda size: BUDGET_PARAMS * size / 1024**2,
        "получились МиБ: делите на 1024³, а не на 1024².",
    ),
    BudgetMistake(
        "budget.wrong_bytes_per_number",
        lambda size: weights_gib(BUDGET_PARAMS, 4 if size == 2 else 2),
        "взято не то число байт на число. float32 занимает 4 байта, а float16 и bfloat16 — "
        "по 2: берите байты каждого формата из BYTES_PER_NUMBER, а не одно число на все.",
    ),
    BudgetMistake(
        "budget.bits_not_bytes",
        lambda size: weights_gib(BUDGET_PARAMS, 8 * size),
        "вы умножили на число бит (32 или 16). В байте 8 бит: float32 — 4 байта на число, "
        "16-битные форматы — 2.",
    ),
    BudgetMistake(
        "budget.forgot_bytes_per_number",
        lambda size: weights_gib(BUDGET_PARAMS, 1),
        "забыт множитель — байты на число из BYTES_PER_NUMBER.",
    ),
    REMAINDER,
    ROUNDED_PARAM_COUNT,
    BudgetMistake(
        "budget.full_training",
        lambda size: weights_gib(BUDGET_PARAMS, 4 * size),
        "посчитаны веса вместе с градиентами и двумя моментами Adam для всех параметров — "
        "формула полного обучения из лабораторной 7.4. С LoRA исходные веса заморожены: "
        "градиенты и состояние Adam нужны только маленьким матрицам LoRA. Здесь нужна память "
        "под одни веса.",
    ),
)
#: Значение формата — строка, а не число.
NUMBER_AS_STRING = BudgetMistake(
    "budget.number_as_string",
    lambda size: math.nan,
    "записана строка, а нужно само число ГиБ, без кавычек и единиц: форматировать будем при "
    "выводе.",
)


def _and(names: Sequence[str]) -> str:
    """«float32», «float16 и bfloat16», «float32, float16 и bfloat16»."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} и {names[-1]}"


def _budget_entries(value: Any) -> dict[str, Any]:
    """Словарь учащегося или русский вердикт о том, почему проверять нечего."""
    if value is Ellipsis:
        raise LearnerProblem(
            "словарь ещё не заполнен: в weights_gib осталось «…».",
            "Запишите в weights_gib для каждого формата память под веса в ГиБ.",
        )
    if value is None:
        raise LearnerProblem("в weights_gib записано None, а нужен словарь «формат → ГиБ».")
    if not isinstance(value, dict):
        raise LearnerProblem(
            f"в weights_gib не словарь, а {type(value).__name__}.",
            'Нужен словарь «формат → ГиБ», например weights_gib["float32"] = ….',
        )
    if not value:
        raise LearnerProblem(
            "память под веса ещё не посчитана: словарь weights_gib пуст.",
            "Для каждого формата из BYTES_PER_NUMBER запишите в weights_gib память под "
            "веса Gemma-4B в ГиБ.",
        )
    return value


def _rounded_everywhere(entries: dict[str, Any]) -> bool:
    """float32 тоже посчитан для круглых 4 млрд (14,9 ГиБ): только тогда это та ошибка."""
    got = entries.get("float32")
    if isinstance(got, bool) or not isinstance(got, int | float):
        return False
    return math.isclose(got, weights_gib(4e9, BUDGET_BYTES["float32"]), rel_tol=BUDGET_REL_TOL)


def judge_weights_budget(observation: Any) -> CheckResult:
    """Вердикт по словарю «формат → ГиБ»: P · b / 1024³ для каждого формата (допуск 1 %)."""
    title = WEIGHTS_BUDGET_TITLE
    entries = _budget_entries(revive(observation))
    missing = [dtype for dtype in BUDGET_BYTES if dtype not in entries]
    if missing:
        return failed(
            title,
            "в словаре нет " + ", ".join(missing) + ".",
            "Подсказка: посчитайте память для каждого формата из BYTES_PER_NUMBER — "
            "удобнее всего циклом по BYTES_PER_NUMBER.items().",
            mistake="budget.missing_format",
        )

    lines: list[str] = []
    hinted: dict[BudgetMistake, list[str]] = {}  # ошибка → форматы с ней
    # 7,45 ГиБ для 16-битных форматов — и круглые 4 млрд параметров, и почти остаток 7,47 ГиБ:
    # круглые 4 млрд — только если и float32 посчитан для них (14,9 ГиБ), иначе это остаток.
    rounded = _rounded_everywhere(entries)
    skipped = REMAINDER if rounded else ROUNDED_PARAM_COUNT
    for dtype, size in BUDGET_BYTES.items():
        got = entries[dtype]
        expected = weights_gib(BUDGET_PARAMS, size)
        if isinstance(got, bool) or not isinstance(got, int | float) or not math.isfinite(got):
            kind = f"строка {got[:40]!r}" if isinstance(got, str) else type(got).__name__
            lines.append(f"{dtype}: записано не число ({kind}).")
            if isinstance(got, str):
                hinted.setdefault(NUMBER_AS_STRING, []).append(dtype)
            continue
        if math.isclose(got, expected, rel_tol=BUDGET_REL_TOL):
            continue
        # Верное число не называется: его учащийся считает сам, подсказка называет ошибку.
        lines.append(f"{dtype}: получено {format_gib(float(got), 3)} — неверно.")
        for known in BUDGET_MISTAKES:
            if known is skipped:
                continue
            wrong = known.value(size)
            if math.isclose(got, wrong, rel_tol=BUDGET_REL_TOL, abs_tol=known.abs_tol):
                hinted.setdefault(known, []).append(dtype)
                break

    if lines:
        details = [
            *lines,
            *(f"Подсказка: для {_and(dtypes)} {m.hint}" for m, dtypes in hinted.items()),
        ]
        if not hinted:
            details.append(
                "Память под веса — число параметров × байты на число, делённое на 1024³ "
                "(формула лабораторной 7.4)."
            )
        mistake = next((known.id for known in hinted), UNKNOWN)
        where = plural(len(lines), "формате", "форматах", "форматах")
        return failed(title, f"ошибка в {where}.", *details, mistake=mistake)

    usable = t4_usable(LAB_TRAINING_XLA).gib
    details = [
        f"{dtype}: {plural(BUDGET_PARAMS, *PARAMETERS)} × {_bytes_word(size)} / 1024³ ≈ "
        f"{format_gib(weights_gib(BUDGET_PARAMS, size))}, на обучение из "
        f"{format_gib(usable)} остаётся "
        f"{format_gib(usable - weights_gib(BUDGET_PARAMS, size), 2)}."
        for dtype, size in BUDGET_BYTES.items()
    ]
    return passed(title, "память под веса посчитана верно для всех форматов.", *details)


# --------------------------------------------------------------------------- тип до загрузки


def judge_weights_dtype(observation: Any) -> CheckResult:
    """Вердикт по выбранному типу весов (наблюдение — :func:`feedback.engine.values.describe`)."""
    choice = dtype_choice(revive(observation))
    title = WEIGHTS_DTYPE_TITLE
    usable = t4_usable(LAB_TRAINING_XLA).gib  # настройки памяти лабораторной 7.5
    overhead = training_overhead_gib("gemma3_4b_text")
    if choice == "bfloat16":
        # Сами объёмы весов — ответ задания 1 (бюджет): верный выбор их тоже не называет.
        return passed(
            title,
            "bfloat16 — 2 байта на параметр: веса вдвое меньше, чем во float32.",
            f"Из {format_gib(usable)} T4 часть уйдёт на веса, а шагу обучения сверх них нужно "
            f"около {format_gib(overhead, 3)} ({measured_overhead_source()}).",
        )
    if choice in ("float32", "float64"):
        size = LOADABLE_DTYPES[choice]
        weights = weights_gib(GEMMA_4B_PARAMS, size)
        # Память под веса — ответ задания 1 (бюджет): её вердикт не называет.
        if weights > usable:
            why = "одни только веса Gemma-4B в нём не поместятся в T4."
        else:
            why = (
                "веса Gemma-4B в нём, может быть, и поместятся в T4, но почти не оставят места "
                f"обучению. А шагу обучения сверх весов нужно ещё около {format_gib(overhead, 3)} "
                f"({measured_overhead_source()}), так что вместе с обучением они не поместятся."
            )
        return failed(
            title,
            f"{choice} — {plural(size, 'байт', 'байта', 'байт')} на параметр: {why}",
            "Подсказка: в бюджете памяти, кроме весов, есть само обучение — активации, логиты, "
            "матрицы LoRA с состоянием Adam, буферы XLA. Нужен 16-битный тип с тем же "
            "диапазоном, что у float32.",
            mistake="dtype.float32",
        )
    if choice == "float16":
        return failed(
            title,
            "float16 тоже занимает 2 байта, но его диапазон узок (максимум около 65 504): при "
            "обучении легко получить inf.",
            "Подсказка: нужен 16-битный тип с тем же диапазоном, что у float32: сравните "
            "форматы опытом над числом 70000 в ячейке выше.",
            mistake="dtype.float16",
        )
    if choice in MIXED_POLICIES:
        return failed(
            title,
            f"{choice} — это смешанная точность: вычисления в 16 битах, а веса хранятся во "
            "float32, так что памяти под веса она не экономит.",
            "Подсказка: нужен тип самих весов — один из форматов задания 1.",
            mistake="dtype.mixed_policy",
        )
    return failed(
        title,
        f"Keras не знает тип весов {choice[:40]!r}.",
        "Впишите строкой имя одного из форматов задания 1 (ключи BYTES_PER_NUMBER).",
        mistake="dtype.unknown_name",
    )

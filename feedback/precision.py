"""Проверки лабораторной 7.5: веса в bfloat16 и адаптеры LoRA.

Проверки смотрят на сами переменные модели, а не только на её политику точности
(``dtype_policy``): модель с политикой ``mixed_bfloat16`` считает в bfloat16, но
хранит веса во float32 и памяти не экономит.

Keras держит матрицы LoRA (``lora_kernel_a`` и ``lora_kernel_b``) во float32 даже у
модели в bfloat16 — так задумано: маленькие обучаемые матрицы хранят в полной
точности, чтобы небольшие обновления не терялись при округлении. Проверка это
допускает и говорит об этом.

Здесь — сторона наблюдения: что проверка узнаёт у модели учащегося (``*_facts``), и
то, что нужно ячейкам тетрадки (:func:`parameter_counts`). Ячейке загрузки модели нужно
другое — разобрать выбор типа весов до загрузки (:func:`require_weights_dtype`, с памятью
на обучение сверх весов) и положить заглушку :data:`NOT_LOADED` на место незагруженной
модели; это отдельный модуль :mod:`feedback.precision_loading`, а его имена тетрадки берут
отсюда, как прежде (``precision.require_weights_dtype``, ``precision.not_loaded()``).
Вердикты — что считается верным (bfloat16, ранг LoRA, только матрицы LoRA обучаются),
подсказки к ошибкам — в :mod:`feedback.answers.precision`: в песочнице оценивания этой
папки нет, и код учащегося не может ни спросить вердикт, ни подсмотреть эталон.

Здесь же задание на число параметров LoRA (:func:`check_lora_parameter_count`): учащийся
выводит формулу по размерам матриц, а :func:`show_lora_count` сверяет её с числом
обучаемых параметров загруженной модели. Верная формула и подсказки — в
:mod:`feedback.answers.precision`.

Модуль лёгкий: keras здесь не импортируется, проверки работают с тем объектом,
который передал учащийся.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from feedback.engine.calling import (
    LearnerProblem,
    as_number,
    learner_value,
    observe_call,
    require_function,
)
from feedback.engine.comparing import FunctionTask, choice, integers
from feedback.engine.graded import GradedCheck, graded_check
from feedback.engine.result import CheckResult
from feedback.engine.values import describe
from feedback.formatting import format_plain

# Ячейка загрузки 7.5 — в своём модуле; её имена тетрадки и тесты берут отсюда.
from feedback.precision_loading import LOADABLE_DTYPES as LOADABLE_DTYPES
from feedback.precision_loading import MEASURED_PRESET as MEASURED_PRESET
from feedback.precision_loading import MIXED_POLICIES as MIXED_POLICIES
from feedback.precision_loading import NOT_LOADED as NOT_LOADED
from feedback.precision_loading import STEP_ROW as STEP_ROW
from feedback.precision_loading import WEIGHTS_ROW as WEIGHTS_ROW
from feedback.precision_loading import ModelNotLoaded as ModelNotLoaded
from feedback.precision_loading import WaitingForModel as WaitingForModel
from feedback.precision_loading import WeightsDtypeError as WeightsDtypeError
from feedback.precision_loading import dtype_choice as dtype_choice
from feedback.precision_loading import measured_overhead_source as measured_overhead_source
from feedback.precision_loading import not_loaded as not_loaded
from feedback.precision_loading import require_weights_dtype as require_weights_dtype
from feedback.precision_loading import training_overhead_gib as training_overhead_gib

#: Слой, тип весов которого смотрит учащийся в задании 1 лабораторной 7.5.
LAB_LAYER = "decoder_block_0"

#: Байты на элемент для типов весов (для подсказок и оценки памяти).
BYTES_PER_DTYPE = {
    "float64": 8,
    "float32": 4,
    "bfloat16": 2,
    "float16": 2,
    "int8": 1,
    "int4": 0.5,
}


# --------------------------------------------------------------------------- модель


def _dtype_name(dtype: Any) -> str:
    """Имя типа: ``"bfloat16"`` из строки, dtype numpy/jax или ``tf.DType``."""
    if isinstance(dtype, str):
        return dtype
    name = getattr(dtype, "name", None)
    return name if isinstance(name, str) else str(dtype)


def _is_lora(variable: Any) -> bool:
    return "lora" in _path(variable)


def _path(variable: Any) -> str:
    path = getattr(variable, "path", None) or getattr(variable, "name", None)
    return str(path) if path is not None else "?"


def _size(variable: Any) -> int:
    count = 1
    for dimension in tuple(getattr(variable, "shape", ())):
        count *= int(dimension)
    return count


def _unique(variables: Iterable[Any]) -> list[Any]:
    seen: set[int] = set()
    result = []
    for variable in variables:
        if id(variable) not in seen:
            seen.add(id(variable))
            result.append(variable)
    return result


def _not_a_model(model: Any) -> LearnerProblem | None:
    """Объяснение, если передана явно не модель; ``None`` — можно смотреть дальше."""
    if isinstance(model, ModelNotLoaded):
        return LearnerProblem(model.message)
    if model is Ellipsis or model is None:
        return LearnerProblem(
            "модель ещё не загружена: вместо неё передано «…» или None.",
            "Выполните ячейку с загрузкой модели (from_preset) и передайте в проверку "
            "переменную model.",
        )
    if isinstance(model, str):
        hint = (
            "Это похоже на тип весов; проверка сама найдёт его у модели — передайте model."
            if model in BYTES_PER_DTYPE
            else "Передайте переменную без кавычек, например check_…(model)."
        )
        return LearnerProblem(f"передана строка {model[:40]!r}, а нужна сама модель.", hint)
    if inspect.isroutine(model):
        return LearnerProblem(
            f"передана функция {getattr(model, '__name__', '?')}, а нужна модель.",
            "Вызовите функцию и передайте в проверку то, что она вернула.",
        )
    if isinstance(model, type):
        return LearnerProblem(
            f"передан класс {model.__name__}, а нужна загруженная модель.",
            "Создайте модель: model = keras_hub.models.Gemma3CausalLM.from_preset(...), "
            "и передайте в проверку её.",
        )
    return None


def _read(owner: Any, attribute: str, what: str) -> Any:
    """``owner.attribute``; ошибка при чтении — понятный вердикт вместо трассировки."""
    try:
        return getattr(owner, attribute)
    except NotImplementedError:
        raise LearnerProblem(
            "модель ещё не готова: при обращении к ней сработала заглушка (NotImplementedError).",
            "Замените заглушку своим кодом и выполните ячейку.",
        ) from None
    except AttributeError:
        raise
    except Exception as error:
        raise LearnerProblem(
            f"не удалось прочитать {what}: {type(error).__name__}: {error}",
            "Проверьте, что передаёте загруженную модель.",
        ) from None


def resolve_backbone(model: Any) -> Any:
    """Основная сеть модели Keras Hub: ``model.backbone`` или сама ``model``.

    Годится и ``Gemma3CausalLM``, и её ``backbone``. Если передано что-то другое,
    выбрасывает :class:`~feedback.engine.calling.LearnerProblem` с русским объяснением.
    """
    problem = _not_a_model(model)
    if problem:
        raise problem
    try:
        backbone = _read(model, "backbone", "model.backbone")
    except AttributeError:
        backbone = model
    problem = _not_a_model(backbone)
    if problem:
        raise LearnerProblem(
            "у модели нет основной сети: model.backbone пуст.",
            "Загрузите модель заново через from_preset(...).",
        )
    try:
        weights = _read(backbone, "weights", "веса модели")
    except AttributeError:
        weights = None
    if not isinstance(weights, Sequence) or isinstance(weights, str):
        raise LearnerProblem(
            f"передан объект типа {type(model).__name__}, а нужна модель Keras Hub.",
            "Передайте модель, загруженную так: "
            'keras_hub.models.Gemma3CausalLM.from_preset(..., dtype="bfloat16").',
        )
    if not weights:
        raise LearnerProblem(
            "у модели нет весов: похоже, она ещё не построена.",
            "Загрузите модель через from_preset(...): тогда веса появятся сразу.",
        )
    return backbone


def _weights(model: Any, attribute: str = "weights") -> list[Any]:
    """Переменные модели (``weights`` или ``trainable_weights``) без повторов."""
    backbone = resolve_backbone(model)
    owner = model if hasattr(model, "backbone") else backbone
    try:
        return _unique(getattr(owner, attribute))
    except Exception:
        return _unique(getattr(backbone, attribute))


def parameter_counts(model: Any) -> tuple[int, int]:
    """Число обучаемых и всех параметров модели: ``(trainable, total)``.

    Считает так же, как ``model.summary()``: матрицы LoRA входят в оба числа,
    замороженные веса — только во второе. Принимает ``Gemma3CausalLM`` или её
    ``backbone``; на что-то другое отвечает ``TypeError`` с русским текстом.
    """
    try:
        total = sum(_size(variable) for variable in _weights(model))
        trainable = sum(_size(variable) for variable in _weights(model, "trainable_weights"))
    except LearnerProblem as problem:
        raise TypeError(problem.headline) from None
    return trainable, total


def _dtype_policy_name(backbone: Any) -> str | None:
    policy = getattr(backbone, "dtype_policy", None)
    name = getattr(policy, "name", None)
    return name if isinstance(name, str) else None


def _lab_kernel_dtype(backbone: Any) -> str | None:
    """Тип весов в том месте, которое печатает задание 1, или ``None``, если его нет."""
    try:
        query = backbone.get_layer(LAB_LAYER).attention.query_dense
        kernel = getattr(query, "_kernel", None)
        if kernel is None:
            kernel = query.kernel
        return _dtype_name(kernel.dtype)
    except Exception:
        return None


@dataclass(frozen=True)
class VariableFacts:
    """Переменная модели в наблюдении: путь, тип, число элементов, матрица LoRA ли."""

    path: str
    dtype: str
    size: int
    lora: bool

    @staticmethod
    def of(variable: Any) -> list[Any]:
        return [_path(variable), _dtype_name(variable.dtype), _size(variable), _is_lora(variable)]

    @classmethod
    def parse(cls, raw: Any) -> VariableFacts:
        path, dtype, size, lora = raw
        return cls(str(path), str(dtype), int(size), bool(lora))


# --------------------------------------------------------------------------- bfloat16


def bfloat16_facts(model: Any) -> dict[str, Any]:
    """Наблюдение для проверки bfloat16: типы всех переменных основной сети."""
    backbone = resolve_backbone(model)
    return {
        "variables": [VariableFacts.of(variable) for variable in _unique(backbone.weights)],
        "policy": _dtype_policy_name(backbone),
        "lab_dtype": _lab_kernel_dtype(backbone),
    }


BFLOAT16_TITLE = "Веса модели в bfloat16"
BFLOAT16 = GradedCheck(
    "precision.check_bfloat16", BFLOAT16_TITLE, bfloat16_facts, "precision.judge_bfloat16"
)


@graded_check(BFLOAT16)
def check_bfloat16(model: Any) -> CheckResult:
    """Проверяет, что веса основной сети действительно хранятся в bfloat16.

    Смотрит тип каждой переменной ``model.backbone.weights``, а не только политику
    точности. Матрицы LoRA (``lora_kernel_a/b``) во float32 допустимы: так их
    хранит Keras. При ошибке называет найденный тип и несколько переменных не в
    bfloat16.
    """


# --------------------------------------------------------------------------- LoRA


def _layers(backbone: Any) -> list[Any]:
    flatten = getattr(backbone, "_flatten_layers", None)
    if flatten is None:
        return []
    return list(flatten(include_self=False))


def _layer_path(layer: Any) -> str:
    return str(getattr(layer, "path", None) or getattr(layer, "name", "?"))


def _missing_lora_targets(backbone: Any, layers: Sequence[Any]) -> list[Any]:
    """Слои, которые ``enable_lora`` должен был затронуть, но LoRA в них нет."""
    names_of = getattr(backbone, "default_lora_layer_names", None)
    if names_of is None:
        return []
    try:
        targets = set(names_of())
    except Exception:
        return []
    return [
        layer
        for layer in layers
        if getattr(layer, "name", None) in targets
        and hasattr(layer, "enable_lora")
        and getattr(layer, "weights", None)
        and not getattr(layer, "lora_enabled", False)
    ]


def lora_facts(model: Any, rank: int = 4) -> dict[str, Any]:
    """Наблюдение для проверки LoRA: слои с адаптерами, их ранги и обучаемые веса."""
    backbone = resolve_backbone(model)
    layers = _layers(backbone)
    lora_layers = [layer for layer in layers if getattr(layer, "lora_enabled", False)]
    trainable, total = parameter_counts(model)
    return {
        "lora_layers": [
            [_layer_path(layer), getattr(layer, "lora_rank", None)] for layer in lora_layers
        ],
        "missing": [_layer_path(layer) for layer in _missing_lora_targets(backbone, layers)],
        "trainable": [VariableFacts.of(v) for v in _weights(model, "trainable_weights")],
        "counts": [trainable, total],
    }


LORA_TITLE = "Адаптеры LoRA"
LORA = GradedCheck("precision.check_lora", LORA_TITLE, lora_facts, "precision.judge_lora")


@graded_check(LORA)
def check_lora(model: Any, rank: int = 4) -> CheckResult:
    """Проверяет LoRA: включена в слоях внимания с рангом ``rank``, обучаются только её матрицы.

    Называет ошибку: LoRA не включена, ранг не тот (какой найден), LoRA не во всех
    слоях-целях, обучаются лишние веса (какие). Показывает число обучаемых и всех
    параметров.
    """


# --------------------------------------------------------------------------- число параметров LoRA

LORA_COUNT_ARGS = (
    "hidden_dim",
    "head_dim",
    "num_query_heads",
    "num_kv_heads",
    "rank",
    "num_blocks",
)
#: Случаи: Gemma-4B, затем по одному изменённому размеру, крошечная Gemma и Gemma-1B.
LORA_COUNT_CASES = tuple(
    dict(zip(LORA_COUNT_ARGS, values, strict=True))
    for values in (
        (2560, 256, 8, 4, 4, 34),  # gemma3_4b_text
        (2560, 256, 8, 4, 8, 34),  # rank
        (2560, 256, 8, 4, 8, 26),  # num_blocks
        (2560, 128, 8, 4, 8, 26),  # head_dim
        (2560, 128, 8, 2, 8, 26),  # num_kv_heads
        (2560, 128, 16, 2, 8, 26),  # num_query_heads
        (1024, 128, 16, 2, 8, 26),  # hidden_dim
        (64, 16, 4, 2, 4, 2),  # крошечная Gemma курса
        (1152, 256, 4, 1, 4, 26),  # gemma3_1b
    )
)


def _format_count(value: float, digits: int = 3) -> str:
    return format_plain(value, max(0, digits - 3))


LORA_PARAMETERS = FunctionTask(
    "lora_parameter_count",
    LORA_COUNT_CASES,
    "precision.LORA_PARAMETERS",
    formatter=_format_count,
    samplers={
        "hidden_dim": choice(64, 256, 768, 1024, 1152, 2048, 2560, 3072, 4096),
        "head_dim": choice(16, 32, 64, 128, 256),
        "num_query_heads": choice(1, 2, 4, 8, 16, 32),
        "num_kv_heads": choice(1, 2, 4, 8),
        "rank": choice(1, 2, 4, 8, 16),
        "num_blocks": integers(1, 64),
    },
)


@graded_check(LORA_PARAMETERS.graded("precision.check_lora_parameter_count"))
def check_lora_parameter_count(
    fn: Any, cases: Sequence[Sequence[float]] | None = None
) -> CheckResult:
    """Проверяет ``lora_parameter_count(hidden_dim, head_dim, num_query_heads, num_kv_heads,
    rank, num_blocks)``: сколько параметров обучает LoRA, если Keras раскладывает её по головам.
    """


def _lora_shapes(model: Any, rank: int) -> dict[str, int] | None:
    """Размеры основной сети модели для :func:`lora_parameter_count` или ``None``."""
    backbone = resolve_backbone(model)
    names = {
        "hidden_dim": "hidden_dim",
        "head_dim": "head_dim",
        "num_query_heads": "num_query_heads",
        "num_kv_heads": "num_key_value_heads",
        "num_blocks": "num_layers",
    }
    shapes: dict[str, int] = {}
    for argument, attribute in names.items():
        value = getattr(backbone, attribute, None)
        if not isinstance(value, int):
            return None
        shapes[argument] = value
    shapes["rank"] = rank
    return {name: shapes[name] for name in LORA_COUNT_ARGS}


def lora_count_report(fn: Any, model: Any, rank: int = 4) -> str:
    """Сверка формулы учащегося с числом обучаемых параметров загруженной модели (текст)."""
    try:
        shapes = _lora_shapes(model, rank)
        trainable, _ = parameter_counts(model)
    except (LearnerProblem, TypeError) as problem:
        return f"Сверить не с чем: {problem}"
    if shapes is None:
        return "Сверить не с чем: у модели нет размеров Gemma 3 (hidden_dim, head_dim, …)."
    sizes = ", ".join(f"{name}={value}" for name, value in shapes.items())
    try:
        require_function(fn)
        got = as_number(learner_value(observe_call(fn, shapes), shapes), shapes)
    except LearnerProblem as problem:
        return f"lora_parameter_count: {problem.headline}"
    shown = format_plain(trainable, 0)
    if got == trainable:
        return (
            f"Размеры этой модели: {sizes}. Ваша формула даёт {format_plain(got, 0)} — ровно "
            f"столько параметров обучается у модели после enable_lora(rank={rank}) "
            f"(model.summary() показывает то же: Trainable params: {shown})."
        )
    return (
        f"Размеры этой модели: {sizes}. Ваша формула даёт {format_plain(got, 1)}, а у модели "
        f"после enable_lora(rank={rank}) обучается {shown}. Сравните с проверкой выше."
    )


def show_lora_count(fn: Any, model: Any, rank: int = 4) -> None:
    """Печатает :func:`lora_count_report`."""
    print(lora_count_report(fn, model, rank))


# --------------------------------------------------------------------------- бюджет памяти

WEIGHTS_BUDGET_TITLE = "Память под веса в разных форматах"

WEIGHTS_BUDGET = GradedCheck(
    "precision.check_weights_budget",
    WEIGHTS_BUDGET_TITLE,
    observe=describe,
    judge="precision.judge_weights_budget",
)


@graded_check(WEIGHTS_BUDGET)
def check_weights_budget(weights_gib: Any) -> CheckResult:
    """Проверяет словарь задания 1 лабораторной 7.5: формат → память под веса Gemma-4B, ГиБ.

    Для каждого формата из ``BYTES_PER_NUMBER`` нужно P · b / 1024³ (ответ, округлённый
    до сотых, принимается). Типичные ошибки — байты или ГБ вместо ГиБ, не то число байт на
    число, круглые 4 млрд параметров, градиенты и Adam для всех весов — получают свою
    подсказку.
    """


# --------------------------------------------------------------------------- тип до загрузки

WEIGHTS_DTYPE_TITLE = "Тип весов для загрузки"

WEIGHTS_DTYPE = GradedCheck(
    "precision.check_weights_dtype",
    WEIGHTS_DTYPE_TITLE,
    observe=describe,
    judge="precision.judge_weights_dtype",
)


@graded_check(WEIGHTS_DTYPE)
def check_weights_dtype(dtype: Any) -> CheckResult:
    """Проверяет выбор типа весов (задание 1 лабораторной 7.5) — до всякой загрузки."""

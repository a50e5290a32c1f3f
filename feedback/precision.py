"""Проверки лабораторной 7.5: веса в bfloat16 и адаптеры LoRA.

Проверки смотрят на сами переменные модели, а не только на её политику точности
(``dtype_policy``): модель с политикой ``mixed_bfloat16`` считает в bfloat16, но
хранит веса во float32 и памяти не экономит.

Keras держит матрицы LoRA (``lora_kernel_a`` и ``lora_kernel_b``) во float32 даже у
модели в bfloat16 — так задумано: маленькие обучаемые матрицы хранят в полной
точности, чтобы небольшие обновления не терялись при округлении. Проверка это
допускает и говорит об этом.

Здесь — сторона наблюдения: что проверка узнаёт у модели учащегося (``*_facts``), и
то, что нужно ячейкам тетрадки (:func:`require_weights_dtype`, :func:`parameter_counts`,
заглушка :data:`NOT_LOADED`, с которой ячейки ниже незагруженной модели говорят, что ждут
задания 1).
Ячейка загрузки сверяет с памятью видеокарты не одни веса, а веса вместе с тем, что
нужно обучению сверх них (:func:`training_overhead_gib`, из записи измерений): иначе
float32 на T4 прошёл бы сверку весов, а обучение потом упало бы с нехваткой памяти.
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
from feedback.engine.waiting import WaitingForTask
from feedback.formatting import format_gib, format_plain

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

#: Типы весов, которые принимает ``from_preset(..., dtype=…)``, и байты на параметр.
LOADABLE_DTYPES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
#: Политики смешанной точности: считают в 16 битах, но веса хранят во float32.
MIXED_POLICIES = {"mixed_float16", "mixed_bfloat16"}
WEIGHTS_DTYPE_TITLE = "Тип весов для загрузки"


def dtype_choice(value: Any) -> str:
    """Выбор учащегося как строка или :class:`LearnerProblem`, если выбора нет."""
    if value is Ellipsis:
        raise LearnerProblem(
            "тип весов ещё не выбран: вместо строки осталось «…».",
            "Впишите имя типа строкой в кавычках и выполните ячейку.",
        )
    if value is None:
        raise LearnerProblem(
            "тип весов ещё не выбран: в WEIGHTS_DTYPE пока None, а нужна строка с именем типа.",
            "Впишите имя типа строкой в кавычках и выполните ячейку.",
        )
    if not isinstance(value, str):
        raise LearnerProblem(
            f"тип нужен строкой, а получен объект типа {type(value).__name__}.",
            "Впишите имя типа строкой в кавычках.",
        )
    return value.strip()


WEIGHTS_DTYPE = GradedCheck(
    "precision.check_weights_dtype",
    WEIGHTS_DTYPE_TITLE,
    observe=describe,
    judge="precision.judge_weights_dtype",
)


@graded_check(WEIGHTS_DTYPE)
def check_weights_dtype(dtype: Any) -> CheckResult:
    """Проверяет выбор типа весов (задание 1 лабораторной 7.5) — до всякой загрузки."""


class WeightsDtypeError(ValueError):
    """Модель не загружается: тип весов не годится. В Jupyter — только русский текст."""

    def _render_traceback_(self) -> list[str]:
        return ["Модель не загружена.", *str(self).splitlines()]


class WaitingForModel(WaitingForTask, WeightsDtypeError, AttributeError):
    """Ячейке курса нужна модель, а её не загрузили: в Jupyter — одна русская строка.

    Это и ``AttributeError``: ``getattr(model, имя, по умолчанию)`` и ``hasattr`` у заглушки
    не падают, и код, который перебирает переменные (инструменты, подсказки Jupyter), её
    спокойно обходит.
    """


class ModelNotLoaded:
    """Заглушка на месте ``model``, пока ячейка загрузки 7.5 не загрузила модель.

    Ячейка загрузки кладёт её в ``model`` до того, как отказаться работать без задания 1
    (:func:`require_weights_dtype`). Тогда ячейки ниже, которым нужна модель, не падают с
    английской ``NameError``: обращение к заглушке останавливает ячейку одной русской строкой
    (:class:`WaitingForModel`), а проверки отвечают красным вердиктом с тем же текстом. Ячейка
    по-прежнему падает, и в строгом режиме проверка тоже, — заглушка лишь говорит, чего она
    ждёт.
    """

    message = (
        "модель ещё не загружена, и эта ячейка ждёт её: выполните задание 1 (тип весов "
        "в WEIGHTS_DTYPE) и ячейку загрузки модели, а потом эту."
    )

    def _stop(self) -> WaitingForModel:
        return WaitingForModel(self.message[0].upper() + self.message[1:])

    def __getattr__(self, name: str) -> Any:
        raise self._stop()

    def __setattr__(self, name: str, value: Any) -> None:
        raise self._stop()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._stop()

    def __repr__(self) -> str:
        return "<модель ещё не загружена: ячейка загрузки ждёт задания 1>"


#: Заглушка ``model`` для ячейки загрузки лабораторной 7.5 (:class:`ModelNotLoaded`).
NOT_LOADED = ModelNotLoaded()


def not_loaded() -> ModelNotLoaded:
    """Заглушка :data:`NOT_LOADED` для ячейки загрузки: ``model = precision.not_loaded()``.

    Вызов, а не имя: обзор кода при оценивании (:mod:`feedback.teacher.review`) считает
    переменную, связанную с объектом пакета проверок, ссылкой в пакет, и ответ задания 2
    ``model.backbone.enable_lora(rank=4)`` выглядел бы обращением к нему; результат вызова
    помощника курса — обычное значение.
    """
    return NOT_LOADED


#: Опыты записи измерений (:mod:`feedback.measured`), из которых 7.5 берёт память шага
#: обучения: шаг настоящей Gemma-4B в bfloat16 с LoRA ранга 4, AdamW, батч 1, длина 400, и одни
#: веса в bfloat16. Разница — всё, что обучению нужно сверх весов.
STEP_ROW = "b1_t4"
WEIGHTS_ROW = "w16_t4"
#: Пресет, для которого есть замер (на крошечной учебной модели сверять нечего).
MEASURED_PRESET = "gemma3_4b_text"


def measured_overhead_source() -> str:
    """Откуда число сверх весов: «замер на NVIDIA H200 …; T4 может понадобиться больше»."""
    from feedback import measured

    provenance = measured.load_record().provenance
    return (
        f"замер на {provenance.gpu}, jax {provenance.jax}, {provenance.date}; T4 (sm_75, без "
        "блоков bfloat16: XLA переводит умножения bfloat16 во float32) может понадобиться больше"
    )


def training_overhead_gib(preset: str) -> float:
    """Сколько памяти шагу обучения нужно сверх весов, ГиБ (0 — если замера для пресета нет).

    Это активации, логиты словаря, матрицы LoRA с их градиентами и моментами Adam и
    временные буферы XLA: пик шага с батчем 1 минус пик одних весов в bfloat16 — оба из
    записи измерений (:mod:`feedback.measured`). С весами во float32 и считать пришлось бы во
    float32, так что это нижняя граница.
    """
    if preset != MEASURED_PRESET:
        return 0.0
    from feedback import measured

    record = measured.load_record()
    return record.row(STEP_ROW).peak_gib - record.row(WEIGHTS_ROW).peak_gib


def require_weights_dtype(dtype: Any, preset: str, accelerator: Any = None) -> str:
    """Тип весов, если с ним можно загружать и обучать ``preset``; иначе :class:`WeightsDtypeError`.

    Вызывается перед ``from_preset``: незаполненное задание или тип, с которым настоящей
    Gemma не хватит памяти видеокарты — на веса или на веса вместе с обучением
    (:func:`training_overhead_gib`), — останавливают ячейку сразу: без загрузки, без
    нехватки памяти посреди обучения и без перезапуска среды. Из-за обучения отказывают
    только типу длиннее 16 бит: 16-битному уступить уже некому.
    """
    try:
        choice = dtype_choice(dtype)
    except LearnerProblem as problem:
        raise WeightsDtypeError("\n".join([problem.headline, *problem.details])) from None
    if choice not in LOADABLE_DTYPES and choice not in MIXED_POLICIES:
        raise WeightsDtypeError(
            f"Keras не знает тип весов {choice[:40]!r}. Подходят: {', '.join(LOADABLE_DTYPES)}."
        )
    from feedback import wall

    try:
        params = wall.params_of(preset)
    except KeyError:
        return choice  # крошечная учебная модель: поместится в любом типе
    bytes_per_param = LOADABLE_DTYPES.get(choice, 4)  # смешанная точность хранит float32
    weights = wall.weights_gib(params, bytes_per_param)
    usable = wall.usable_gib(accelerator)
    if weights > usable:
        raise WeightsDtypeError(
            f"С типом {choice} веса {preset} займут {format_gib(weights)}, а видеокарте доступно "
            f"{format_gib(usable)}: загрузка упала бы с нехваткой памяти, и среду пришлось бы "
            "перезапускать. Проверьте задание 1 и выполните ячейки заново."
        )
    overhead = training_overhead_gib(preset)
    # Оценка шага приближённая: отказываем, только если 16-битный тип оставил бы обучению
    # больше места. Если и с ним не хватает (малая доля памяти XLA), решит само обучение.
    shortest = min(LOADABLE_DTYPES.values())
    if bytes_per_param > shortest and weights + overhead > usable:
        left = usable - weights
        raise WeightsDtypeError(
            f"С типом {choice} веса {preset} займут {format_gib(weights)} из "
            f"{format_gib(usable)}, доступных видеокарте, и на обучение останется лишь "
            f"{format_gib(left, 2)}. А шагу обучения сверх весов нужно ещё около "
            f"{format_gib(overhead, 3)} ({measured_overhead_source()}): активации, логиты словаря, "
            "матрицы LoRA с градиентами и моментами Adam, временные буферы XLA. Даже если "
            "загрузка пройдёт, обучение упадёт с нехваткой памяти, и среду придётся "
            "перезапускать. Проверьте задание 1 и выполните ячейки заново."
        )
    return choice

"""Проверки лабораторной 7.5: веса в bfloat16 и адаптеры LoRA.

Проверки смотрят на сами переменные модели, а не только на её политику точности
(``dtype_policy``): модель с политикой ``mixed_bfloat16`` считает в bfloat16, но
хранит веса во float32 и памяти не экономит.

Keras держит матрицы LoRA (``lora_kernel_a`` и ``lora_kernel_b``) во float32 даже у
модели в bfloat16 — так задумано: маленькие обучаемые матрицы хранят в полной
точности, чтобы небольшие обновления не терялись при округлении. Проверка это
допускает и говорит об этом.

Модуль лёгкий: keras здесь не импортируется, проверки работают с тем объектом,
который передал учащийся.
"""

from __future__ import annotations

import inspect
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from feedback.calling import LearnerProblem
from feedback.formatting import (
    PARAMETERS,
    format_gib,
    format_number,
    format_significant,
    plural,
)
from feedback.graded import GradedCheck, graded_check
from feedback.result import CheckResult, failed, passed
from feedback.values import describe, revive

#: Слой и атрибут, которые смотрит учащийся в задании 1 лабораторной 7.5.
LAB_LAYER = "decoder_block_0"
LAB_PATH = 'model.backbone.get_layer("decoder_block_0").attention.query_dense.kernel.dtype'

#: Сколько имён переменных показывать в сообщении.
SHOWN_PATHS = 3

_BYTES_PER_DTYPE = {
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
    if model is Ellipsis or model is None:
        return LearnerProblem(
            "модель ещё не загружена: вместо неё передано «…» или None.",
            "Выполните ячейку с загрузкой модели (from_preset) и передайте в проверку "
            "переменную model.",
        )
    if isinstance(model, str):
        hint = (
            "Это похоже на тип весов; проверка сама найдёт его у модели — передайте model."
            if model in _BYTES_PER_DTYPE
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
    выбрасывает :class:`~feedback.calling.LearnerProblem` с русским объяснением.
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
class _Variable:
    """Переменная модели в наблюдении: путь, тип, число элементов, матрица LoRA ли."""

    path: str
    dtype: str
    size: int
    lora: bool

    @staticmethod
    def of(variable: Any) -> list[Any]:
        return [_path(variable), _dtype_name(variable.dtype), _size(variable), _is_lora(variable)]

    @classmethod
    def parse(cls, raw: Any) -> _Variable:
        path, dtype, size, lora = raw
        return cls(str(path), str(dtype), int(size), bool(lora))


def _variables(raw: Any) -> list[_Variable]:
    return [_Variable.parse(item) for item in raw]


def _memory(variables: Sequence[_Variable]) -> float:
    return sum(v.size * _BYTES_PER_DTYPE.get(v.dtype, 4) for v in variables)


# --------------------------------------------------------------------------- bfloat16


def bfloat16_facts(model: Any) -> dict[str, Any]:
    """Наблюдение для проверки bfloat16: типы всех переменных основной сети."""
    backbone = resolve_backbone(model)
    return {
        "variables": [_Variable.of(variable) for variable in _unique(backbone.weights)],
        "policy": _dtype_policy_name(backbone),
        "lab_dtype": _lab_kernel_dtype(backbone),
    }


def judge_bfloat16(facts: dict[str, Any]) -> CheckResult:
    """Вердикт по :func:`bfloat16_facts`."""
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
            details.append(
                f"Подсказка: политика {policy} — это смешанная точность: вычисления идут "
                "в 16 битах, а веса хранятся во float32 (4 байта на параметр), так что "
                'памяти под веса она не экономит. Загрузите модель с dtype="bfloat16".'
            )
        elif "float32" in found:
            details.append(
                "Подсказка: по умолчанию from_preset загружает веса во float32 — 4 байта на "
                'параметр вместо 2. Загрузите модель заново с dtype="bfloat16": '
                'Gemma3CausalLM.from_preset(..., dtype="bfloat16").'
            )
        elif "float16" in found:
            details.append(
                "Подсказка: float16 тоже занимает 2 байта, но у него узкий диапазон "
                "(максимум около 65 504), и при обучении легко получить inf. В лабораторной "
                'нужен bfloat16: dtype="bfloat16".'
            )
        else:
            details.append('Подсказка: загрузите модель с dtype="bfloat16".')
        return failed(title, f"веса хранятся в {found_text}, а не в bfloat16.", *details)
    if not main:
        return failed(title, "у модели нет весов основной сети.")

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
        f"все {format_number(len(main))} переменных основной сети хранятся в bfloat16.",
        *details,
    )


BFLOAT16_TITLE = "Веса модели в bfloat16"
BFLOAT16 = GradedCheck("precision.check_bfloat16", BFLOAT16_TITLE, bfloat16_facts, judge_bfloat16)


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
        "trainable": [_Variable.of(v) for v in _weights(model, "trainable_weights")],
        "counts": [trainable, total],
    }


def judge_lora(facts: dict[str, Any], rank: int = 4) -> CheckResult:
    """Вердикт по :func:`lora_facts`."""
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
        )

    if not any(v.lora for v in trainable):
        return failed(
            title,
            "матрицы LoRA заморожены: обучаемых весов нет совсем.",
            counts,
            "Подсказка: похоже, после enable_lora модель заморозили "
            "(trainable = False). Загрузите модель заново и вызовите только "
            f"enable_lora(rank={rank}).",
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


LORA_TITLE = "Адаптеры LoRA"
LORA = GradedCheck("precision.check_lora", LORA_TITLE, lora_facts, judge_lora)


@graded_check(LORA)
def check_lora(model: Any, rank: int = 4) -> CheckResult:
    """Проверяет LoRA: включена в слоях внимания с рангом ``rank``, обучаются только её матрицы.

    Называет ошибку: LoRA не включена, ранг не тот (какой найден), LoRA не во всех
    слоях-целях, обучаются лишние веса (какие). Показывает число обучаемых и всех
    параметров.
    """


# --------------------------------------------------------------------------- тип до загрузки

#: Типы весов, которые принимает ``from_preset(..., dtype=…)``, и байты на параметр.
LOADABLE_DTYPES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
#: Политики смешанной точности: считают в 16 битах, но веса хранят во float32.
MIXED_POLICIES = {"mixed_float16", "mixed_bfloat16"}
WEIGHTS_DTYPE_TITLE = "Тип весов для загрузки"


def _dtype_choice(value: Any) -> str:
    """Выбор учащегося как строка или :class:`LearnerProblem`, если выбора нет."""
    if value is Ellipsis:
        raise LearnerProblem(
            "тип весов ещё не выбран: вместо строки осталось «…».",
            "Впишите имя типа строкой в кавычках и выполните ячейку.",
        )
    if value is None:
        raise LearnerProblem(
            "тип весов ещё не выбран: в переменной None — пустое значение, а нужна строка "
            "с именем типа.",
            "Впишите имя типа строкой в кавычках и выполните ячейку.",
        )
    if not isinstance(value, str):
        raise LearnerProblem(
            f"тип нужен строкой, а получен объект типа {type(value).__name__}.",
            "Впишите имя типа строкой в кавычках.",
        )
    return value.strip()


def _judge_weights_dtype(observation: Any) -> CheckResult:
    choice = _dtype_choice(revive(observation))
    title = WEIGHTS_DTYPE_TITLE
    if choice == "bfloat16":
        return passed(
            title,
            "bfloat16 — 2 байта на параметр.",
            f"Веса gemma3_4b_text займут ≈ {format_gib(3_880_099_328 * 2 / 1024**3)} "
            "вместо ≈ 14,5 ГиБ во float32 и поместятся в T4.",
        )
    if choice in ("float32", "float64"):
        return failed(
            title,
            f"{choice} — {plural(LOADABLE_DTYPES[choice], 'байт', 'байта', 'байт')} на параметр: "
            "веса Gemma-4B займут "
            f"≈ {format_gib(3_880_099_328 * LOADABLE_DTYPES[choice] / 1024**3)} и не "
            "поместятся в T4 (лабораторная 7.3).",
            "Подсказка: нужен 16-битный тип с тем же диапазоном, что у float32.",
        )
    if choice == "float16":
        return failed(
            title,
            "float16 тоже занимает 2 байта, но его диапазон узок (максимум около 65 504): при "
            "обучении легко получить inf.",
            "Подсказка: нужен 16-битный тип с тем же диапазоном, что у float32, — bfloat16.",
        )
    if choice in MIXED_POLICIES:
        return failed(
            title,
            f"{choice} — это смешанная точность: вычисления в 16 битах, а веса хранятся во "
            "float32, так что памяти под веса она не экономит.",
            'Подсказка: нужен тип самих весов, например "bfloat16".',
        )
    return failed(
        title,
        f"Keras не знает тип весов {choice[:40]!r}.",
        "Подходят строки " + ", ".join(f'"{name}"' for name in LOADABLE_DTYPES) + ".",
    )


WEIGHTS_DTYPE = GradedCheck(
    "precision.check_weights_dtype",
    WEIGHTS_DTYPE_TITLE,
    observe=describe,
    judge=_judge_weights_dtype,
)


@graded_check(WEIGHTS_DTYPE)
def check_weights_dtype(dtype: Any) -> CheckResult:
    """Проверяет выбор типа весов (задание 1 лабораторной 7.5) — до всякой загрузки."""


class WeightsDtypeError(ValueError):
    """Модель не загружается: тип весов не годится. В Jupyter — только русский текст."""

    def _render_traceback_(self) -> list[str]:
        return ["Модель не загружена.", *str(self).splitlines()]


def require_weights_dtype(dtype: Any, preset: str, accelerator: Any = None) -> str:
    """Тип весов, если с ним можно загружать ``preset``; иначе :class:`WeightsDtypeError`.

    Вызывается перед ``from_preset``: незаполненное задание или тип, с которым настоящая
    Gemma не поместится в память видеокарты, останавливают ячейку сразу — без загрузки,
    без нехватки памяти и без перезапуска среды.
    """
    try:
        choice = _dtype_choice(dtype)
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
    need = wall.weights_gib(params, bytes_per_param)
    usable = wall.usable_gib(accelerator)
    if need > usable:
        raise WeightsDtypeError(
            f"С типом {choice} веса {preset} займут {format_gib(need)}, а видеокарте доступно "
            f"{format_gib(usable)}: загрузка упала бы с нехваткой памяти, и среду пришлось бы "
            "перезапускать. Проверьте задание 1 и выполните ячейки заново."
        )
    return choice

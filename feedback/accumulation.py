"""Лабораторные 7.5 и 7.6: оптимизатор AdamW и накопление градиентов.

:func:`check_optimizer` сверяет оптимизатор учащегося с гиперпараметрами
лабораторной. :func:`accumulation_demo` на крошечной модели показывает, почему
накопление работает: среднее градиентов восьми микробатчей по одному примеру
равно градиенту батча из восьми примеров (потери усредняются по батчу), и
:data:`TOKEN_WEIGHTS_NOTE` объясняет, когда это верно для языковой модели.

Как это устроено в Keras 3.15 (бэкенд JAX, проверено тестами курса): с
``gradient_accumulation_steps=k`` оптимизатор складывает градиенты k микробатчей
и делит на k (усредняет, а не суммирует); ``clipnorm`` применяется к этому
среднему; ``optimizer.iterations`` считает настоящие обновления весов (микрошаги,
делённые на k), а расписание скорости обучения видит микрошаги.

Модуль лёгкий: keras, jax и pandas импортируются только внутри функций.
"""

from __future__ import annotations

import inspect
import math
import os
import sys
from dataclasses import dataclass
from typing import Any

from feedback.calling import LearnerProblem
from feedback.formatting import format_plain, format_scientific, format_significant, plural
from feedback.graded import GradedCheck, graded_check
from feedback.result import CheckResult, failed, passed

SEED = 812

#: Гиперпараметры AdamW, общие для лабораторных 7.5 и 7.6 (кроме скорости обучения
#: и накопления, которые передаются в проверку).
LAB_HYPERPARAMETERS = {
    "weight_decay": 0.01,
    "beta_1": 0.9,
    "beta_2": 0.95,
    "epsilon": 1e-6,
    "clipnorm": 0.5,
}

#: Значения keras.optimizers.AdamW по умолчанию: совпадение с ними — признак того,
#: что параметр просто не передан.
KERAS_DEFAULTS = {
    "learning_rate": 1e-3,
    "weight_decay": 0.004,
    "beta_1": 0.9,
    "beta_2": 0.999,
    "epsilon": 1e-7,
    "clipnorm": None,
}

#: Скорости обучения без накопления: лабораторная 7.5 и эксперимент с батчем 4 в 7.6.
LR_LAB_7_5 = 5e-5
LR_LAB_7_6_BATCH_4 = 1e-4

REL_TOL = 1e-5

_EXPLANATIONS = {
    "weight_decay": "затухание весов: на каждом шаге веса немного тянутся к нулю",
    "beta_1": "память первого момента — среднего градиента",
    "beta_2": "память второго момента — среднего квадрата градиента; при 0.95 она короче",
    "epsilon": "защита от деления на ноль в знаменателе Adam",
    "clipnorm": "обрезка градиента по норме для каждой переменной отдельно: гасит редкие всплески",
}


def literal(value: Any) -> str:
    """Значение так, как его пишут в коде: ``8e-4``, ``0.95``, ``None``."""
    if value is None or isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return str(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        return repr(value)
    if number == 0:
        return "0"
    if abs(number) < 1e-3:
        mantissa, _, exponent = f"{number:.3e}".partition("e")
        mantissa = mantissa.rstrip("0").rstrip(".")
        return f"{mantissa}e{int(exponent)}"
    return repr(float(f"{number:.6g}"))


def _same(got: Any, expected: Any) -> bool:
    if expected is None or got is None:
        return not got and not expected
    try:
        return math.isclose(float(got), float(expected), rel_tol=REL_TOL, abs_tol=0.0)
    except (TypeError, ValueError):
        return False


# --------------------------------------------------------------------------- оптимизатор


def _keras_class(name: str) -> Any:
    """Класс ``keras.optimizers.<name>``, если keras уже загружен, иначе ``None``."""
    keras = sys.modules.get("keras")
    return getattr(getattr(keras, "optimizers", None), name, None) if keras else None


def _resolve_optimizer(optimizer: Any) -> Any:
    """Оптимизатор Keras из того, что передал учащийся, или понятный вердикт."""
    if optimizer is Ellipsis or optimizer is None:
        raise LearnerProblem(
            "оптимизатор ещё не создан: вместо него передано «…» или None.",
            "Создайте его: optimizer = keras.optimizers.AdamW(...), и передайте в проверку.",
        )
    if isinstance(optimizer, str):
        raise LearnerProblem(
            f"передана строка {optimizer[:40]!r}, а нужен сам оптимизатор.",
            "По строке Keras создаст оптимизатор с параметрами по умолчанию. Создайте "
            "объект keras.optimizers.AdamW(...) с параметрами задания.",
        )
    if isinstance(optimizer, type):
        raise LearnerProblem(
            f"передан класс {optimizer.__name__}, а нужен созданный оптимизатор.",
            "Вызовите его с параметрами: keras.optimizers.AdamW(learning_rate=..., ...).",
        )
    if inspect.isroutine(optimizer):
        raise LearnerProblem(
            f"передана функция {getattr(optimizer, '__name__', '?')}, а нужен оптимизатор.",
            "Вызовите функцию и передайте в проверку то, что она вернула.",
        )
    keras = sys.modules.get("keras")
    base = _keras_class("Optimizer")
    if keras is not None and isinstance(optimizer, keras.Model):
        inner = getattr(optimizer, "optimizer", None)
        if inner is None:
            raise LearnerProblem(
                "передана модель без оптимизатора: она ещё не скомпилирована.",
                "Передайте в проверку сам оптимизатор (переменную optimizer).",
            )
        optimizer = inner
    inner = getattr(optimizer, "inner_optimizer", None)  # LossScaleOptimizer
    if inner is not None:
        optimizer = inner
    if base is None or not isinstance(optimizer, base):
        raise LearnerProblem(
            f"передан объект типа {type(optimizer).__name__}, а нужен оптимизатор Keras.",
            "Создайте его так: optimizer = keras.optimizers.AdamW(...).",
        )
    return optimizer


def _learning_rate(optimizer: Any) -> float | str:
    """Текущая скорость обучения числом или ``"schedule"`` для расписания."""
    schedule_class = _keras_class("schedules")
    schedule_class = getattr(schedule_class, "LearningRateSchedule", None)
    raw = getattr(optimizer, "_learning_rate", None)
    if schedule_class is not None and isinstance(raw, schedule_class):
        return "schedule"
    if callable(raw) and not hasattr(raw, "numpy"):
        return "schedule"
    import numpy as np

    value = optimizer.learning_rate
    # Variable.numpy() в Keras 3.15 с numpy 2 выдаёт DeprecationWarning: берём .value.
    return float(np.asarray(getattr(value, "value", value)))


@dataclass(frozen=True)
class _Mismatch:
    name: str
    expected: Any
    got: Any
    hint: str | None = None

    def describe(self) -> str:
        got = "расписание" if self.got == "schedule" else literal(self.got)
        return f"{self.name}: ожидалось {literal(self.expected)}, получено {got}."


def _lr_hint(got: float | str, expected: float, steps: int | None) -> str | None:
    if got == "schedule":
        return (
            "в лабораторной скорость обучения постоянная: передайте число, "
            "например learning_rate=" + literal(expected) + "."
        )
    if steps:
        if math.isclose(float(got), expected / math.sqrt(steps), rel_tol=0.02):
            base = literal(expected / steps)
            return (
                f"похоже, вы умножили {base} на √{steps}. Для Adam так часто и начинают "
                "подбор, это разумно. Но в задании, как в оригинальном курсе, скорость "
                f"масштабируют линейно: {base} × {steps} = {literal(expected)}."
            )
        if _same(got, expected / steps) or _same(got, LR_LAB_7_6_BATCH_4):
            return (
                f"это скорость обучения без накопления. С gradient_accumulation_steps="
                f"{steps} эффективный батч в {plural(steps, 'раз', 'раза', 'раз')} больше, "
                "и по правилу линейного масштабирования скорость обучения тоже умножают на "
                f"{steps}: {literal(expected / steps)} × {steps} = {literal(expected)}. "
                "Правило приближённое: в своих задачах скорость всё равно стоит подбирать."
            )
        if _same(got, LR_LAB_7_5):
            return (
                "5e-5 — скорость из лабораторной 7.5. Здесь за основу берётся 1e-4 из "
                "эксперимента с батчем 4, и по правилу линейного масштабирования (эффективный батч "
                f"×{steps}) её умножают на {steps}: 1e-4 × {steps} = "
                f"{literal(LR_LAB_7_6_BATCH_4 * steps)}. Поэтому сравнение с 7.5 не совсем "
                "честное: там 5e-5, здесь 8e-4."
            )
    elif _same(got, expected * 8) or _same(got, LR_LAB_7_6_BATCH_4 * 8):
        return (
            f"{literal(got)} подобрана для накопления градиентов ×8 (задание "
            f"лабораторной 7.6). Без накопления нужна {literal(expected)}."
        )
    elif _same(got, LR_LAB_7_5) or _same(got, LR_LAB_7_6_BATCH_4):
        return (
            f"{literal(got)} — скорость обучения из другой лабораторной "
            f"(5e-5 — в 7.5, 1e-4 — в эксперименте с батчем 4 в 7.6); здесь нужна "
            f"{literal(expected)}."
        )
    if _same(got, KERAS_DEFAULTS["learning_rate"]):
        return "0.001 — значение Keras по умолчанию: похоже, learning_rate не передан."
    return None


def _hyperparameter_hint(name: str, got: Any) -> str | None:
    default = KERAS_DEFAULTS.get(name)
    if name == "clipnorm" and got is None:
        return "без clipnorm градиент не обрезается; добавьте clipnorm=0.5."
    if default is not None and _same(got, default):
        return (
            f"{literal(default)} — значение Keras по умолчанию: похоже, {name} "
            f"не передан ({_EXPLANATIONS[name]})."
        )
    return None


def _accumulation_hint(got: Any, steps: int | None) -> str:
    if steps and not got:
        return (
            "накопление градиентов не включено: оптимизатор обновляет веса после каждого "
            "микробатча, и при batch_size=1 эффективный батч равен 1. Добавьте "
            f"gradient_accumulation_steps={steps} в конструктор AdamW: тогда веса обновляются "
            f"раз в {plural(steps, 'микробатч', 'микробатча', 'микробатчей')} по среднему их "
            f"градиентов, как при батче из {plural(steps, 'примера', 'примеров', 'примеров')}, "
            "а памяти под активации нужно как для одного."
        )
    if not steps:
        return (
            "в этом задании накопления градиентов нет: уберите gradient_accumulation_steps "
            "из конструктора AdamW."
        )
    return (
        f"эффективный батч = batch_size × gradient_accumulation_steps; при batch_size=1 "
        f"нужно gradient_accumulation_steps={steps}, чтобы получить батч из {steps}."
    )


def _plain(value: Any) -> Any:
    """Гиперпараметр как число JSON (переменные и тензоры — через float)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    try:
        return float(getattr(value, "value", value))
    except (TypeError, ValueError):
        return repr(value)[:60]


def optimizer_facts(
    optimizer: Any, steps: int | None = 8, learning_rate: float = 8e-4
) -> dict[str, Any]:
    """Наблюдение для проверки оптимизатора: класс и все гиперпараметры задания."""
    optimizer = _resolve_optimizer(optimizer)
    adamw = _keras_class("AdamW")
    facts: dict[str, Any] = {
        "class": type(optimizer).__name__,
        "adamw": adamw is not None and isinstance(optimizer, adamw),
    }
    if not facts["adamw"]:
        return facts
    facts["learning_rate"] = _learning_rate(optimizer)
    for name in (*LAB_HYPERPARAMETERS, "global_clipnorm", "clipvalue"):
        got = getattr(optimizer, name, None)
        facts[name] = _plain(got() if callable(got) else got)
    facts["gradient_accumulation_steps"] = _plain(
        getattr(optimizer, "gradient_accumulation_steps", None)
    )
    return facts


def judge_optimizer(
    facts: dict[str, Any], steps: int | None = 8, learning_rate: float = 8e-4
) -> CheckResult:
    """Вердикт по :func:`optimizer_facts`."""
    title = OPTIMIZER_TITLE
    if not facts["adamw"]:
        name = str(facts["class"])
        hint = (
            "Adam и AdamW похожи, но в задании нужен AdamW: в нём затухание весов "
            "(weight_decay) отделено от шага по градиенту."
            if name == "Adam"
            else "В задании нужен keras.optimizers.AdamW."
        )
        return failed(title, f"это оптимизатор {name}, а нужен AdamW.", f"Подсказка: {hint}")

    mismatches: list[_Mismatch] = []
    got_lr = facts["learning_rate"]
    if not _same(got_lr, learning_rate) or got_lr == "schedule":
        hint = _lr_hint(got_lr, learning_rate, steps)
        mismatches.append(_Mismatch("learning_rate", learning_rate, got_lr, hint))

    for name, expected in LAB_HYPERPARAMETERS.items():
        got = facts.get(name)
        if not _same(got, expected):
            mismatches.append(_Mismatch(name, expected, got, _hyperparameter_hint(name, got)))

    for name in ("global_clipnorm", "clipvalue"):
        got = facts.get(name)
        if got is not None:
            hint = (
                "global_clipnorm обрезает общую норму всех градиентов вместе (как "
                "clip_grad_norm_ в PyTorch), а в задании нужен clipnorm=0.5: он обрезает "
                "градиент каждой переменной отдельно."
                if name == "global_clipnorm"
                else "в задании градиент обрезается только по норме (clipnorm=0.5)."
            )
            mismatches.append(_Mismatch(name, None, got, hint))

    got_steps = facts.get("gradient_accumulation_steps")
    if not _same(got_steps, steps):
        mismatches.append(
            _Mismatch(
                "gradient_accumulation_steps",
                steps,
                got_steps,
                _accumulation_hint(got_steps, steps),
            )
        )

    if mismatches:
        if len(mismatches) == 1:
            headline = f"неверно задан параметр {mismatches[0].name}."
        else:
            names = ", ".join(mismatch.name for mismatch in mismatches)
            headline = f"неверно заданы параметры: {names}."
        details = [mismatch.describe() for mismatch in mismatches]
        details += [f"Подсказка: {m.hint}" for m in mismatches if m.hint]
        return failed(title, headline, *details)

    settings = [f"learning_rate={literal(learning_rate)}"]
    settings += [f"{name}={literal(value)}" for name, value in LAB_HYPERPARAMETERS.items()]
    if steps:
        settings.append(f"gradient_accumulation_steps={steps}")
    details = [f"AdamW({', '.join(settings)})"]
    if steps:
        details.append(
            f"При batch_size=1 эффективный батч: 1 × {steps} = {steps}. Веса обновляются "
            f"раз в {plural(steps, 'микробатч', 'микробатча', 'микробатчей')}, и "
            "optimizer.iterations считает именно обновления."
        )
    return passed(title, "все параметры оптимизатора совпадают с заданием.", *details)


OPTIMIZER_TITLE = "Оптимизатор AdamW"
OPTIMIZER = GradedCheck(
    "accumulation.check_optimizer", OPTIMIZER_TITLE, optimizer_facts, judge_optimizer
)


@graded_check(OPTIMIZER)
def check_optimizer(
    optimizer: Any, steps: int | None = 8, learning_rate: float = 8e-4
) -> CheckResult:
    """Сверяет оптимизатор с гиперпараметрами лабораторной.

    Нужен ``keras.optimizers.AdamW`` с ``weight_decay=0.01``, ``beta_1=0.9``,
    ``beta_2=0.95``, ``epsilon=1e-6``, ``clipnorm=0.5``, скоростью обучения
    ``learning_rate`` и ``gradient_accumulation_steps == steps``. ``steps=None`` —
    накопления быть не должно (лабораторная 7.5: ``steps=None, learning_rate=5e-5``;
    эксперимент с батчем 4 в лабораторной 7.6: ``steps=None, learning_rate=1e-4``). Каждое неверное
    значение называется с ожидаемым и полученным.
    """


# --------------------------------------------------------------------------- демонстрация

#: Столбцы таблицы :func:`accumulation_demo`.
COLUMN_WEIGHT = "Вес"
COLUMN_FULL = "Градиент: батч из 8"
COLUMN_ACCUMULATED = "Градиент: среднее 8 микробатчей по 1"
COLUMN_SINGLE = "Градиент: один пример"
COLUMN_DIFFERENCE = "|Разница|"
DEMO_COLUMNS = (COLUMN_WEIGHT, COLUMN_FULL, COLUMN_ACCUMULATED, COLUMN_SINGLE, COLUMN_DIFFERENCE)

DEMO_BATCH = 8
DEMO_FEATURES = 3
DEMO_UNITS = 2
DEMO_TOLERANCE = 1e-6


#: Когда накопление равно большому батчу и для языковой модели (проверено на Keras 3.15 и
#: keras-hub 0.32: тест ``test_keras_hub_loss_is_divided_by_positions_not_answer_tokens``).
TOKEN_WEIGHTS_NOTE = (
    "Здесь каждый пример даёт одно число потерь, и все примеры весят одинаково. У языковой "
    "модели потери складываются из потерь токенов ответа, и важно, на что делится их сумма. "
    "Keras Hub делит её на число позиций в батче (у нас по 400 на пример, включая "
    "заполнение — padding), поэтому в лабораторной накопление ×8 совпадает с батчем 8, "
    "даже когда ответы разной длины. Если же потери микробатча — среднее по его токенам "
    "ответа (так бывает в самописном цикле на PyTorch с cross_entropy(..., ignore_index=-100) "
    "или с loss модели Hugging Face), накопление равно большому батчу, только когда во всех "
    "микробатчах одинаковое число таких токенов; иначе токены коротких ответов получают "
    "больший вес."
)


def _import_keras() -> Any:
    if "keras" not in sys.modules:
        os.environ.setdefault("KERAS_BACKEND", "jax")
    import keras

    return keras


def _demo_layer_and_data(keras: Any) -> tuple[Any, Any, Any]:
    """Слой Dense 3 → 2 и батч из 8 примеров; всё с зерном 812.

    Глобальное зерно keras не трогаем: ``keras.utils.set_random_seed`` после загрузки
    Gemma ломает токенизатор (ресурс SentencePiece в TensorFlow), а демонстрацию
    запускают рядом с ней.
    """
    import numpy as np

    layer = keras.layers.Dense(
        DEMO_UNITS,
        kernel_initializer=keras.initializers.GlorotUniform(seed=SEED),
        bias_initializer=keras.initializers.RandomNormal(stddev=0.5, seed=SEED),
        name="demo_dense",
    )
    layer.build((None, DEMO_FEATURES))
    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(DEMO_BATCH, DEMO_FEATURES)).astype("float32")
    y = rng.normal(size=(DEMO_BATCH, DEMO_UNITS)).astype("float32")
    return layer, x, y


def _gradients(keras: Any, layer: Any, x: Any, y: Any) -> list[Any]:
    """Градиенты средней квадратичной ошибки по весам слоя (numpy-массивы)."""
    import numpy as np

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        def loss(weights: list[Any]) -> Any:
            prediction, _ = layer.stateless_call(weights, [], x)
            return keras.ops.mean(keras.ops.square(prediction - y))

        weights = [variable.value for variable in layer.trainable_variables]
        return [np.asarray(g) for g in jax.grad(loss)(weights)]
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = keras.ops.mean(keras.ops.square(layer(x) - y))
        grads = tape.gradient(loss, [v.value for v in layer.trainable_variables])
        return [np.asarray(g) for g in grads]
    raise RuntimeError(
        f"демонстрация написана для бэкендов jax и tensorflow, а выбран {backend}. "
        "Задайте KERAS_BACKEND=jax до импорта keras."
    )


def accumulation_demo() -> tuple[Any, bool]:
    """Сравнивает градиент батча из 8 примеров со средним градиентов 8 микробатчей по 1.

    Крошечный слой ``Dense`` (3 входа, 2 выхода), средняя квадратичная ошибка,
    зерно 812. Возвращает таблицу pandas (по строке на каждое число в весах:
    градиент по всему батчу, среднее накопленных градиентов, градиент одного
    примера и модуль разницы) и признак, что разница не больше 1e-6.
    """
    import numpy as np
    import pandas as pd

    keras = _import_keras()
    layer, x, y = _demo_layer_and_data(keras)
    full = _gradients(keras, layer, x, y)
    micro = [_gradients(keras, layer, x[i : i + 1], y[i : i + 1]) for i in range(DEMO_BATCH)]
    accumulated = [sum(parts) / DEMO_BATCH for parts in zip(*micro, strict=True)]
    rows = []
    for variable, g_full, g_acc, g_one in zip(
        layer.trainable_variables, full, accumulated, micro[0], strict=True
    ):
        name = variable.path.rsplit("/", 1)[-1]
        for index in np.ndindex(g_full.shape):
            label = f"{name}[{', '.join(str(i) for i in index)}]"
            rows.append(
                {
                    COLUMN_WEIGHT: label,
                    COLUMN_FULL: float(g_full[index]),
                    COLUMN_ACCUMULATED: float(g_acc[index]),
                    COLUMN_SINGLE: float(g_one[index]),
                    COLUMN_DIFFERENCE: float(abs(g_full[index] - g_acc[index])),
                }
            )
    table = pd.DataFrame(rows, columns=list(DEMO_COLUMNS))
    return table, bool(table[COLUMN_DIFFERENCE].max() <= DEMO_TOLERANCE)


def _formatted(table: Any) -> Any:
    shown = table.copy()
    for column in (COLUMN_FULL, COLUMN_ACCUMULATED, COLUMN_SINGLE):
        shown[column] = [format_plain(value, 4) for value in table[column]]
    shown[COLUMN_DIFFERENCE] = [
        format_scientific(value, 2) if value else "0" for value in table[COLUMN_DIFFERENCE]
    ]
    return shown.set_index(COLUMN_WEIGHT)


def show_accumulation_demo() -> None:
    """Показывает таблицу :func:`accumulation_demo` и вывод из неё по-русски."""
    from IPython.display import display

    table, equal = accumulation_demo()
    display(_formatted(table))
    largest = float(table[COLUMN_DIFFERENCE].max())
    shown = format_scientific(largest, 2) if largest else "0"
    single = float((table[COLUMN_SINGLE] - table[COLUMN_FULL]).abs().max())
    if equal:
        print(
            f"Наибольшая разница — {shown}: среднее градиентов восьми микробатчей по одному "
            "примеру совпадает с градиентом батча из восьми с точностью до округления float32. "
            "Значит, накопление ×8 при batch_size=1 делает тот же шаг, что и батч из 8, а "
            "памяти под активации нужно как для одного примера. Градиент одного примера "
            f"отличается от них заметно (до {format_significant(single, 2)}): "
            "он шумнее, поэтому и нужен батч."
        )
        print(TOKEN_WEIGHTS_NOTE)
    else:
        print(
            f"Наибольшая разница — {shown}, больше ожидаемого {format_scientific(DEMO_TOLERANCE)}. "
            "Так быть не должно: сообщите преподавателю."
        )

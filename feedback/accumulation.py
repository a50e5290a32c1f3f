"""Лабораторные 7.5 и 7.6: оптимизатор AdamW и накопление градиентов.

:func:`check_optimizer` сверяет оптимизатор учащегося с гиперпараметрами
лабораторной: здесь — только наблюдение (:func:`optimizer_facts`: класс и гиперпараметры
оптимизатора), а сами гиперпараметры задания, с которыми его сравнивают, и подсказки —
в :mod:`feedback.answers.accumulation` (в песочнице оценивания этой папки нет).

:func:`accumulation_demo` на крошечной модели делает настоящий ``model.fit`` тремя
способами: батч из 8, батч 1 с ``gradient_accumulation_steps=8`` и батч 1 без накопления, —
и сравнивает веса и ``optimizer.iterations``: накопление делает тот же шаг, что батч из 8
(потери усредняются по батчу). :data:`TOKEN_WEIGHTS_NOTE` объясняет, когда это верно для
языковой модели.

Та же :func:`check_optimizer` проверяет и задание 2 лабораторной 7.6 — оптимизатор для карты
на 32 ГБ с физическим батчем 4 (``task="32gb"``); задание называется по имени, а верные
значения знает только вердикт.

Опыт 7.6 с большим батчем: :func:`experiment_batch` не пускает в ``fit`` незаполненный или
батч 1, :func:`short_epoch` берёт для опыта одну короткую эпоху — два батча
примеров: на T4 опыт кончается стеной памяти на первом же шаге, а на большой карте, где батч
поместился, стоит лишь компиляции шага. :func:`step_memory_breakdowns` — данные графика
памяти 7.6: формула лабораторной 7.4 против замеров из :mod:`feedback.measured`.

:func:`require_accumulation` — первая строка ячейки обучения 7.6: пока в оптимизаторе
задания 1 нет накопления градиентов, ячейка не обучает, а говорит одной русской строкой,
что ждёт задания 1.

Как это устроено в Keras 3.15 (бэкенд JAX, проверено тестами курса): с
``gradient_accumulation_steps=k`` оптимизатор складывает градиенты k микробатчей
и делит на k (усредняет, а не суммирует); ``clipnorm`` применяется к этому
среднему; ``optimizer.iterations`` считает настоящие обновления весов (микрошаги,
делённые на k), а расписание скорости обучения видит микрошаги.

Модуль лёгкий: keras, jax и pandas импортируются только внутри функций.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any

from feedback.engine.calling import LearnerProblem
from feedback.engine.graded import GradedCheck, graded_check
from feedback.engine.result import CheckResult
from feedback.engine.waiting import WaitingForTask
from feedback.formatting import format_plain, format_scientific, format_significant, plural
from feedback.settings import default_keras_backend

SEED = 812

#: Что проверка оптимизатора читает у AdamW, кроме скорости обучения и накопления.
OBSERVED_HYPERPARAMETERS = (
    "weight_decay",
    "beta_1",
    "beta_2",
    "epsilon",
    "clipnorm",
    "global_clipnorm",
    "clipvalue",
)


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


def _plain(value: Any) -> Any:
    """Гиперпараметр как число JSON (переменные и тензоры — через float)."""
    if value is None or isinstance(value, bool | int | str):
        return value
    try:
        return float(getattr(value, "value", value))
    except (TypeError, ValueError):
        return repr(value)[:60]


#: Значение ``steps`` и ``learning_rate`` по умолчанию: «взять из задания ``task``» — верные
#: ответы знает только :mod:`feedback.answers.accumulation`.
FROM_TASK = "из задания"


def optimizer_facts(
    optimizer: Any, task: str = "t4", steps: Any = FROM_TASK, learning_rate: Any = FROM_TASK
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
    for name in OBSERVED_HYPERPARAMETERS:
        got = getattr(optimizer, name, None)
        facts[name] = _plain(got() if callable(got) else got)
    facts["gradient_accumulation_steps"] = _plain(
        getattr(optimizer, "gradient_accumulation_steps", None)
    )
    return facts


OPTIMIZER_TITLE = "Оптимизатор AdamW"
OPTIMIZER = GradedCheck(
    "accumulation.check_optimizer", OPTIMIZER_TITLE, optimizer_facts, "accumulation.judge_optimizer"
)


@graded_check(OPTIMIZER)
def check_optimizer(
    optimizer: Any, task: str = "t4", steps: Any = FROM_TASK, learning_rate: Any = FROM_TASK
) -> CheckResult:
    """Сверяет оптимизатор с гиперпараметрами задания ``task``.

    Нужен ``keras.optimizers.AdamW`` с ``weight_decay``, ``beta_1``, ``beta_2``,
    ``epsilon`` и ``clipnorm`` из задания, верной скоростью обучения и верным
    ``gradient_accumulation_steps``. Задание называется по имени: ``"lab_7_5"`` (накопления нет),
    ``"t4"`` — задание 1 лабораторной 7.6, ``"32gb"`` — задание 2 (карта 32 ГБ). Верные
    значения знает только вердикт: тетрадка, вызывая проверку, их не видит, а неверный ответ
    получает название ошибки и правило, но не верное значение. ``steps`` и ``learning_rate``
    можно задать явно (для тестов).
    """


def require_accumulation(optimizer: Any) -> None:
    """Останавливает обучение 7.6, пока в оптимизаторе задания 1 нет накопления градиентов.

    Обучение лабораторной — это обучение с накоплением: без него заготовка задания 1 (AdamW
    без ``gradient_accumulation_steps`` и скорости обучения) обучала бы модель не тому, о чём
    лабораторная, а Keras на заготовке «…» упал бы с английской ошибкой. Вместо этого ячейка
    останавливается одной русской строкой (:class:`~feedback.engine.waiting.WaitingForTask`):
    чего не хватает и что обучение ждёт задания 1. Оптимизатор с накоплением — верный или нет —
    ячейку не останавливает: насколько он верен, говорит проверка задания.
    """
    try:
        optimizer = _resolve_optimizer(optimizer)
    except LearnerProblem as problem:
        reason = problem.headline
    else:
        if getattr(optimizer, "gradient_accumulation_steps", None):
            return
        reason = (
            "в оптимизаторе ещё нет накопления градиентов — не передан gradient_accumulation_steps."
        )
    raise WaitingForTask(
        f"Обучение ждёт задания 1: {reason} Допишите оптимизатор в задании 1, а потом "
        "выполните эту ячейку."
    )


# --------------------------------------------------------------------------- опыт с большим батчем

#: Батч опыта 7.6. В оригинале курса брали 4, но он на T4 на грани (на H200 без предела —
#: 14,83 ГиБ, а в пуле T4 в 15 060 МиБ XLA уложил его впритык), а батч 8 (оценка по прямой через
#: батчи 1 и 2 — около 21,8 ГиБ) упрётся в стену на любой карте на 15–16 ГБ; он же —
#: эффективный батч задания.
EXPERIMENT_BATCH = 8
#: Сколько батчей в короткой эпохе опыта: стена приходит на первом шаге, второй показывает,
#: что шаг, если уж поместился, повторяется без новой компиляции.
EXPERIMENT_BATCHES = 2
#: Длина примера в лабораторных 7.5 и 7.6 (``model.preprocessor.sequence_length``).
SEQUENCE_LENGTH = 400
#: Размеры Gemma-4B для формулы активаций лабораторной 7.4: слои и длина вектора токена.
GEMMA_4B_LAYERS = 34
GEMMA_4B_HIDDEN = 2560
GEMMA_4B_PARAMS = 3_880_099_328


def experiment_batch(value: Any) -> int:
    """Батч опыта учащегося или :class:`WaitingForTask`, если его не вписали.

    Заготовка «…», не число или батч 1 (с ним стены не будет) останавливают ячейку одной
    русской строкой, а не английской ошибкой Keras и не «успешным» обучением.
    """
    if value is Ellipsis:
        raise WaitingForTask(
            "Опыт ждёт размера батча: впишите число в EXPERIMENT_BATCH_SIZE (ячейка выше) и "
            "выполните её."
        )
    if isinstance(value, bool) or not isinstance(value, int):
        raise WaitingForTask(
            f"В EXPERIMENT_BATCH_SIZE записано не целое число ({type(value).__name__}): "
            "впишите размер батча числом."
        )
    if value < 2:
        raise WaitingForTask(
            f"С батчем {value} стены не будет: он помещался и в лабораторной 7.5. Возьмите "
            "батч, который по графику выше не помещается в память вашей видеокарты."
        )
    return value


def short_epoch(data: dict[str, list[str]], batch_size: int) -> dict[str, list[str]]:
    """Первые ``EXPERIMENT_BATCHES × batch_size`` пар «вопрос — ответ» для опыта 7.6."""
    count = EXPERIMENT_BATCHES * batch_size
    return {key: list(values[:count]) for key, values in data.items()}


def formula_activation_gib(batch: int) -> float:
    """Активации по упрощённой формуле лабораторной 7.4: батч × длина × слои × вектор × 2 Б."""
    from feedback.formatting import bytes_to_gb

    return bytes_to_gb(batch * SEQUENCE_LENGTH * GEMMA_4B_LAYERS * GEMMA_4B_HIDDEN * 2)


#: Опыты записи измерений, которые показывает график 7.6: батч → имя опыта. Батч 4 — без
#: ограничения пула: в пуле размером с T4 его пик упёрся в сам пул.
MEASURED_BATCH_ROWS = {1: "b1_t4", 2: "b2_t4", 4: "b4_free"}


def step_memory_breakdowns(record: Any) -> dict[str, dict[str, float]]:
    """Столбцы графика памяти 7.6: формула 7.4, замер и оценка для батча 8 (ГиБ).

    ``record`` — :class:`feedback.measured.Record`. Батч 8 не мерили: его пик — прямая через
    батчи 1 и 2 (:meth:`~feedback.measured.Record.extrapolated_peak_gib`), так и подписано.
    """
    from feedback.formatting import bytes_to_gb

    formula_weights = bytes_to_gb(GEMMA_4B_PARAMS * 2)
    weights = record.row("w16_t4").weights_gib
    bars: dict[str, dict[str, float]] = {}
    for batch in (1, 4):
        bars[f"батч {batch}, формула 7.4"] = {
            "Веса (bfloat16)": formula_weights,
            "Активации по формуле 7.4": formula_activation_gib(batch),
        }
        peak = record.row(MEASURED_BATCH_ROWS[batch]).peak_gib
        bars[f"батч {batch}, замер"] = {
            "Веса (bfloat16)": weights,
            "Всё остальное в микрошаге": peak - weights,
        }
    bars[f"батч {EXPERIMENT_BATCH}, оценка по замерам"] = {
        "Веса (bfloat16)": weights,
        "Всё остальное в микрошаге": record.extrapolated_peak_gib(EXPERIMENT_BATCH) - weights,
    }
    return bars


# --------------------------------------------------------------------------- демонстрация

#: Столбцы таблицы :func:`accumulation_demo`: веса слоя до шага и после эпохи тремя способами.
COLUMN_WEIGHT = "Вес"
COLUMN_START = "До обучения"
COLUMN_FULL = "Батч из 8"
COLUMN_ACCUMULATED = "Батч 1, накопление ×8"
COLUMN_SINGLE = "Батч 1 без накопления"
COLUMN_DIFFERENCE = "|Разница| батча 8 и накопления"
DEMO_COLUMNS = (
    COLUMN_WEIGHT,
    COLUMN_START,
    COLUMN_FULL,
    COLUMN_ACCUMULATED,
    COLUMN_SINGLE,
    COLUMN_DIFFERENCE,
)

DEMO_BATCH = 8
DEMO_FEATURES = 3
DEMO_UNITS = 2
#: SGD, а не Adam: первый шаг Adam зависит только от знака градиента, и разные градиенты
#: дали бы почти одинаковые веса.
DEMO_LEARNING_RATE = 0.1
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
    default_keras_backend()
    import keras

    return keras


def _demo_data() -> tuple[Any, Any]:
    """Восемь примеров: 3 признака, 2 ответа; зерно 812."""
    import numpy as np

    rng = np.random.default_rng(SEED)
    x = rng.normal(size=(DEMO_BATCH, DEMO_FEATURES)).astype("float32")
    y = rng.normal(size=(DEMO_BATCH, DEMO_UNITS)).astype("float32")
    return x, y


def _demo_model(keras: Any) -> Any:
    """Слой Dense 3 → 2 с весами от зерна 812.

    Глобальное зерно keras не трогаем: ``keras.utils.set_random_seed`` после загрузки
    Gemma ломает токенизатор (ресурс SentencePiece в TensorFlow), а демонстрацию
    запускают рядом с ней.
    """
    return keras.Sequential(
        [
            keras.Input((DEMO_FEATURES,)),
            keras.layers.Dense(
                DEMO_UNITS,
                kernel_initializer=keras.initializers.GlorotUniform(seed=SEED),
                bias_initializer=keras.initializers.RandomNormal(stddev=0.5, seed=SEED),
                name="demo_dense",
            ),
        ]
    )


def _weights_of(model: Any) -> list[Any]:
    """Веса модели numpy-массивами (Variable.numpy() в Keras 3.15 с numpy 2 шумит)."""
    import numpy as np

    return [np.array(variable.value) for variable in model.weights]


def _one_epoch(
    keras: Any, start: list[Any], x: Any, y: Any, batch_size: int, accumulation: int | None
) -> tuple[list[Any], int]:
    """Одна эпоха ``model.fit`` по восьми примерам: веса после неё и ``optimizer.iterations``."""
    import numpy as np

    model = _demo_model(keras)
    for variable, value in zip(model.weights, start, strict=True):
        variable.assign(value)
    options = {"gradient_accumulation_steps": accumulation} if accumulation else {}
    optimizer = keras.optimizers.SGD(learning_rate=DEMO_LEARNING_RATE, **options)
    model.compile(optimizer=optimizer, loss="mse")
    model.fit(x, y, batch_size=batch_size, epochs=1, shuffle=False, verbose=0)
    iterations = int(np.asarray(getattr(optimizer.iterations, "value", optimizer.iterations)))
    return _weights_of(model), iterations


def accumulation_demo() -> tuple[Any, dict[str, int], bool]:
    """Одна эпоха по восьми примерам тремя способами — настоящим ``model.fit`` Keras.

    Крошечный слой ``Dense`` (3 входа, 2 выхода), средняя квадратичная ошибка, SGD,
    одинаковые начальные веса: батч из 8; батч 1 с ``gradient_accumulation_steps=8``;
    батч 1 без накопления. Возвращает таблицу pandas (по строке на каждое число в весах:
    до обучения и после каждого способа, модуль разницы первых двух), число шагов
    оптимизатора (``optimizer.iterations``) у каждого способа и признак, что батч из 8 и
    накопление дали одни и те же веса (разница не больше 1e-6).
    """
    import numpy as np
    import pandas as pd

    keras = _import_keras()
    x, y = _demo_data()
    start = _weights_of(_demo_model(keras))
    full, full_steps = _one_epoch(keras, start, x, y, DEMO_BATCH, None)
    accumulated, accumulated_steps = _one_epoch(keras, start, x, y, 1, DEMO_BATCH)
    single, single_steps = _one_epoch(keras, start, x, y, 1, None)
    rows = []
    for name, w0, w_full, w_acc, w_one in zip(
        ("kernel", "bias"), start, full, accumulated, single, strict=True
    ):
        for index in np.ndindex(w0.shape):
            rows.append(
                {
                    COLUMN_WEIGHT: f"{name}[{', '.join(str(i) for i in index)}]",
                    COLUMN_START: float(w0[index]),
                    COLUMN_FULL: float(w_full[index]),
                    COLUMN_ACCUMULATED: float(w_acc[index]),
                    COLUMN_SINGLE: float(w_one[index]),
                    COLUMN_DIFFERENCE: float(abs(w_full[index] - w_acc[index])),
                }
            )
    table = pd.DataFrame(rows, columns=list(DEMO_COLUMNS))
    iterations = {
        COLUMN_FULL: full_steps,
        COLUMN_ACCUMULATED: accumulated_steps,
        COLUMN_SINGLE: single_steps,
    }
    return table, iterations, bool(table[COLUMN_DIFFERENCE].max() <= DEMO_TOLERANCE)


def _formatted(table: Any) -> Any:
    shown = table.copy()
    for column in (COLUMN_START, COLUMN_FULL, COLUMN_ACCUMULATED, COLUMN_SINGLE):
        shown[column] = [format_plain(value, 4) for value in table[column]]
    shown[COLUMN_DIFFERENCE] = [
        format_scientific(value, 2) if value else "0" for value in table[COLUMN_DIFFERENCE]
    ]
    return shown.set_index(COLUMN_WEIGHT)


def show_accumulation_demo() -> None:
    """Показывает таблицу :func:`accumulation_demo` и вывод из неё по-русски."""
    from IPython.display import display

    table, iterations, equal = accumulation_demo()
    display(_formatted(table))
    steps = "; ".join(
        f"{name.lower()} — {plural(count, 'шаг', 'шага', 'шагов')}"
        for name, count in iterations.items()
    )
    print(f"optimizer.iterations после эпохи: {steps}.")
    largest = float(table[COLUMN_DIFFERENCE].max())
    shown = format_scientific(largest, 2) if largest else "0"
    single = float((table[COLUMN_SINGLE] - table[COLUMN_FULL]).abs().max())
    if equal:
        print(
            f"Наибольшая разница весов после батча из 8 и после накопления ×8 — {shown}: "
            "это один и тот же шаг с точностью до округления float32. Накопление ×8 при "
            "batch_size=1 усреднило градиенты восьми микробатчей и обновило веса один раз, "
            "как батч из 8, а памяти под активации ему нужно как для одного примера. Без "
            "накопления батч 1 сделал восемь шагов, каждый по шумному градиенту одного "
            f"примера, и пришёл к другим весам (отличие до {format_significant(single, 2)})."
        )
        print(TOKEN_WEIGHTS_NOTE)
    else:
        print(
            f"Наибольшая разница — {shown}, больше ожидаемого {format_scientific(DEMO_TOLERANCE)}. "
            "Так быть не должно: сообщите преподавателю."
        )

"""Эталон лабораторных 7.5 и 7.6: вердикт проверки оптимизатора AdamW.

Здесь то, что нужно только вердикту: гиперпараметры лабораторной, с которыми сверяется
оптимизатор учащегося, значения Keras по умолчанию (совпадение с ними — признак того, что
параметр не передан), скорости обучения других заданий и подсказки к ним, исходные числа
заданий 7.6 (T4 с физическим батчем 1 и карта 32 ГБ с физическим батчем 4) и то, что дают
типичные неверные выводы из них (число микробатчей от батча 4 из опыта или равное самому
эффективному батчу, скорость 2e-4, 4e-4, поделённая, с ошибкой в показателе степени, скорость
7.5 без пересчёта). Наблюдение
снимает :mod:`feedback.accumulation` — в песочнице оценивания этой папки нет, и код
учащегося не может ни спросить вердикт, ни подсмотреть, с чем его сравнивают.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from feedback.accumulation import FROM_TASK, OPTIMIZER_TITLE
from feedback.engine.result import UNKNOWN, CheckResult, failed, passed
from feedback.formatting import plural

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

#: Исходные числа задания 7.6 (таблица «Что нам известно» и константы тетрадки): эффективный
#: батч, который хотим, физический батч, который помещается в T4, базовая скорость обучения
#: и батч, для которого она подобрана. Верный вывод: 8 ÷ 1 = 8 микробатчей, 1e-4 × 8 ÷ 1 = 8e-4.
TARGET_BATCH_7_6 = 8
PHYSICAL_BATCH_7_6 = 1
BASE_LR_7_6 = 1e-4
BASE_BATCH_7_6 = 1
#: Батч опыта 7.6, который в T4 не поместился: его ошибочно берут за физический или базовый.
EXPERIMENT_BATCH_7_6 = 4

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


#: Подсказка и код её ошибки (список кодов — :mod:`feedback.answers.mistakes`).
Hint = tuple[str, str]


@dataclass(frozen=True)
class _Mismatch:
    name: str
    expected: Any
    got: Any
    hinted: Hint | None = None

    @property
    def hint(self) -> str | None:
        return self.hinted[0] if self.hinted else None

    @property
    def mistake(self) -> str | None:
        return self.hinted[1] if self.hinted else None

    def describe(self) -> str:
        got = "расписание" if self.got == "schedule" else literal(self.got)
        # Ожидаемое значение не называется: его учащийся выводит или берёт из задания сам.
        return f"{self.name}: получено {got} — не то, что требует задание."


@dataclass(frozen=True)
class Scenario:
    """Исходные числа вывода 7.6: эффективный и физический батч, базовая скорость и её батч."""

    target: int
    physical: int
    base_lr: float
    base_batch: int

    @property
    def steps(self) -> int:
        """Микробатчей на шаг оптимизатора: эффективный ÷ физический."""
        return self.target // self.physical

    @property
    def ratio(self) -> int:
        """Во сколько раз эффективный батч больше базового."""
        return self.target // self.base_batch

    @property
    def learning_rate(self) -> float:
        """Скорость по правилу линейного масштабирования."""
        return self.base_lr * self.target / self.base_batch


#: Задание 1 лабораторной 7.6: на T4 помещается физический батч 1.
T4_SCENARIO = Scenario(TARGET_BATCH_7_6, PHYSICAL_BATCH_7_6, BASE_LR_7_6, BASE_BATCH_7_6)
#: Задание 2: на карте 32 ГБ помещается физический батч 4 — микробатчей 2, скорость та же.
PHYSICAL_BATCH_32GB = 4
CARD_32GB = Scenario(TARGET_BATCH_7_6, PHYSICAL_BATCH_32GB, BASE_LR_7_6, BASE_BATCH_7_6)


def _scenario(steps: int | None, learning_rate: float) -> Scenario | None:
    """Задание 7.6, с ответом которого вызвана проверка (T4 или карта 32 ГБ), или ``None``."""
    for scenario in (T4_SCENARIO, CARD_32GB):
        if steps == scenario.steps and _same(learning_rate, scenario.learning_rate):
            return scenario
    return None


def _physical(steps: int) -> int:
    """Физический батч, при котором ``steps`` микробатчей дают эффективный батч задания (8)."""
    return TARGET_BATCH_7_6 // steps if TARGET_BATCH_7_6 % steps == 0 else 1


def _sqrt_hint(base: float, factor: int) -> Hint:
    """Скорость умножена на √k: для Adam разумно, но в задании правило линейное."""
    return (
        "похоже, базовая скорость умножена на корень из того, во сколько раз вырос эффективный "
        "батч. Для Adam так часто и начинают подбор, это разумно. Но в задании, как в "
        "оригинальном курсе, скорость масштабируют линейно: во сколько раз вырос эффективный "
        "батч, во столько же раз растёт и скорость.",
        "optimizer.lr_sqrt_k",
    )


def _not_scaled_hint(lead: str, base: float, factor: int) -> Hint:
    """Скорость оставлена без пересчёта, хотя эффективный батч больше."""
    return (
        f"{lead}. Скорость обучения не следует правилу линейного масштабирования: эффективный "
        "батч вырос по сравнению с тем, для которого подобрана базовая скорость, — во сколько "
        "раз он вырос и во сколько раз должна вырасти скорость? Правило приближённое: в своих "
        "задачах скорость всё равно стоит подбирать.",
        "optimizer.lr_not_scaled",
    )


def _exponent_slip(got: float, expected: float) -> Hint | None:
    """Ответ в 10 раз больше или меньше верного."""
    for factor in (10, 0.1):
        if _same(got, expected * factor):
            return (
                f"{literal(got)} — ровно в 10 раз {'больше' if factor > 1 else 'меньше'}, чем "
                "даёт правило: похоже, ошибка в показателе степени. Пересчитайте порядок числа.",
                "optimizer.lr_exponent_slip",
            )
    return None


def _scenario_lr_hint(got: float, sc: Scenario) -> Hint | None:
    """Подсказки к неверным выводам скорости обучения из чисел задания 7.6 (оба сценария).

    Подсказка называет ошибку и правило, но не верное значение: его учащийся выводит сам.
    """
    base = literal(sc.base_lr)
    target, batch_4 = sc.target, EXPERIMENT_BATCH_7_6
    on_t4 = sc.physical == PHYSICAL_BATCH_7_6
    if math.isclose(got, sc.base_lr * math.sqrt(sc.ratio), rel_tol=0.02):
        return _sqrt_hint(sc.base_lr, sc.ratio)
    if _same(got, sc.base_lr * sc.physical / sc.base_batch):
        lead = (
            "это скорость обучения без накопления"
            if on_t4
            else f"{literal(got)} = {base} × {sc.physical} — это скорость для физического батча "
            f"{sc.physical} без накопления"
        )
        return _not_scaled_hint(lead, got, sc.steps)
    if _same(got, sc.base_lr):
        return _not_scaled_hint(
            f"{base} — базовая скорость без пересчёта: она для батча {sc.base_batch}, а "
            "градиент шага оптимизатора усредняется по эффективному батчу",
            sc.base_lr,
            sc.ratio,
        )
    if _same(got, sc.base_lr * target / batch_4):
        if on_t4:
            text = (
                f"похоже, за основу взят батч {batch_4} — тот, что брали в оригинальном опыте. "
                f"Но в таблице задания скорость {base} — для батча {sc.base_batch} "
                "(BASE_BATCH_SIZE)."
            )
        else:
            text = (
                "похоже, базовая скорость умножена на число микробатчей. Но правило смотрит не "
                "на микробатчи, а на то, по скольким примерам усреднён градиент шага "
                f"оптимизатора, — на эффективный батч. Базовая скорость {base} — для батча "
                f"{sc.base_batch}."
            )
        return (
            f"{text} Во сколько раз эффективный батч больше базового — во столько раз растёт "
            "скорость.",
            "optimizer.lr_base_batch_from_experiment",
        )
    if _same(got, LR_LAB_7_5 * target):
        return (
            f"похоже, вы взяли скорость из лабораторной 7.5 ({literal(LR_LAB_7_5)}) и "
            "пересчитали её по правилу. Рассуждение верное: в 7.5 она тоже была при батче 1. Но "
            f"в этом задании основа другая — {base} (BASE_LEARNING_RATE), как в оригинале курса "
            "для этого опыта; ни ту, ни другую скорость не подбирали именно для батча 1. "
            "Пересчитайте от BASE_LEARNING_RATE.",
            "optimizer.lr_from_7_5_scaled",
        )
    if _same(got, LR_LAB_7_5):
        return (
            f"{literal(LR_LAB_7_5)} — скорость обучения из лабораторной 7.5. Там она была при "
            "батче 1: веса обновлялись после каждого примера. Здесь шаг оптимизатора усредняет "
            "эффективный батч, и скорость пересчитывают по правилу линейного масштабирования. К "
            f"тому же основа в этом задании другая: базовая скорость {base} для батча "
            f"{sc.base_batch} (BASE_LEARNING_RATE, из оригинала курса).",
            "optimizer.lr_from_7_5",
        )
    if _same(got, sc.base_lr / sc.ratio):
        return (
            "скорость поделена, а не умножена. Эффективный батч больше базового, и по правилу "
            "скорость во столько же раз растёт.",
            "optimizer.lr_divided",
        )
    return _exponent_slip(got, sc.learning_rate)


def _lr_hint(got: float | str, expected: float, steps: int | None) -> Hint | None:
    if got == "schedule":
        return (
            "в лабораторной скорость обучения постоянная: передайте число, а не расписание.",
            "optimizer.lr_schedule",
        )
    if steps:
        scenario = _scenario(steps, expected)
        if scenario is not None:
            hinted = _scenario_lr_hint(float(got), scenario)
            if hinted:
                return hinted
        elif math.isclose(float(got), expected / math.sqrt(steps), rel_tol=0.02):
            return _sqrt_hint(expected / steps, steps)
        elif _same(got, expected / steps):
            return _not_scaled_hint("это скорость обучения без накопления", expected / steps, steps)
    elif _same(got, expected * 8) or _same(got, LR_LAB_7_6_BATCH_4 * 8):
        return (
            f"{literal(got)} подобрана для накопления градиентов (задание лабораторной 7.6). "
            "Здесь накопления нет: возьмите скорость из таблицы задания.",
            "optimizer.lr_with_accumulation",
        )
    elif _same(got, LR_LAB_7_5) or _same(got, LR_LAB_7_6_BATCH_4):
        return (
            f"{literal(got)} — скорость обучения из другой лабораторной; здесь нужна скорость "
            "из таблицы этого задания.",
            "optimizer.lr_other_lab",
        )
    if _same(got, KERAS_DEFAULTS["learning_rate"]):
        return (
            "0.001 — значение Keras по умолчанию: похоже, learning_rate не передан.",
            "optimizer.lr_default",
        )
    return None


#: Коды ошибок «параметр не передан, осталось значение Keras по умолчанию».
DEFAULT_MISTAKES = {
    "weight_decay": "optimizer.default_weight_decay",
    "beta_1": "optimizer.default_beta_1",
    "beta_2": "optimizer.default_beta_2",
    "epsilon": "optimizer.default_epsilon",
}


def _hyperparameter_hint(name: str, got: Any) -> Hint | None:
    default = KERAS_DEFAULTS.get(name)
    if name == "clipnorm" and got is None:
        return (
            "без clipnorm градиент не обрезается; добавьте clipnorm со значением из таблицы "
            "задания.",
            "optimizer.no_clipnorm",
        )
    if default is not None and _same(got, default):
        return (
            f"{literal(default)} — значение Keras по умолчанию: похоже, {name} "
            f"не передан ({_EXPLANATIONS[name]}).",
            DEFAULT_MISTAKES[name],
        )
    return None


def _effective(batch: int, steps: Any) -> str:
    """«эффективный батч 1 × 2 = 2» для ответа учащегося (или пусто, если это не число)."""
    try:
        count = int(steps)
    except (TypeError, ValueError):
        return ""
    return f" При batch_size={batch} и {count} микробатчах эффективный батч — {batch * count}."


def _accumulation_hint(got: Any, steps: int | None) -> Hint:
    if steps and not got:
        batch = _physical(steps)
        return (
            "накопление градиентов не включено: оптимизатор обновляет веса после каждого "
            f"микробатча, и при batch_size={batch} эффективный батч равен {batch}. Добавьте в "
            "конструктор AdamW gradient_accumulation_steps — сколько микробатчей нужно "
            "накопить на один шаг оптимизатора, чтобы получить эффективный батч задания "
            "(эффективный = физический × число микробатчей).",
            "optimizer.no_accumulation",
        )
    if not steps:
        return (
            "в этом задании накопления градиентов нет: уберите gradient_accumulation_steps "
            "из конструктора AdamW.",
            "optimizer.unexpected_accumulation",
        )
    physical = _physical(steps)
    if _same(got, TARGET_BATCH_7_6 // EXPERIMENT_BATCH_7_6) and physical == PHYSICAL_BATCH_7_6:
        return (
            f"похоже, за физический батч взят {EXPERIMENT_BATCH_7_6} — батч оригинального "
            "опыта. Физический батч этого задания — PHYSICAL_BATCH_SIZE."
            + _effective(physical, got),
            "optimizer.steps_experiment_batch",
        )
    if _same(got, TARGET_BATCH_7_6) and physical > 1:
        return (
            f"{TARGET_BATCH_7_6} — это сам эффективный батч, который мы хотим, а не число "
            "микробатчей. Каждый микробатч уже содержит физический батч примеров."
            + _effective(physical, got),
            "optimizer.steps_equal_target",
        )
    return (
        "эффективный батч = физический батч × gradient_accumulation_steps; сравните с "
        "эффективным батчем, который мы хотим." + _effective(physical, got),
        "optimizer.wrong_accumulation_steps",
    )


#: Задания, которые проверяет :func:`judge_optimizer`, и их верные ответы: число микробатчей
#: (``None`` — накопления нет) и скорость обучения. Тетрадка называет задание по имени, а не
#: числами: иначе вызов проверки в тетрадке выдал бы ответ.
TASKS: dict[str, tuple[int | None, float]] = {
    "lab_7_5": (None, LR_LAB_7_5),
    "t4": (T4_SCENARIO.steps, T4_SCENARIO.learning_rate),
    "32gb": (CARD_32GB.steps, CARD_32GB.learning_rate),
}


def task_answer(task: str, steps: Any, learning_rate: Any) -> tuple[int | None, float]:
    """Верные ``steps`` и ``learning_rate``: заданные явно или по имени задания ``task``."""
    if task not in TASKS:
        raise ValueError(f"неизвестное задание {task!r}; есть: {', '.join(TASKS)}")
    task_steps, task_lr = TASKS[task]
    steps = task_steps if steps == FROM_TASK else steps
    learning_rate = task_lr if learning_rate == FROM_TASK else learning_rate
    return steps, float(learning_rate)


def judge_optimizer(
    facts: dict[str, Any],
    task: str = "t4",
    steps: Any = FROM_TASK,
    learning_rate: Any = FROM_TASK,
) -> CheckResult:
    """Вердикт по :func:`feedback.accumulation.optimizer_facts`.

    Для заданий 7.6 — T4 (``steps=8``) и карта 32 ГБ (``steps=2``), обе с
    ``learning_rate=8e-4`` — подсказки узнают неверные выводы из их чисел: 2 микробатча на T4
    (физическим взят батч 4 из опыта), 8 на карте 32 ГБ (сам эффективный батч), скорость
    2e-4 (от батча 4 или × число микробатчей), 4e-4 (5e-5 из 7.5 × 8 или скорость физического
    батча без накопления), 5e-5 без пересчёта, 1e-4 без масштабирования, 1e-4 × √8,
    1,25 · 10⁻⁵ (поделено) и 8e-5 (ошибка в показателе степени). При ``steps`` меньше 8
    проверка считает, что физический батч — 8 ÷ ``steps``.
    """
    steps, learning_rate = task_answer(task, steps, learning_rate)
    title = OPTIMIZER_TITLE
    if not facts["adamw"]:
        name = str(facts["class"])
        hint, mistake = (
            (
                "Adam и AdamW похожи, но в задании нужен AdamW: в нём затухание весов "
                "(weight_decay) отделено от шага по градиенту.",
                "optimizer.adam_not_adamw",
            )
            if name == "Adam"
            else ("В задании нужен keras.optimizers.AdamW.", "optimizer.not_adamw")
        )
        return failed(
            title, f"это оптимизатор {name}, а нужен AdamW.", f"Подсказка: {hint}", mistake=mistake
        )

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
                (
                    "global_clipnorm обрезает общую норму всех градиентов вместе (как "
                    "clip_grad_norm_ в PyTorch), а в задании нужен clipnorm=0.5: он обрезает "
                    "градиент каждой переменной отдельно.",
                    "optimizer.global_clipnorm",
                )
                if name == "global_clipnorm"
                else (
                    "в задании градиент обрезается только по норме (clipnorm=0.5).",
                    "optimizer.clipvalue",
                )
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
        # Код ошибки вердикта — первой подсказки в тексте.
        mistake = next((m.mistake for m in mismatches if m.mistake), UNKNOWN)
        return failed(title, headline, *details, mistake=mistake)

    settings = [f"learning_rate={literal(learning_rate)}"]
    settings += [f"{name}={literal(value)}" for name, value in LAB_HYPERPARAMETERS.items()]
    if steps:
        settings.append(f"gradient_accumulation_steps={steps}")
    details = [f"AdamW({', '.join(settings)})"]
    if steps:
        batch = _physical(steps)
        details.append(
            f"При batch_size={batch} эффективный батч: {batch} × {steps} = {batch * steps}. "
            "Веса обновляются "
            f"раз в {plural(steps, 'микробатч', 'микробатча', 'микробатчей')}, и "
            "optimizer.iterations считает именно обновления."
        )
    return passed(title, "все параметры оптимизатора совпадают с заданием.", *details)

"""Оптимизатор лабораторных 7.5/7.6 и накопление градиентов в Keras 3.

Здесь же закреплено, как Keras 3.15 (бэкенд JAX) понимает
``gradient_accumulation_steps``: градиенты усредняются, clipnorm режет среднее,
``optimizer.iterations`` считает обновления, расписание видит микрошаги.
Нужен только keras (без keras_hub): модели — один слой Dense.
"""

import re
import time

import numpy as np
import pytest

from feedback import CheckFailed, accumulation
from feedback.answers.accumulation import literal
from feedback.engine.waiting import WaitingForTask
from feedback.settings import default_keras_backend

default_keras_backend()  # Keras на JAX, как в тетрадках: до первого import keras

#: Один процесс xdist на модули с keras и крошечной Gemma в самом процессе тестов: импорт
#: TensorFlow стоит секунды процессора, а скомпилированные программы JAX остаются в процессе.
pytestmark = pytest.mark.xdist_group("keras_in_process")


KERAS_REASON = "нужен keras с бэкендом JAX (pip install -e '.[tiny]')"

LAB = {"weight_decay": 0.01, "beta_1": 0.9, "beta_2": 0.95, "epsilon": 1e-6, "clipnorm": 0.5}


# --------------------------------------------------------------------------- лёгкие тесты


@pytest.mark.parametrize(
    ("value", "expected"),
    [(8e-4, "8e-4"), (5e-5, "5e-5"), (1e-6, "1e-6"), (0.95, "0.95"), (None, "None"), (8, "8")],
)
def test_literal_looks_like_code(value, expected):
    assert literal(value) == expected


# --------------------------------------------------------------------------- оптимизатор


@pytest.fixture(scope="module")
def keras():
    pytest.importorskip("jax", reason=KERAS_REASON)
    return pytest.importorskip("keras", reason=KERAS_REASON)


def adamw(keras, **overrides):
    options = {"learning_rate": 8e-4, **LAB, "gradient_accumulation_steps": 8, **overrides}
    options = {name: value for name, value in options.items() if value is not ...}
    return keras.optimizers.AdamW(**options)


def test_lab_7_6_optimizer_passes(keras):
    result = accumulation.check_optimizer(adamw(keras), steps=8, learning_rate=8e-4)
    assert result.passed, result.message
    assert "gradient_accumulation_steps=8" in result.message
    assert "1 × 8 = 8" in result.message


def test_lab_7_5_optimizer_passes_without_accumulation(keras):
    optimizer = adamw(keras, learning_rate=5e-5, gradient_accumulation_steps=...)
    result = accumulation.check_optimizer(optimizer, steps=None, learning_rate=5e-5)
    assert result.passed, result.message


def test_compiled_model_is_accepted(keras):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=adamw(keras), loss="mse")
    assert accumulation.check_optimizer(model).passed


def test_no_accumulation_is_explained(keras):
    result = accumulation.check_optimizer(adamw(keras, gradient_accumulation_steps=...))
    assert not result.passed
    assert "gradient_accumulation_steps: получено None" in result.message
    assert "накопление градиентов не включено" in result.message


def test_accumulation_in_lab_7_5_is_named(keras):
    result = accumulation.check_optimizer(
        adamw(keras, learning_rate=5e-5), steps=None, learning_rate=5e-5
    )
    assert not result.passed
    assert "получено 8" in result.message
    assert "накопления градиентов нет" in result.message


@pytest.mark.parametrize("rate", [1e-4, 5e-5])
def test_unscaled_learning_rate_gets_the_scaling_rule(keras, rate):
    result = accumulation.check_optimizer(adamw(keras, learning_rate=rate))
    assert not result.passed
    assert result.headline == "неверно задан параметр learning_rate."
    shown = literal(rate)
    assert f"learning_rate: получено {shown}" in result.message
    assert "линейного масштабирования" in result.message and "8e-4" not in result.message


@pytest.mark.parametrize("rate", [2.83e-4, 2.8e-4, 1e-4 * 8**0.5])
def test_square_root_scaling_is_recognised_but_the_lab_rule_is_linear(keras, rate):
    result = accumulation.check_optimizer(adamw(keras, learning_rate=rate))
    assert not result.passed
    assert "корень" in result.message and "Для Adam так часто и начинают" in result.message
    assert not re.search(r"(?<![\d.])8e-4", result.message)


@pytest.mark.parametrize(
    ("steps", "phrases"),
    [
        (2, ["при batch_size=4", "эффективный батч равен 4"]),
        (5, ["при batch_size=1", "эффективный батч равен 1"]),
        (21, ["при batch_size=1", "эффективный батч равен 1"]),
    ],
)
def test_accumulation_hint_agrees_with_the_number_of_steps(keras, steps, phrases):
    result = accumulation.check_optimizer(
        adamw(keras, gradient_accumulation_steps=...), steps=steps, learning_rate=8e-4
    )
    for phrase in phrases:
        assert phrase in result.message
    assert f"gradient_accumulation_steps={steps}" not in result.message  # ответ не выдаётся
    # «Шаг» в лабораторной — обновление весов; накопление считают в микробатчах.
    assert f"раз в {steps} шаг" not in result.message


def test_default_hints_use_one_notation_and_no_nested_brackets(keras):
    optimizer = keras.optimizers.AdamW(gradient_accumulation_steps=8)
    message = accumulation.check_optimizer(optimizer, steps=8, learning_rate=8e-4).message
    assert "получено 0.001" in message and "0.001 — значение Keras по умолчанию" in message
    assert "1e-3" not in message
    for line in message.splitlines():
        assert not re.search(r"\([^()]*\(", line), line


@pytest.mark.parametrize(
    ("steps", "phrase"), [(2, "раз в 2 микробатча"), (5, "раз в 5 микробатчей")]
)
def test_passed_verdict_agrees_with_the_number_of_steps(keras, steps, phrase):
    optimizer = adamw(keras, gradient_accumulation_steps=steps)
    result = accumulation.check_optimizer(optimizer, steps=steps, learning_rate=8e-4)
    assert result.passed and phrase in result.message


def test_scaled_learning_rate_without_accumulation(keras):
    optimizer = adamw(keras, gradient_accumulation_steps=...)
    result = accumulation.check_optimizer(optimizer, steps=None, learning_rate=1e-4)
    assert not result.passed
    assert "получено 8e-4" in result.message and "накопления градиентов" in result.message


def test_learning_rate_compare_is_float_tolerant(keras):
    optimizer = adamw(keras)
    assert float(np.asarray(optimizer.learning_rate.value)) != 8e-4  # float32 в переменной
    assert accumulation.check_optimizer(optimizer).passed


# Задание 7.6: эффективный батч 8, физический 1 (батч 4 опыта не поместился), базовая
# скорость 1e-4 для батча 1. Верно: 8 ÷ 1 = 8 микробатчей и 1e-4 × 8 ÷ 1 = 8e-4.
WRONG_7_6_DERIVATIONS = [
    # 1e-4 сочли подобранной для батча 4 из опыта (или 1e-4 × 2 микробатча при батче 4).
    ({"learning_rate": 2e-4}, "optimizer.lr_base_batch_from_experiment", "для батча 1"),
    # Скорость 7.5, умноженная на 8: 5e-5 × 8.
    ({"learning_rate": 4e-4}, "optimizer.lr_from_7_5_scaled", "из лабораторной 7.5"),
    # Скорость 7.5 как есть.
    ({"learning_rate": 5e-5}, "optimizer.lr_from_7_5", "была при батче 1"),
    # 1e-4 поделена на 8, а не умножена.
    ({"learning_rate": 1.25e-5}, "optimizer.lr_divided", "поделена, а не умножена"),
    # Ошибка в показателе степени: 8e-5 и 8e-3 вместо 8e-4.
    ({"learning_rate": 8e-5}, "optimizer.lr_exponent_slip", "в 10 раз меньше"),
    ({"learning_rate": 8e-3}, "optimizer.lr_exponent_slip", "в 10 раз больше"),
    # Без масштабирования и с √k — подсказки были и раньше.
    ({"learning_rate": 1e-4}, "optimizer.lr_not_scaled", "во сколько"),
    ({"learning_rate": 1e-4 * 8**0.5}, "optimizer.lr_sqrt_k", "корень"),
    # Физическим взят батч 4 из опыта: 8 ÷ 4 = 2.
    ({"gradient_accumulation_steps": 2}, "optimizer.steps_experiment_batch", "оригинального опыта"),
]


@pytest.mark.parametrize(("changes", "mistake", "words"), WRONG_7_6_DERIVATIONS)
def test_each_wrong_7_6_derivation_gets_its_hint(keras, changes, mistake, words):
    result = accumulation.check_optimizer(adamw(keras, **changes))
    assert not result.passed
    assert result.mistake == mistake, result.message
    assert "Подсказка: " in result.message and words in result.message


def test_the_7_6_derivation_itself_passes(keras):
    steps, learning_rate = 8 // 1, 1e-4 * 8 / 1
    optimizer = adamw(keras, gradient_accumulation_steps=steps, learning_rate=learning_rate)
    result = accumulation.check_optimizer(optimizer)
    assert result.passed and result.mistake is None, result.message


def test_learning_rate_of_7_5_is_said_to_be_for_batch_1_too(keras):
    """В 7.5 5e-5 тоже была при батче 1: подсказка не зовёт его «другим батчем»."""
    message = accumulation.check_optimizer(adamw(keras, learning_rate=5e-5)).message
    assert "5e-5 — скорость обучения из лабораторной 7.5" in message
    assert "была при батче 1" in message and "для другого батча" not in message
    assert "эффективный батч" in message and "8e-4" not in message
    # Старая формулировка звала основой опыт с батчем 4 — а таблица задания говорит «батч 1».
    assert "из эксперимента с батчем 4" not in message


def test_scaling_the_rate_of_7_5_is_acknowledged_as_right_reasoning(keras):
    message = accumulation.check_optimizer(adamw(keras, learning_rate=4e-4)).message
    assert "Рассуждение верное" in message and "оригинале курса" in message
    assert "8e-4" not in message


def test_steps_equal_to_the_target_batch_are_named(keras):
    """Физический батч 4 (карта побольше): микробатчей 8 ÷ 4 = 2, а не сам эффективный батч 8."""
    result = accumulation.check_optimizer(adamw(keras), steps=2, learning_rate=8e-4)
    assert not result.passed
    assert result.mistake == "optimizer.steps_equal_target", result.message
    assert "8 — это сам эффективный батч" in result.message and "= 2" not in result.message
    assert "эффективный батч — 32" in result.message


def test_lab_7_6_hints_stay_out_of_other_settings(keras):
    """Подсказки из чисел 7.6 — только для 7.6: в 7.5 те же скорости объясняются иначе."""
    result = accumulation.check_optimizer(
        adamw(keras, learning_rate=1e-4, gradient_accumulation_steps=...),
        steps=None,
        learning_rate=5e-5,
    )
    assert result.mistake == "optimizer.lr_other_lab", result.message
    other = accumulation.check_optimizer(
        adamw(keras, learning_rate=2e-4, gradient_accumulation_steps=2),
        steps=2,
        learning_rate=8e-4,
    )
    assert "из опыта" not in other.message, other.message


# --------------------------------------------------------------------------- обучение 7.6


@pytest.mark.parametrize(
    ("untouched", "reason"),
    [
        (
            lambda keras: adamw(keras, gradient_accumulation_steps=..., learning_rate=...),
            "не передан",
        ),
        (lambda keras: ..., "ещё не создан"),
        (lambda keras: "adamw", "строка"),
    ],
)
def test_training_waits_for_task_1_in_one_russian_line(keras, untouched, reason, monkeypatch):
    """Заготовка задания 1 (AdamW без накопления) или «…»: обучение не начинается."""
    for strict in ("0", "1"):  # и при оценивании ячейка падает с той же строкой
        monkeypatch.setenv("FEEDBACK_STRICT", strict)
        with pytest.raises(WaitingForTask) as stop:
            accumulation.require_accumulation(untouched(keras))
        [line] = stop.value._render_traceback_()
        assert line.startswith("Обучение ждёт задания 1: ") and reason in line, line
        assert "\n" not in line


def test_any_accumulating_optimizer_lets_training_start(keras):
    """Неверное, но сделанное задание 1 — не повод останавливать: об ошибке скажет проверка."""
    for steps, learning_rate in ((8, 8e-4), (4, 1e-3)):
        optimizer = adamw(keras, gradient_accumulation_steps=steps, learning_rate=learning_rate)
        assert accumulation.require_accumulation(optimizer) is None
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer=adamw(keras), loss="mse")
    assert accumulation.require_accumulation(model) is None


# --------------------------------------------------------------------------- карта 32 ГБ


def plan(keras, steps, learning_rate):
    """Задание 2 лабораторной 7.6: оптимизатор для карты 32 ГБ (физический батч 4)."""
    optimizer = adamw(keras, gradient_accumulation_steps=steps, learning_rate=learning_rate)
    return accumulation.check_optimizer(optimizer, task="32gb")


def test_the_32gb_plan_passes(keras):
    steps, learning_rate = 8 // 4, 1e-4 * 8 / 1
    result = plan(keras, steps, learning_rate)
    assert result.passed and result.mistake is None, result.message
    assert "При batch_size=4 эффективный батч: 4 × 2 = 8" in result.message


# На T4 (физический батч 1) «микробатчей = эффективный батч» и «скорость × микробатчи» дают
# верный ответ; на карте 32 ГБ (физический батч 4) — нет.
WRONG_32GB_DERIVATIONS = [
    ((8, 8e-4), "optimizer.steps_equal_target", "сам эффективный батч"),
    ((4, 8e-4), "optimizer.wrong_accumulation_steps", "При batch_size=4"),
    ((2, 2e-4), "optimizer.lr_base_batch_from_experiment", "на число микробатчей"),
    ((2, 4e-4), "optimizer.lr_not_scaled", "для физического батча 4 без накопления"),
    ((2, 1e-4), "optimizer.lr_not_scaled", "базовая скорость без пересчёта"),
    ((2, 1e-4 * 8**0.5), "optimizer.lr_sqrt_k", "корень"),
    ((2, 5e-5), "optimizer.lr_from_7_5", "была при батче 1"),
    ((2, 1.25e-5), "optimizer.lr_divided", "поделена"),
    ((2, 8e-5), "optimizer.lr_exponent_slip", "показателе степени"),
]


@pytest.mark.parametrize(("answers", "mistake", "words"), WRONG_32GB_DERIVATIONS)
def test_each_wrong_32gb_derivation_gets_its_hint(keras, answers, mistake, words):
    result = plan(keras, *answers)
    assert not result.passed
    assert result.mistake == mistake, result.message
    assert "Подсказка: " in result.message and words in result.message


def test_32gb_hints_name_the_rule_not_the_answer(keras):
    message = plan(keras, 2, 1e-4).message
    assert "8e-4" not in message and "во сколько" in message
    message = plan(keras, 2, 4e-4).message
    assert "8e-4" not in message and "правилу линейного масштабирования" in message
    both = plan(keras, 8, 2e-4)
    assert "gradient_accumulation_steps" in both.headline and "learning_rate" in both.headline
    assert both.message.count("Подсказка:") == 2


def test_adam_is_not_adamw(keras):
    result = accumulation.check_optimizer(keras.optimizers.Adam(learning_rate=8e-4))
    assert not result.passed
    assert "Adam, а нужен AdamW" in result.headline


def test_sgd_is_not_adamw(keras):
    result = accumulation.check_optimizer(keras.optimizers.SGD())
    assert not result.passed and "SGD" in result.headline


def test_wrong_beta_2_is_named(keras):
    result = accumulation.check_optimizer(adamw(keras, beta_2=0.999))
    assert not result.passed
    assert result.headline == "неверно задан параметр beta_2."
    assert "beta_2: получено 0.999" in result.message
    assert "по умолчанию" in result.message


def test_several_wrong_values_are_all_listed(keras):
    optimizer = keras.optimizers.AdamW(learning_rate=8e-4, gradient_accumulation_steps=8)
    result = accumulation.check_optimizer(optimizer)
    assert not result.passed
    for name in ("weight_decay", "beta_2", "epsilon", "clipnorm"):
        assert name in result.headline
    assert "epsilon: получено 1e-7" in result.message
    assert "clipnorm: получено None" in result.message


def test_global_clipnorm_instead_of_clipnorm(keras):
    result = accumulation.check_optimizer(adamw(keras, clipnorm=..., global_clipnorm=0.5))
    assert not result.passed
    assert "global_clipnorm" in result.message


def test_schedule_is_named(keras):
    schedule = keras.optimizers.schedules.ExponentialDecay(8e-4, 100, 0.9)
    result = accumulation.check_optimizer(adamw(keras, learning_rate=schedule))
    assert not result.passed and "расписание" in result.message


@pytest.mark.parametrize(
    ("value", "words"),
    [
        (None, "ещё не создан"),
        (..., "ещё не создан"),
        ("adamw", "строка 'adamw'"),
        (object(), "объект типа object"),
        (dict, "класс dict"),
        (print, "функция print"),
    ],
)
def test_bad_inputs_get_a_russian_verdict(keras, value, words):
    result = accumulation.check_optimizer(value)
    assert not result.passed
    assert words in result.message


def test_class_instead_of_instance(keras):
    result = accumulation.check_optimizer(keras.optimizers.AdamW)
    assert not result.passed and "класс AdamW" in result.headline


def test_uncompiled_model(keras):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    result = accumulation.check_optimizer(model)
    assert not result.passed and "не скомпилирована" in result.headline


def test_strict_mode_raises(keras, monkeypatch):
    monkeypatch.setenv("FEEDBACK_STRICT", "1")
    with pytest.raises(CheckFailed, match="beta_2"):
        accumulation.check_optimizer(adamw(keras, beta_2=0.9))


# --------------------------------------------------------------------------- семантика Keras


def dense_model(keras):
    """Линейная модель без смещения с нулевыми весами: обновления легко посчитать."""
    return keras.Sequential(
        [keras.Input((3,)), keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")]
    )


@pytest.fixture(scope="module")
def xy():
    rng = np.random.default_rng(812)
    return rng.normal(size=(16, 3)).astype("float32"), rng.normal(size=(16, 1)).astype("float32")


def fit(keras, optimizer, x, y):
    model = dense_model(keras)
    model.compile(optimizer=optimizer, loss="mse")
    model.fit(x, y, batch_size=1, epochs=1, shuffle=False, verbose=0)
    return np.asarray(model.layers[0].kernel.value).ravel()


def as_int(value):
    """Число из переменной Keras (Variable.numpy() в Keras 3.15 шумит DeprecationWarning)."""
    return int(np.asarray(getattr(value, "value", value)))


def mse_gradient_at_zero(x, y):
    """Градиент средней квадратичной ошибки по весам в нуле: −2·mean(x·y)."""
    return -2 * np.mean(x * y, axis=0)


def test_iterations_count_real_updates(keras, xy):
    optimizer = adamw(keras)
    fit(keras, optimizer, *xy)
    assert as_int(optimizer.iterations) == 2  # 16 микробатчей по 1 / 8


def test_accumulated_gradients_are_averaged_not_summed(keras, xy):
    x, y = xy[0][:2], xy[1][:2]
    optimizer = keras.optimizers.SGD(learning_rate=1.0, gradient_accumulation_steps=2)
    weights = fit(keras, optimizer, x, y)
    assert as_int(optimizer.iterations) == 1
    np.testing.assert_allclose(weights, -mse_gradient_at_zero(x, y), rtol=1e-5)


def test_clipnorm_applies_to_the_averaged_gradient(keras, xy):
    x, y = xy[0][:2], xy[1][:2]
    optimizer = keras.optimizers.SGD(
        learning_rate=1.0, gradient_accumulation_steps=2, clipnorm=1e-3
    )
    weights = fit(keras, optimizer, x, y)
    gradient = mse_gradient_at_zero(x, y)
    np.testing.assert_allclose(weights, -1e-3 * gradient / np.linalg.norm(gradient), rtol=1e-4)


def test_clipnorm_clips_each_variable_separately(keras):
    """Так написано в таблице лабораторной 7.5: градиенты 3 и 4 при clipnorm=1 — оба 1.

    global_clipnorm, наоборот, режет общую норму: √(3² + 4²) = 5 → обе доли делятся на 5.
    """

    def step(**clipping):
        variables = [keras.Variable([0.0]), keras.Variable([0.0])]
        optimizer = keras.optimizers.SGD(learning_rate=1.0, **clipping)
        optimizer.apply_gradients(zip([np.array([3.0]), np.array([4.0])], variables, strict=True))
        return [-float(np.asarray(v.value)[0]) for v in variables]  # шаг = −обрезанный градиент

    np.testing.assert_allclose(step(clipnorm=1.0), [1.0, 1.0], rtol=1e-6)
    np.testing.assert_allclose(step(global_clipnorm=1.0), [0.6, 0.8], rtol=1e-6)


def test_learning_rate_schedule_sees_micro_steps(keras, xy):
    class FirstTwoSteps(keras.optimizers.schedules.LearningRateSchedule):
        """Скорость 1 на шагах 0 и 1, дальше 0."""

        def __call__(self, step):
            return keras.ops.where(step < 2, 1.0, 0.0)

    x, y = xy[0][:8], xy[1][:8]
    optimizer = keras.optimizers.SGD(learning_rate=FirstTwoSteps(), gradient_accumulation_steps=2)
    weights = fit(keras, optimizer, x, y)
    assert as_int(optimizer.iterations) == 4
    # Если бы расписание видело номера обновлений (0, 1, 2, 3), сработали бы два
    # обновления; оно видит микрошаги (обновления на 1, 3, 5, 7) — сработало одно.
    np.testing.assert_allclose(weights, -mse_gradient_at_zero(x[:2], y[:2]), rtol=1e-5)


# --------------------------------------------------------------------------- демонстрация


def test_accumulation_demo_makes_the_same_update_as_the_full_batch(keras):
    start = time.perf_counter()
    table, iterations, equal = accumulation.accumulation_demo()
    # Три крошечных fit, а не обучение: секунды. Запас — на параллельный прогон тестов.
    assert time.perf_counter() - start < 30
    assert equal is True
    assert list(table.columns) == list(accumulation.DEMO_COLUMNS)
    assert len(table) == 3 * 2 + 2  # ядро 3×2 и смещение 2
    np.testing.assert_allclose(
        table[accumulation.COLUMN_FULL], table[accumulation.COLUMN_ACCUMULATED], atol=1e-6
    )
    # Веса и правда сдвинулись, а восемь шагов по одному примеру привели в другое место.
    moved = (table[accumulation.COLUMN_FULL] - table[accumulation.COLUMN_START]).abs()
    assert moved.min() > 1e-4
    single = (table[accumulation.COLUMN_SINGLE] - table[accumulation.COLUMN_FULL]).abs()
    assert single.max() > 0.05
    assert iterations == {
        accumulation.COLUMN_FULL: 1,
        accumulation.COLUMN_ACCUMULATED: 1,
        accumulation.COLUMN_SINGLE: 8,
    }


def test_accumulation_demo_full_batch_step_is_the_mean_gradient_step(keras):
    """Шаг батча из 8 в демонстрации — это SGD по среднему градиенту (считаем вручную)."""
    table, _, _ = accumulation.accumulation_demo()
    x, y = accumulation._demo_data()
    start = table[accumulation.COLUMN_START].to_numpy()
    kernel, bias = start[:6].reshape(3, 2), start[6:]
    error = x @ kernel + bias - y  # (8, 2)
    # mse: среднее по выходам и по батчу → градиент 2·error / (2·8).
    grad_kernel = x.T @ error * 2 / error.size
    grad_bias = error.sum(axis=0) * 2 / error.size
    expected = start - accumulation.DEMO_LEARNING_RATE * np.concatenate(
        [grad_kernel.ravel(), grad_bias]
    )
    np.testing.assert_allclose(table[accumulation.COLUMN_FULL], expected, rtol=1e-4, atol=1e-6)


def test_accumulation_demo_is_deterministic(keras):
    first, _, _ = accumulation.accumulation_demo()
    second, _, _ = accumulation.accumulation_demo()
    assert first.equals(second)


def test_show_accumulation_demo_prints_a_russian_conclusion(keras, capsys):
    assert accumulation.show_accumulation_demo() is None
    out = capsys.readouterr().out
    assert "Наибольшая разница весов" in out and "один и тот же шаг" in out
    assert "optimizer.iterations после эпохи" in out and "без накопления — 8 шагов" in out
    assert "kernel[0, 0]" in out


def test_demo_conclusion_says_when_it_holds_for_a_language_model(keras, capsys):
    accumulation.show_accumulation_demo()
    out = capsys.readouterr().out
    assert "делит её на число позиций" in out
    assert "одинаковое число таких токенов" in out


# --------------------------------------------------------------------------- keras-hub


def test_keras_hub_loss_is_divided_by_positions_not_answer_tokens(keras):
    """Факт для текста лабораторной 7.6 и :data:`accumulation.TOKEN_WEIGHTS_NOTE`.

    Два примера с ответами очень разной длины: потеря и градиент батча из двух равны
    среднему потерь и градиентов по одному примеру. Будь потеря средним по токенам
    ответа, короткий ответ весил бы в батче меньше, чем в своём микробатче.
    """
    pytest.importorskip("keras_hub", reason="нужен keras_hub (pip install -e '.[tiny]')")
    import jax
    import keras_hub

    from feedback.gpu.tiny_gemma import tiny_preset_path

    model = keras_hub.models.Gemma3CausalLM.from_preset(str(tiny_preset_path()), dtype="float32")
    model.preprocessor.sequence_length = 64
    model.compile(optimizer="adam")
    x, y, weights = model.preprocessor(
        {
            "prompts": ["<start_of_turn>user\nWhat is A?<end_of_turn>\n"] * 2,
            "responses": [
                "<start_of_turn>model\nshort<end_of_turn>",
                "<start_of_turn>model\n" + "a much longer answer " * 8 + "<end_of_turn>",
            ],
        }
    )
    answer_tokens = np.asarray(weights).sum(axis=1)
    assert answer_tokens[1] > 3 * answer_tokens[0]
    trainable = [v.value for v in model.trainable_variables]
    frozen = [v.value for v in model.non_trainable_variables]

    def loss(trainable, x, y, weights):
        # Та же функция, что дифференцирует model.fit; dropout у Gemma нет, так что
        # training=False считает ту же потерю (а оптимизатору не нужны его переменные).
        value, _ = model.compute_loss_and_updates(trainable, frozen, [], x, y, weights)
        return value

    def one(tree, i):
        return jax.tree_util.tree_map(lambda array: array[i : i + 1], tree)

    # Одна компиляция на форму батча: без jit JAX компилирует каждую операцию отдельно (в CI —
    # около минуты).
    loss_and_grad = jax.jit(jax.value_and_grad(loss))
    batch = loss_and_grad(trainable, x, y, weights)
    micro = [loss_and_grad(trainable, *one((x, y, weights), i)) for i in range(2)]
    np.testing.assert_allclose(batch[0], (micro[0][0] + micro[1][0]) / 2, rtol=1e-5)
    for full, first, second in zip(batch[1], micro[0][1], micro[1][1], strict=True):
        np.testing.assert_allclose(full, (first + second) / 2, rtol=1e-4, atol=1e-7)

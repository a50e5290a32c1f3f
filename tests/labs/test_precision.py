"""Проверки лабораторной 7.5: веса в bfloat16 и LoRA на крошечной Gemma 3.

Модели загружаются один раз на модуль. Зерно задаём ДО ``from_preset``: вызов
``keras.utils.set_random_seed`` после создания токенизатора ломает ресурс
SentencePiece в TensorFlow (см. tests/gpu/test_tiny_gemma.py).
"""

import math

import pytest

from feedback import CheckFailed, measured, precision
from feedback.gpu.tiny_gemma import tiny_preset_path
from feedback.settings import LAB_TRAINING_XLA, default_keras_backend

from bad_functions import BAD_FUNCTIONS

default_keras_backend()  # Keras на JAX, как в тетрадках: до первого import keras

#: Один процесс xdist на модули с keras и крошечной Gemma в самом процессе тестов: импорт
#: TensorFlow стоит секунды процессора, а скомпилированные программы JAX остаются в процессе.
pytestmark = pytest.mark.xdist_group("keras_in_process")

HEAVY_REASON = "нужны keras_hub и sentencepiece (pip install -e '.[gpu]')"


# --------------------------------------------------------------------------- лёгкие тесты


class StubModel:
    """Заглушка из тетрадки: обращение к модели падает."""

    @property
    def backbone(self):
        raise NotImplementedError("Добавьте сюда свой код")


class Crashing:
    @property
    def backbone(self):
        raise RuntimeError("что-то сломалось")


@pytest.mark.parametrize("check", [precision.check_bfloat16, precision.check_lora])
@pytest.mark.parametrize(
    ("value", "words"),
    [
        (None, "ещё не загружена"),
        (..., "ещё не загружена"),
        ("model", "строка 'model'"),
        (StubModel(), "заглушка"),
        (Crashing(), "RuntimeError"),
        (42, "объект типа int"),
        (precision, "объект типа module"),
        (dict, "класс dict"),
        ("bfloat16", "проверка сама найдёт"),
        (print, "функция print"),
    ],
)
def test_bad_inputs_get_a_russian_verdict(check, value, words):
    result = check(value)
    assert not result.passed
    assert words in result.message
    assert "Traceback" not in result.message


def test_strict_mode_raises_check_failed(monkeypatch):
    monkeypatch.setenv("FEEDBACK_STRICT", "1")
    with pytest.raises(CheckFailed, match="ещё не загружена"):
        precision.check_bfloat16(None)


def test_a_cell_waiting_for_the_unloaded_model_stops_with_one_russian_line():
    """Ячейка загрузки отказалась работать: ячейки ниже говорят, что ждут задания 1."""
    model = precision.NOT_LOADED
    for use in (
        lambda: model.backbone.get_layer("decoder_block_0"),
        lambda: model.summary(),
        lambda: setattr(model, "compile", None),
        lambda: model(),
    ):
        with pytest.raises(precision.WaitingForModel) as stop:
            use()
        [line] = stop.value._render_traceback_()
        assert line.startswith("Модель ещё не загружена") and "задание 1" in line
        assert "WEIGHTS_DTYPE" in line
    assert "ещё не загружена" in repr(model)
    assert getattr(model, "graded", None) is None and not hasattr(model, "backbone")


@pytest.mark.parametrize("check", [precision.check_bfloat16, precision.check_lora])
def test_checks_of_the_unloaded_model_say_what_they_wait_for(check, monkeypatch):
    result = check(precision.NOT_LOADED)
    assert not result.passed and result.headline == precision.NOT_LOADED.message
    monkeypatch.setenv("FEEDBACK_STRICT", "1")
    with pytest.raises(CheckFailed, match="задание 1"):
        check(precision.NOT_LOADED)


@pytest.mark.parametrize("check", [precision.check_bfloat16, precision.check_lora])
def test_grading_sees_the_unloaded_model_as_the_learners_problem(check):
    """При оценивании зонд снимает наблюдение с заглушки: это ответ «не сделано», не сбой."""
    from feedback.engine.graded import roundtrip

    spec = check.graded
    envelope = roundtrip(spec.observe_envelope(lambda: (precision.NOT_LOADED,), {}))
    assert envelope == {"problem": {"headline": precision.NOT_LOADED.message, "details": []}}
    assert not spec.judge_envelope(envelope, {}).passed


def test_lora_count_report_of_the_unloaded_model_says_what_it_waits_for():
    report = precision.lora_count_report(lambda *sizes: 0, precision.NOT_LOADED)
    assert report == f"Сверить не с чем: {precision.NOT_LOADED.message}"


def test_parameter_counts_rejects_non_models():
    with pytest.raises(TypeError, match="строка"):
        precision.parameter_counts("model")


# --------------------------------------------------------------------------- тяжёлые тесты


@pytest.fixture(scope="module")
def keras_hub():
    pytest.importorskip("sentencepiece", reason=HEAVY_REASON)
    return pytest.importorskip("keras_hub", reason=HEAVY_REASON)


@pytest.fixture(scope="module")
def load(keras_hub):
    import keras

    preset = tiny_preset_path()

    def load_model(dtype):
        keras.utils.set_random_seed(812)  # до from_preset, иначе fit потом падает
        return keras_hub.models.Gemma3CausalLM.from_preset(preset, dtype=dtype)

    return load_model


@pytest.fixture(scope="module")
def bf16_model(load):
    return load("bfloat16")


@pytest.fixture(scope="module")
def float32_model(load):
    return load("float32")


@pytest.fixture(scope="module")
def lora_model(load):
    model = load("bfloat16")
    model.backbone.enable_lora(rank=4)
    return model


def backbone_like(model, dtype):
    """Ещё одна основная сеть той же архитектуры (без загрузки весов): быстро."""
    config = dict(model.backbone.get_config(), dtype=dtype)
    return type(model.backbone).from_config(config)


def test_bf16_model_passes(bf16_model):
    result = precision.check_bfloat16(bf16_model)
    assert result.passed, result.message
    assert "decoder_block_0" in result.message and "→ bfloat16" in result.message
    assert "LoRA" not in result.message


def test_bf16_backbone_is_accepted_too(bf16_model):
    assert precision.check_bfloat16(bf16_model.backbone).passed


def test_float32_model_fails_naming_float32(float32_model):
    result = precision.check_bfloat16(float32_model)
    assert not result.passed
    assert "float32" in result.headline
    assert "token_embedding/embeddings" in result.message  # пример переменной
    assert 'dtype="bfloat16"' in result.message


def test_mixed_precision_is_not_bf16_storage(bf16_model):
    mixed = backbone_like(bf16_model, "mixed_bfloat16")
    result = precision.check_bfloat16(mixed)
    assert not result.passed
    assert "float32" in result.headline and "mixed_bfloat16" in result.message


def test_lora_float32_matrices_are_allowed_and_explained(lora_model):
    assert {w.dtype for w in lora_model.trainable_weights} == {"float32"}
    result = precision.check_bfloat16(lora_model)
    assert result.passed, result.message
    assert "Матрицы LoRA (8 шт." in result.message and "float32" in result.message


def test_lab_path_reads_the_frozen_kernel_dtype(lora_model):
    attention = lora_model.backbone.get_layer("decoder_block_0").attention
    assert attention.query_dense.kernel.dtype == "bfloat16"  # W + A·B в типе слоя
    assert precision._lab_kernel_dtype(lora_model.backbone) == "bfloat16"


def test_parameter_counts(bf16_model, lora_model):
    trainable, total = precision.parameter_counts(bf16_model)
    assert trainable == total == bf16_model.count_params()
    trainable, total = precision.parameter_counts(lora_model)
    assert total == lora_model.count_params()
    assert trainable == sum(math.prod(w.shape) for w in lora_model.trainable_weights)
    assert 0 < trainable < total


def test_lora_rank_4_passes(lora_model):
    result = precision.check_lora(lora_model, rank=4)
    assert result.passed, result.message
    trainable, total = precision.parameter_counts(lora_model)
    assert "Обучаемых параметров: 3328 из 110\u202f464" in result.message
    assert (trainable, total) == (3328, 110_464)


def test_no_lora_fails(bf16_model):
    result = precision.check_lora(bf16_model)
    assert not result.passed
    assert "LoRA не включена" in result.headline
    assert "enable_lora(rank=4)" in result.message


def test_wrong_rank_is_named(bf16_model):
    backbone = backbone_like(bf16_model, "bfloat16")
    backbone.enable_lora(rank=8)
    result = precision.check_lora(backbone, rank=4)
    assert not result.passed
    assert "ранг LoRA — 8, а нужен 4" in result.headline
    assert precision.check_lora(backbone, rank=8).passed


def test_lora_on_some_targets_only(bf16_model):
    backbone = backbone_like(bf16_model, "bfloat16")
    backbone.enable_lora(rank=4, target_layer_names=["query"])
    result = precision.check_lora(backbone)
    assert not result.passed
    assert "не во всех слоях" in result.headline
    assert "attention/value" in result.message


def test_extra_trainable_layer_is_named(lora_model):
    embedding = lora_model.backbone.get_layer("token_embedding")
    embedding.trainable = True
    try:
        result = precision.check_lora(lora_model)
    finally:
        embedding.trainable = False
    assert not result.passed
    assert "другие веса" in result.headline
    assert "token_embedding/embeddings" in result.message
    assert precision.check_lora(lora_model).passed


def test_frozen_lora_fails(bf16_model):
    backbone = backbone_like(bf16_model, "bfloat16")
    backbone.enable_lora(rank=4)
    backbone.trainable = False
    result = precision.check_lora(backbone)
    assert not result.passed
    assert "заморожены" in result.headline


def test_weights_dtype_choice_is_checked_before_loading():
    assert precision.check_weights_dtype("bfloat16").passed
    for choice, words in [
        (..., "ещё не выбран"),
        (None, "ещё не выбран"),
        (16, "строкой"),
        ("float32", "float32 — 4 байта на параметр"),
        ("float32", "не поместятся в T4"),
        ("float64", "float64 — 8 байт на параметр"),
        ("float16", "65 504"),
        ("mixed_bfloat16", "смешанная точность"),
        ("int4", "не знает тип"),
    ]:
        result = precision.check_weights_dtype(choice)
        assert not result.passed and words in result.message, (choice, result.message)


def test_none_and_ellipsis_get_their_own_messages():
    """None — не «…»: вердикт называет то, что действительно лежит в переменной."""
    none = precision.check_weights_dtype(None)
    assert not none.passed
    assert "в WEIGHTS_DTYPE пока None" in none.headline and "«…»" not in none.message
    ellipsis = precision.check_weights_dtype(...)
    assert not ellipsis.passed and "осталось «…»" in ellipsis.headline
    with pytest.raises(precision.WeightsDtypeError) as error:
        precision.require_weights_dtype(None, "gemma3_4b_text")
    assert "в WEIGHTS_DTYPE пока None" in str(error.value)


def test_loading_refuses_unfilled_task_and_float32_that_will_not_fit():
    from feedback.runtime import Accelerator

    t4 = Accelerator("gpu", "Tesla T4", 1, 15 * 1024**3, "nvidia-smi")
    h200 = Accelerator("gpu", "H200", 1, 140 * 1024**3, "nvidia-smi")
    assert precision.require_weights_dtype("bfloat16", "gemma3_4b_text", t4) == "bfloat16"
    assert precision.require_weights_dtype("float32", "gemma3_4b_text", h200) == "float32"
    assert precision.require_weights_dtype("float32", "/cache/tiny_gemma3/abc") == "float32"
    for choice in (..., "float32", "nonsense"):
        with pytest.raises(precision.WeightsDtypeError) as error:
            precision.require_weights_dtype(choice, "gemma3_4b_text", t4)
        shown = error.value._render_traceback_()
        assert shown[0] == "Модель не загружена." and "Traceback" not in "\n".join(shown)


# --------------------------------------------------------------------------- бюджет памяти

GEMMA_4B = 3_880_099_328
BUDGET = {"float32": 4, "float16": 2, "bfloat16": 2}


def budget(formula):
    """Словарь задания 1, посчитанный формулой ``formula(параметры, байты на число)``."""
    return {dtype: formula(GEMMA_4B, size) for dtype, size in BUDGET.items()}


def test_weights_budget_passes_with_the_lab_formula():
    result = precision.check_weights_budget(budget(lambda p, b: p * b / 1024**3))
    assert result.passed, result.message
    assert result.mistake is None
    assert "float32: 3,88 млрд параметров × 4 байта / 1024³ ≈ 14,5 ГиБ" in result.message
    # Округлённые ответы (как в «Итогах» лабораторной) тоже верны.
    assert precision.check_weights_budget(
        {"float32": 14.45, "float16": 7.23, "bfloat16": 7.23}
    ).passed


@pytest.mark.parametrize(
    ("formula", "mistake", "words"),
    [
        (lambda p, b: p * b, "budget.bytes_not_gib", "получились байты"),
        (lambda p, b: p * b / 1e9, "budget.gb_not_gib", "это ГБ"),
        (lambda p, b: p * b / 1024**2, "budget.mib_not_gib", "получились МиБ"),
        (lambda p, b: p * 8 * b / 1024**3, "budget.bits_not_bytes", "число бит"),
        (lambda p, b: p / 1024**3, "budget.forgot_bytes_per_number", "забыт множитель"),
        (lambda p, b: 4e9 * b / 1024**3, "budget.rounded_param_count", "GEMMA_4B_PARAMS"),
        (lambda p, b: 4 * p * b / 1024**3, "budget.full_training", "С LoRA исходные веса"),
        (lambda p, b: p * (6 - b) / 1024**3, "budget.wrong_bytes_per_number", "не то число байт"),
    ],
)
def test_each_wrong_budget_derivation_gets_its_hint(formula, mistake, words):
    result = precision.check_weights_budget(budget(formula))
    assert not result.passed
    assert result.mistake == mistake, result.message
    assert words in result.message
    assert "ошибка в 3 форматах" in result.headline
    # Одна подсказка на все форматы с одной и той же ошибкой.
    assert result.message.count("Подсказка:") == 1
    assert "для float32, float16 и bfloat16" in result.message


def test_the_remainder_for_training_is_not_taken_for_rounded_parameters():
    """Учащийся записал, сколько останется на обучение (14,25 − веса), а не сами веса."""
    result = precision.check_weights_budget(budget(lambda p, b: 0.95 * 15 - p * b / 1024**3))
    assert result.mistake == "budget.remainder_not_weights", result.message
    assert "останется на обучение" in result.message
    assert "круглые 4 млрд" not in result.message


def test_rounded_parameters_are_named_only_when_float32_is_rounded_too():
    # 7,45 ГиБ в 16-битных форматах — и круглые 4 млрд, и почти остаток 7,47 ГиБ.
    rounded = precision.check_weights_budget({"float32": 14.9, "float16": 7.45, "bfloat16": 7.45})
    assert rounded.mistake == "budget.rounded_param_count", rounded.message
    assert "останется на обучение" not in rounded.message
    remainder = precision.check_weights_budget({"float32": -0.2, "float16": 7.02, "bfloat16": 7.02})
    assert remainder.mistake == "budget.remainder_not_weights", remainder.message
    assert "круглые 4 млрд" not in remainder.message


def test_four_bytes_for_every_format_is_the_bytes_per_number_mistake():
    """Частая ошибка: 4 байта (BYTES_PER_PARAMETER из 7.4) и для 16-битных форматов."""
    result = precision.check_weights_budget(budget(lambda p, b: p * 4 / 1024**3))
    assert result.mistake == "budget.wrong_bytes_per_number", result.message
    assert "ошибка в 2 форматах" in result.headline
    assert "для float16 и bfloat16 взято не то число байт" in result.message
    assert "float16 и bfloat16 — по 2" in result.message


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ({}, "ещё не посчитана"),
        (..., "ещё не заполнен"),
        (None, "None"),
        ([14.45, 7.23, 7.23], "не словарь"),
        ({"float32": 14.45}, "нет float16, bfloat16"),
        ({"float32": "14,45 ГиБ", "float16": 7.23, "bfloat16": 7.23}, "записана строка"),
        ({"float32": 3.0, "float16": 7.23, "bfloat16": 7.23}, "float32: получено 3 ГиБ — неверно"),
    ],
)
def test_unfinished_budget_gets_a_russian_verdict(value, words):
    result = precision.check_weights_budget(value)
    assert not result.passed
    assert words in result.message
    assert "Traceback" not in result.message


def test_float32_choice_names_the_training_part_of_the_budget():
    message = precision.check_weights_dtype("float32").message
    assert "14,45" not in message and "кроме весов, есть само обучение" in message
    assert "не поместятся в T4" in message


def test_training_needs_more_than_the_weights_on_a_t4(monkeypatch):
    """Веса во float32 (14,45 ГиБ) меньше всей памяти T4 (14,7 ГиБ), но обучение в неё не влезет.

    Доля 1,0 — чтобы одни веса поместились; с долей лабораторной (0,95) не поместятся и они.
    """
    from feedback import wall
    from feedback.runtime import Accelerator

    t4 = Accelerator("gpu", "Tesla T4", 1, 15_360 * 1024**2, "nvidia-smi")
    for name, value in LAB_TRAINING_XLA.items():  # как в лабораторной 7.5
        monkeypatch.setenv(name, value)
    assert wall.weights_gib(GEMMA_4B, 4) > wall.usable_gib(t4)
    with pytest.raises(precision.WeightsDtypeError):
        precision.require_weights_dtype("float32", "gemma3_4b_text", t4)
    for name in ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION"):
        monkeypatch.setenv(name, "1.0")
    assert wall.weights_gib(GEMMA_4B, 4) < wall.usable_gib(t4)  # одни веса ещё поместились бы
    assert precision.require_weights_dtype("bfloat16", "gemma3_4b_text", t4) == "bfloat16"
    with pytest.raises(precision.WeightsDtypeError) as error:
        precision.require_weights_dtype("float32", "gemma3_4b_text", t4)
    # Сверх весов — замер шага 7.5 (батч 1) минус замер одних весов в bfloat16.
    record = measured.load_record()
    overhead = record.row("b1_t4").peak_gib - record.row("w16_t4").peak_gib
    assert precision.training_overhead_gib("gemma3_4b_text") == pytest.approx(overhead)
    text = str(error.value)
    assert "2,29 ГиБ" in text and "замер на NVIDIA H200" in text
    assert "обучение упадёт с нехваткой памяти" in text
    shown = error.value._render_traceback_()
    assert shown[0] == "Модель не загружена." and "Traceback" not in "\n".join(shown)
    # Смешанная точность хранит веса во float32 — тоже не поместится.
    with pytest.raises(precision.WeightsDtypeError):
        precision.require_weights_dtype("mixed_bfloat16", "gemma3_4b_text", t4)
    # Крошечная учебная модель и большая карта — можно.
    assert precision.require_weights_dtype("float32", "/cache/tiny_gemma3/abc", t4) == "float32"
    h200 = Accelerator("gpu", "H200", 1, 140 * 1024**3, "nvidia-smi")
    assert precision.require_weights_dtype("float32", "gemma3_4b_text", h200) == "float32"


# --------------------------------------------------------------------------- число параметров LoRA


def lora_count(hidden_dim, head_dim, num_query_heads, num_kv_heads, rank, num_blocks):
    query = num_query_heads * hidden_dim * rank + rank * head_dim
    value = num_kv_heads * hidden_dim * rank + rank * head_dim
    return num_blocks * (query + value)


def test_lora_count_formula_matches_the_spec():
    assert lora_count(2560, 256, 8, 4, 4, 34) == 4_247_552  # gemma3_4b_text, SPEC.md
    assert lora_count(1152, 256, 4, 1, 4, 26) == 652_288  # gemma3_1b, SPEC.md
    result = precision.check_lora_parameter_count(lora_count)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("fn", "mistake", "words"),
    [
        # Плоские матрицы W: 1 114 112 у Gemma-4B.
        (
            lambda d, h, q, kv, r, n: n * (d * r + r * q * h + d * r + r * kv * h),
            "lora.count_flat_matrices",
            "одна матрица A на всю W",
        ),
        (lambda d, h, q, kv, r, n: n * r * d * (q + kv), "lora.count_without_b", "матрица B"),
        (
            lambda d, h, q, kv, r, n: r * d * (q + kv) + 2 * r * h,
            "lora.count_one_block",
            "num_blocks",
        ),
    ],
)
def test_each_wrong_lora_count_gets_its_hint(fn, mistake, words):
    result = precision.check_lora_parameter_count(fn)
    assert not result.passed
    assert result.mistake == mistake, result.message
    assert words in result.message


def test_flat_lora_count_of_gemma_4b_is_the_number_in_the_lab():
    flat = precision.check_lora_parameter_count(
        lambda d, h, q, kv, r, n: n * (d * r + r * q * h + d * r + r * kv * h)
    )
    # Полученное число названо, верное (оценивается в лабораторной) — нет (issue 42).
    assert "1\u202f114\u202f112" in flat.message and "4\u202f247\u202f552" not in flat.message


def test_hard_coded_lora_count_fails():
    result = precision.check_lora_parameter_count(lambda *args: 4_247_552)
    assert not result.passed


@pytest.mark.parametrize(("fn", "verdict"), BAD_FUNCTIONS)
def test_bad_lora_count_functions_get_a_russian_verdict(fn, verdict):
    result = precision.check_lora_parameter_count(fn)
    assert not result.passed and verdict in result.message
    assert "Traceback" not in result.message


def test_lora_count_report_agrees_with_the_tiny_model(lora_model):
    trainable, _ = precision.parameter_counts(lora_model)
    backbone = lora_model.backbone
    expected = lora_count(
        backbone.hidden_dim,
        backbone.head_dim,
        backbone.num_query_heads,
        backbone.num_key_value_heads,
        4,
        backbone.num_layers,
    )
    assert trainable == expected  # формула задания верна и для крошечной Gemma
    report = precision.lora_count_report(lora_count, lora_model)
    assert "ровно столько параметров обучается" in report
    wrong = precision.lora_count_report(lambda *args: 1, lora_model)
    assert "а у модели" in wrong
    stub = precision.lora_count_report(..., lora_model)
    assert "ещё не реализована" in stub

"""Лабораторная 7.3: оценка весов против памяти, которую модель получит на видеокарте."""

import pytest

from feedback import wall
from feedback.gpu.xla_memory import T4_TOTAL_BYTES
from feedback.runtime import Accelerator

MIB = 1024**2
FRACTION_09 = {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.9"}


def t4(limit_bytes=None, total_bytes=T4_TOTAL_BYTES, source="nvidia-smi"):
    return Accelerator("gpu", "Tesla T4", 1, total_bytes, source, limit_bytes)


def test_weights_of_gemma_4b_in_float32_and_bfloat16():
    params = wall.params_of("gemma3_4b_text")
    assert wall.weights_gib(params, 4) == pytest.approx(14.454, abs=1e-3)
    assert wall.weights_gib(params, 2) == pytest.approx(7.227, abs=1e-3)
    assert wall.weights_gib(4e9, 4) == pytest.approx(14.90, abs=1e-2)  # круглое число из 7.4


def test_jax_limit_is_not_multiplied_by_the_fraction_again():
    """JAX сообщает предел с уже учтённой долей 0,9: его и показываем, без ×0,9 ещё раз."""
    limit = int(T4_TOTAL_BYTES * 0.9)
    card = t4(limit_bytes=limit, source="jax")
    assert wall.usable_gib(card, FRACTION_09) == pytest.approx(limit / 1024**3)
    html = wall.wall_report_html("gemma3_4b_text", card, env=FRACTION_09)
    assert "13,5 ГиБ" in html and "уже учтена" in html
    assert "12,2 ГиБ" not in html  # так было при двойном учёте: 15 × 0,9 × 0,9
    assert "не поместится" in html and "RESOURCE_EXHAUSTED" in html


def test_total_memory_from_nvidia_smi_gets_the_fraction_once():
    card = t4()
    assert wall.usable_gib(card, FRACTION_09) == pytest.approx(15.0 * 0.9)
    assert wall.usable_gib(card, {}) == pytest.approx(15.0 * 0.75)  # доля JAX по умолчанию
    html = wall.wall_report_html("gemma3_4b_text", card, env=FRACTION_09)
    assert "13,5 ГиБ" in html and "90\u00a0%" in html


def test_platform_allocator_keeps_the_fraction_on_new_jax(monkeypatch):
    """jax-ml/jax#39145: с JAX 0.10 platform идёт через BFC, и доля памяти действует."""
    from feedback.gpu import xla_memory

    env = {**FRACTION_09, "XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}
    monkeypatch.setattr(xla_memory, "installed_jax_version", lambda: "0.10.2")
    assert wall.usable_gib(t4(), env) == pytest.approx(15.0 * 0.9)
    monkeypatch.setattr(xla_memory, "installed_jax_version", lambda: "0.4.30")
    assert wall.usable_gib(t4(), env) == pytest.approx(15.0 - 300 / 1024)
    html = wall.wall_report_html("gemma3_4b_text", t4(), env=env)
    assert "доля не действует" in html and "14,7 ГиБ" in html


def test_bfloat16_fits_a_t4():
    html = wall.wall_report_html("gemma3_4b_text", t4(), 2, FRACTION_09)
    assert "поместятся" in html and "не поместится" not in html


@pytest.mark.parametrize(
    ("usable", "preset"),
    [(13.5, "gemma3_4b_text"), (31.7, "gemma3_12b_text"), (79, "gemma3_27b_text"), (139, None)],
)
def test_which_model_reproduces_the_wall(usable, preset):
    found = wall.preset_for_the_wall(usable)
    assert (found.name if found else None) == preset


def test_big_card_report_suggests_the_12b_model():
    card = Accelerator("gpu", "V100 32GB", 1, 32 * 1024**3, "nvidia-smi")
    html = wall.wall_report_html("gemma3_4b_text", card, env=FRACTION_09)
    assert "поместятся" in html and "gemma3_12b_text" in html and "44,7 ГиБ" in html


def test_report_without_gpu_uses_a_t4_as_the_example():
    cpu = Accelerator(kind="cpu")
    html = wall.wall_report_html("gemma3_4b_text", cpu, env=FRACTION_09)
    assert "Видеокарты нет" in html and "13,5 ГиБ" in html and "не поместятся" in html
    assert wall.usable_gib(None, FRACTION_09) == pytest.approx(13.5)
    with pytest.raises(KeyError):
        wall.params_of("gemma2_2b")


def test_chart_data_lists_every_preset():
    data = wall.presets_chart_data()
    assert list(data) == [p.name for p in wall.GEMMA3_PRESETS]
    assert data["gemma3_1b"]["Веса"] == pytest.approx(3.725, abs=1e-3)


class Weight:
    def __init__(self, shape, dtype="float32"):
        self.shape, self.dtype = shape, dtype


class Model:
    def __init__(self, *shapes):
        self.weights = [Weight(shape) for shape in shapes]


def test_loaded_model_report_counts_weights():
    text = wall.loaded_model_report(Model((1024, 256), (256,)), "gemma3_4b_text")
    assert "262\u202f400 параметров" in text and "float32" in text
    assert "14,5 ГиБ" in text
    failed = wall.loaded_model_report(None, "gemma3_4b_text")
    assert "не загрузилась" in failed and "даже не скачивались" in failed


@pytest.mark.parametrize(
    ("shapes", "phrase"),
    [
        (((110, 1004), (4,)), "110\u202f444 параметра"),
        (((10, 2), (1,)), "21 параметр"),
        (((1000, 1000),), "1 млн параметров"),
    ],
)
def test_loaded_model_report_agrees_the_count_with_its_noun(shapes, phrase):
    assert f"Модель загрузилась: {phrase}," in wall.loaded_model_report(Model(*shapes), "gemma3_1b")


def test_report_names_parameters_and_bytes_in_agreement():
    html = wall.wall_report_html("gemma3_4b_text", t4(), 2, FRACTION_09)
    assert "3,88 млрд параметров × 2 байта (bfloat16)" in html
    html = wall.wall_report_html("gemma3_1b", t4(), 1, FRACTION_09)
    assert "1 млрд параметров × 1 байт" in html


# --------------------------------------------------------------------------- задание


GIB = 1024**3
EXACT = 3_880_099_328 * 4 / GIB


@pytest.mark.parametrize("answer", [EXACT, 14.45, 14.5, 14.454])
def test_weights_memory_right_and_rounded_answers_pass(answer):
    result = wall.check_weights_memory(answer)
    assert result.passed, result.message
    assert "3,88 млрд параметров × 4 байта / 1024³ ≈ 14,5 ГиБ" in result.message


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (3_880_099_328 * 4, "это байты"),
        (3_880_099_328 * 4 / 1e9, "это ГБ"),
        (3_880_099_328 * 4 / 1024**2, "получились МиБ"),
        (3_880_099_328 * 2 / GIB, "веса в bfloat16"),
        (3_880_099_328 * 32 / GIB, "это биты"),
        (3_880_099_328 / GIB, "забыт множитель"),
        (4e9 * 4 / GIB, "для круглых 4 млрд"),
        (14.9, "для круглых 4 млрд"),
        (15, "вся память T4"),
        (15.0, "вся память T4"),
    ],
)
def test_weights_memory_typical_mistakes_get_their_hint(answer, hint):
    result = wall.check_weights_memory(answer)
    assert not result.passed
    assert "14,5" not in result.message and hint in result.message


def test_fifteen_is_the_memory_of_a_t4_not_rounded_parameters():
    result = wall.check_weights_memory(15)
    assert result.mistake == "wall.t4_memory"
    assert "круглых" not in result.message


@pytest.mark.parametrize(
    ("answer", "verdict"),
    [
        (..., "ещё не заполнено"),
        (None, "записано None"),
        ("14,5 ГиБ", "не число (строка '14,5 ГиБ')"),
        (True, "не число (bool)"),
        ([14.45], "не число (list)"),
        (float("nan"), "не конечное число"),
    ],
)
def test_weights_memory_non_numbers_get_a_russian_verdict(answer, verdict):
    result = wall.check_weights_memory(answer)
    assert not result.passed and verdict in result.message
    assert "Traceback" not in result.message


def test_weights_memory_for_other_parameters_from_the_test_cell():
    assert wall.check_weights_memory(1.0, param_count=GIB / 2, bytes_per_param=2).passed
    assert not wall.check_weights_memory(EXACT, param_count=GIB / 2, bytes_per_param=2).passed


def test_weights_memory_strict_mode_raises(monkeypatch):
    from feedback import CheckFailed

    monkeypatch.setenv("FEEDBACK_STRICT", "1")
    with pytest.raises(CheckFailed):
        wall.check_weights_memory(...)

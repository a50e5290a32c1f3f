"""Лабораторная 7.3: оценка весов против памяти видеокарты до загрузки."""

import pytest

from feedback import wall


def test_weights_of_gemma_4b_in_float32_and_bfloat16():
    params = wall.params_of("gemma3_4b_text")
    assert wall.weights_gib(params, 4) == pytest.approx(14.454, abs=1e-3)
    assert wall.weights_gib(params, 2) == pytest.approx(7.227, abs=1e-3)
    assert wall.weights_gib(4e9, 4) == pytest.approx(14.90, abs=1e-2)  # круглое число из 7.4


def test_t4_hits_the_wall_in_float32_but_not_in_bfloat16():
    html = wall.wall_report_html("gemma3_4b_text", 15.0, "Tesla T4")
    assert "не поместится" in html and "RESOURCE_EXHAUSTED" in html
    assert "13,5 ГиБ" in html  # 90 % от 15 ГиБ
    assert "поместятся" in wall.wall_report_html("gemma3_4b_text", 15.0, "Tesla T4", 2)


@pytest.mark.parametrize(
    ("memory", "preset"),
    [(15, "gemma3_4b_text"), (31.7, "gemma3_12b_text"), (79, "gemma3_27b_text"), (139, None)],
)
def test_which_model_reproduces_the_wall(memory, preset):
    found = wall.preset_for_the_wall(memory)
    assert (found.name if found else None) == preset


def test_big_card_report_suggests_the_12b_model():
    html = wall.wall_report_html("gemma3_4b_text", 31.7, "V100 32GB")
    assert "поместятся" in html and "gemma3_12b_text" in html and "44,7 ГиБ" in html


def test_report_without_gpu_and_unknown_preset():
    assert "Видеокарты нет" in wall.wall_report_html("gemma3_4b_text", None, "CPU")
    with pytest.raises(KeyError):
        wall.params_of("gemma2_2b")


def test_chart_data_lists_every_preset():
    data = wall.presets_chart_data()
    assert list(data) == [p.name for p in wall.GEMMA3_PRESETS]
    assert data["gemma3_1b"]["Веса"] == pytest.approx(3.725, abs=1e-3)


def test_loaded_model_report_counts_weights():
    class Weight:
        def __init__(self, shape, dtype):
            self.shape, self.dtype = shape, dtype

    class Model:
        def __init__(self):
            self.weights = [Weight((1024, 256), "float32"), Weight((256,), "float32")]

    text = wall.loaded_model_report(Model(), "gemma3_4b_text")
    assert "262\u202f400 параметров" in text and "float32" in text
    assert "14,5 ГиБ" in text
    assert "не загрузилась" in wall.loaded_model_report(None, "gemma3_4b_text")

"""make gpu-check: оценка по формулам 7.4, честный отказ без GPU и путь 7.5 на CPU."""

import pytest

from feedback.answers.accumulation import LAB_HYPERPARAMETERS, LR_LAB_7_5
from feedback.gpu import check as gpu_check

#: Один процесс xdist на модули с keras и крошечной Gemma в самом процессе тестов: импорт
#: TensorFlow стоит секунды процессора, а скомпилированные программы JAX остаются в процессе.
pytestmark = pytest.mark.xdist_group("keras_in_process")


def test_estimate_uses_lab_7_4_formulas():
    estimate = gpu_check.estimate_lora_training(
        total_params=3_880_099_328 + 4_000_000,
        trainable_params=4_000_000,
        batch_size=1,
        seq_len=400,
        num_layers=34,
        hidden_dim=2560,
        accumulation=True,
    )
    gib = 1024**3
    assert estimate.items["Веса (bfloat16)"] == pytest.approx(3_880_099_328 * 2 / gib)
    assert estimate.items["Активации (упрощённо)"] == pytest.approx(400 * 34 * 2560 * 2 / gib)
    assert estimate.items["Состояние Adam для LoRA"] == pytest.approx(2 * 4e6 * 4 / gib)
    assert "Буфер накопления (float32)" in estimate.items
    assert estimate.total == pytest.approx(sum(estimate.items.values()))


def test_the_optimizer_is_the_one_the_lab_checks_expect():
    """GPU-среда эталонов не импортирует: её копия оптимизатора 7.5 сверяется с эталоном здесь."""
    assert gpu_check.LAB_OPTIMIZER == {"learning_rate": LR_LAB_7_5, **LAB_HYPERPARAMETERS}


def test_without_gpu_it_says_it_did_not_run(capsys, monkeypatch):
    pytest.importorskip("jax")
    monkeypatch.setattr(gpu_check, "_gpu_device", lambda: None)
    assert gpu_check.main([]) == 0
    assert "не запускалась" in capsys.readouterr().out


@pytest.mark.slow  # строит крошечную Gemma и обучает её в процессе тестов
def test_tiny_run_on_cpu_reports_counts_steps_and_estimate():
    pytest.importorskip("keras_hub")
    result = gpu_check.run("tiny", steps=4, accumulation=2, seq_len=32)
    assert result["iterations"] == 2  # 4 микробатча / накопление 2
    assert 0 < result["trainable_params"] < result["total_params"]
    text = gpu_check.report(result)
    assert "Шагов оптимизатора: 2" in text and "Итого" in text
    assert "не измерена" in text

"""GPU-лабораторные глазами учащегося без видеокарты и без ключей Kaggle."""

from __future__ import annotations

import os

import pytest

from notebook_runner import ROOT, outputs_text, run_notebook

pytestmark = pytest.mark.slow
LAB5 = ROOT / "solutions" / "lab_7_5_bfloat16_lora" / "lab_7_5_bfloat16_lora.ipynb"


@pytest.fixture
def no_kaggle(tmp_path, monkeypatch):
    """Чистая «машина учащегося»: ни переменных Kaggle, ни ~/.kaggle с ключами."""
    for name in (
        "KAGGLE_API_TOKEN",
        "KAGGLE_USERNAME",
        "KAGGLE_KEY",
        "KAGGLE_CONFIG_DIR",
        "COURSE7_TINY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("COURSE7_CACHE_DIR", str(ROOT / ".course-work" / "cache"))


def errors(nb):
    return [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]


def test_cpu_learner_gets_tiny_mode_and_the_lab_completes(no_kaggle, monkeypatch):
    monkeypatch.setitem(os.environ, "COURSE7_TINY", "")  # как у учащегося: не задано
    nb = run_notebook(LAB5, strict=True)
    assert errors(nb) == []
    shown = "\n".join(outputs_text(cell) for cell in nb.cells)
    assert "Учебный режим: крошечная модель вместо gemma3_4b_text" in shown
    assert "Generations after epoch 4" in shown


def test_without_tiny_mode_the_load_stops_with_russian_instructions(no_kaggle, monkeypatch):
    monkeypatch.setenv("COURSE7_TINY", "0")
    nb = run_notebook(LAB5)
    first = errors(nb)[0]
    assert first.ename == "KaggleCredentialsError"
    text = "\n".join(first.traceback)
    assert "Не найдены ключи Kaggle" in text and "kaggle.json" in text
    assert "Traceback" not in text and "ConnectionError" not in text

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


def test_cpu_learner_gets_tiny_mode_and_the_model_loads(no_kaggle, monkeypatch):
    """Без видеокарты и без COURSE7_TINY учебный режим включается сам, и модель загружается.

    Дальше тетрадка идёт так же, как с ``COURSE7_TINY=1``: всю её, до обучения с выводом
    после четвёртой эпохи, в строгом режиме выполняет make nbval (tests/support/nbval_outputs.py).
    """
    monkeypatch.setitem(os.environ, "COURSE7_TINY", "")  # как у учащегося: не задано
    nb = run_notebook(LAB5, strict=True, until="from_preset(")
    assert errors(nb) == []
    shown = "\n".join(outputs_text(cell) for cell in nb.cells)
    assert "Учебный режим: крошечная модель вместо gemma3_4b_text" in shown
    assert "видеокарта не найдена" in shown
    assert "Total params" in shown, shown[-2000:]  # model.summary() загруженной модели


def test_without_tiny_mode_the_load_stops_with_russian_instructions(no_kaggle, monkeypatch):
    monkeypatch.setenv("COURSE7_TINY", "0")
    nb = run_notebook(LAB5)
    first = errors(nb)[0]
    assert first.ename == "KaggleCredentialsError"
    text = "\n".join(first.traceback)
    assert "Не найдены ключи Kaggle" in text and "kaggle.json" in text
    assert "Traceback" not in text and "ConnectionError" not in text


def test_only_new_token_without_network_shows_network_guidance(no_kaggle, monkeypatch, tmp_path):
    """Только KAGGLE_API_TOKEN, сети нет (прокси молчит): в ячейке — русский текст о сети."""
    import socket

    import nbformat

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        dead_port = sock.getsockname()[1]
    monkeypatch.setenv("COURSE7_TINY", "0")
    monkeypatch.setenv("KAGGLE_API_TOKEN", "KGAT_fake")
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{dead_port}")
    monkeypatch.setenv("KERAS_BACKEND", "jax")
    path = tmp_path / "preflight.ipynb"
    cell = 'from feedback import runtime\nPRESET = runtime.choose_preset("gemma3_4b_text")'
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)]), path)
    nb = run_notebook(path)
    (error,) = errors(nb)
    text = "\n".join(error.traceback)
    assert error.ename == "KaggleAccessError"
    assert text.startswith("Нет связи с Kaggle.") and "COURSE7_TINY=1" in text
    assert "Traceback" not in text and "не найден" not in text and "ConnectionError" not in text

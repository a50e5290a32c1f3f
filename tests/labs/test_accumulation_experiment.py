"""Опыт 7.6 с большим батчем: настоящая заготовка, батч 8 и одна короткая эпоха (issue 40)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from feedback import accumulation, measured
from feedback.engine.waiting import WaitingForTask

ROOT = Path(__file__).resolve().parents[2]
LAB = "lab_7_6_gradient_accumulation"


def cells(folder: str) -> dict[str, str]:
    path = ROOT / folder / LAB / f"{LAB}.ipynb"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    return {cell.get("id"): "".join(cell["source"]) for cell in notebook["cells"]}


@pytest.mark.parametrize("value", [..., None, "8", 8.0, True, 1, 0])
def test_an_unfilled_or_useless_batch_stops_the_experiment(value):
    with pytest.raises(WaitingForTask):
        accumulation.experiment_batch(value)


def test_one_short_epoch_is_two_batches():
    data = {"prompts": [f"q{i}" for i in range(100)], "responses": [f"a{i}" for i in range(100)]}
    short = accumulation.short_epoch(data, 8)
    assert short == {"prompts": data["prompts"][:16], "responses": data["responses"][:16]}


class FakeModel:
    def __init__(self):
        self.calls = []

    def fit(self, data, **kwargs):
        self.calls.append((len(data["prompts"]), kwargs))
        return "history"


def run_experiment(batch_cell: str, fit_cell: str) -> FakeModel:
    model = FakeModel()
    data = {"prompts": ["q"] * 50, "responses": ["a"] * 50}
    namespace = {"accumulation": accumulation, "model": model, "data": data}
    exec(batch_cell, namespace)
    exec(fit_cell, namespace)
    return model


def test_the_untouched_notebook_does_not_train():
    student = cells("notebooks")
    assert "EXPERIMENT_BATCH_SIZE = ..." in student["ba655bdb"]
    with pytest.raises(WaitingForTask):
        run_experiment(student["ba655bdb"], student["experiment-fit"])


def test_the_solution_trains_one_short_epoch_of_batch_8():
    solution = cells("solutions")
    model = run_experiment(solution["ba655bdb"], solution["experiment-fit"])
    assert model.calls == [(16, {"epochs": 1, "batch_size": 8})]
    assert accumulation.EXPERIMENT_BATCH == 8


def test_batch_8_is_a_wall_on_a_t4_and_batch_4_is_on_its_edge():
    record = measured.load_record()
    t4_pool = record.row("b4_t4").limit_bytes / 1024**3
    assert record.extrapolated_peak_gib(accumulation.EXPERIMENT_BATCH) > 16  # любая карта 16 ГБ
    assert record.row("b4_free").peak_gib > 0.95 * 15  # больше, чем JAX получит на T4 в 7.6
    assert record.row("b4_t4").peak_bytes >= 0.999 * record.row("b4_t4").limit_bytes
    assert record.row("b2_t4").peak_gib < t4_pool


def test_the_32gb_task_takes_a_batch_that_fits_32_gb():
    record = measured.load_record()
    assert record.row("b4_free").peak_gib < 0.95 * 32 * 1e9 / 1024**3
    assert record.extrapolated_peak_gib(16) > 32 * 1e9 / 1024**3  # «на 32 ГБ — берите 16»


def test_7_6_check_messages_speak_of_micro_steps_not_training_steps():
    """«Шаг обучения» в 7.6 путали со скоростью обучения: проверки говорят «микрошаг»."""
    import re

    for module in ("feedback/accumulation.py", "feedback/answers/accumulation.py"):
        source = (ROOT / module).read_text(encoding="utf-8")
        assert not re.search(r"шаг\w* обучения", source), module

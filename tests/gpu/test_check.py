"""make gpu-check: опыты лабораторных в процессах с памятью T4 — на CPU и с поддельной картой.

Поддельная карта (:class:`Card` с любыми числами), поддельный держатель и опыт ``fake``
(«занимает» заданный пик в бюджете и спит) проверяют логику бюджета без видеокарты: пик сверх
бюджета — стена, молчание до срока — «завис», большая карта идёт слотами сразу, карта на 16 ГБ —
по одному. Настоящая программа опытов на крошечной Gemma — в медленном тесте.
"""

from __future__ import annotations

import json
import math
import time
from contextlib import contextmanager
from dataclasses import replace

import pytest

from feedback import measured
from feedback.answers.accumulation import LAB_HYPERPARAMETERS, LR_LAB_7_5
from feedback.generation.prompts import LENGTH_STEP
from feedback.gpu import check as gpu_check
from feedback.gpu.check_card import (
    SLOT_OVERHEAD,
    Card,
    Held,
    NoHolder,
    hold,
    plan_slots,
    pool_fraction,
)
from feedback.gpu.check_experiments import (
    CONTEXT_RESERVE,
    LAB_7_3_POOL,
    T4_USABLE,
    Experiment,
    WorkerResult,
    lab_experiments,
    tiny_experiments,
)
from feedback.gpu.check_report import (
    chart,
    estimate_lora_training,
    fast_wall,
    record,
    table,
    write_record,
)
from feedback.gpu.check_runner import Outcome, Runner, classify, experiment_env
from feedback.settings import LAB_TRAINING_XLA, LAB_WALL_XLA

MIB = 1024**2
GIB_BYTES = 1024**3
H200 = Card("NVIDIA H200 (поддельная)", 143_771 * MIB, 143_000 * MIB, "580.159.04")
T4 = Card("Tesla T4 (поддельная)", 15_360 * MIB, 15_100 * MIB, "550.54.15")


def fake(name: str, peak_gib: float = 1.0, sleep: float = 0.0, **changes) -> Experiment:
    """Поддельный опыт: пик ``peak_gib`` ГиБ в бюджете T4, сон ``sleep`` секунд."""
    fields = dict(
        name=name,
        lab="7.6",
        title=f"поддельный {name}",
        kind="fake",
        config="tiny",
        dtype="bfloat16",
        budget_bytes=T4_USABLE,
        timeout_s=20.0,
        fake_peak_bytes=int(peak_gib * 1024**3),
        fake_sleep_s=sleep,
    )
    fields.update(changes)
    return Experiment(**fields)


class RecordingHolder:
    """Поддельный держатель: помнит, сколько памяти просили оставить и когда держал."""

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.spans: list[tuple[float, float]] = []

    @contextmanager
    def hold(self, leave_free: int):
        started = time.monotonic()
        self.calls.append(leave_free)
        yield Held(H200.total_bytes - leave_free, leave_free)
        self.spans.append((started, time.monotonic()))


def overlap(a, b) -> bool:
    return a.started < b.ended and b.started < a.ended


# --------------------------------------------------------------------------- без процессов


def test_estimate_uses_lab_7_4_formulas():
    estimate = estimate_lora_training(
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


def test_without_gpu_it_says_it_did_not_run(capsys, tmp_path):
    assert gpu_check.main(["--out", str(tmp_path)], probe=lambda: None) == 0
    assert "не запускалась" in capsys.readouterr().out
    assert not any(tmp_path.iterdir())


def test_the_real_probe_finds_no_card_here_or_a_real_one():
    card = gpu_check.cuda_card()
    assert card is None or (card.total_bytes >= card.free_bytes > 0 and card.name)


def test_slots_big_card_runs_eight_t4_a_16_gb_card_one():
    assert plan_slots(H200, T4_USABLE) == 8
    assert plan_slots(T4, T4_USABLE) == 1
    # Пул считается от всей памяти карты: 15 060 МиБ H200 — та же доля, что в записи курса.
    assert float(pool_fraction(H200, T4_USABLE)) == pytest.approx(0.10475, abs=1e-5)
    assert float(pool_fraction(T4, 2 * T4.total_bytes)) == 1.0


class FakeDriver:
    """Поддельный драйвер CUDA: выделение уменьшает свободную память (и чуть больше — на
    выравнивание, как у настоящего)."""

    def __init__(self, total: int, free: int) -> None:
        self.total, self.free = total, free

    def memory(self) -> tuple[int, int]:
        return self.free, self.total

    def allocate(self, size: int) -> int:
        if size + 2 * MIB > self.free:
            raise AssertionError("держатель попросил больше, чем свободно")
        self.free -= size + 2 * MIB
        return 1


@pytest.mark.parametrize("card", [H200, T4])
def test_the_holder_leaves_the_budget_free(card):
    driver = FakeDriver(card.total_bytes, card.free_bytes)
    leave = T4_USABLE + CONTEXT_RESERVE
    held = hold(leave, driver)
    assert held["free_bytes"] == driver.free
    if card.free_bytes > leave:
        assert leave <= driver.free < leave + 64 * MIB + 2 * MIB
        assert held["held_bytes"] >= card.free_bytes - leave - 2 * GIB_BYTES
    else:  # карта не больше T4: держать нечего
        assert held["held_bytes"] == 0 and driver.free == card.free_bytes


def test_the_lab_experiments_are_the_issue_s():
    by_name = {experiment.name: experiment for experiment in lab_experiments()}
    assert by_name["b8_t4"].batch == 8 and by_name["b8_t4"].seq_len == 400
    assert by_name["acc8_t4"].batch == 1 and by_name["acc8_t4"].accumulation == 8
    assert by_name["b1_t4"].lab == "7.5" and by_name["b1_t4"].dtype == "bfloat16"
    assert by_name["b4_t4"].batch == 4  # оригинал курса: на грани T4 — проверка это решит
    # Обучение — в пуле той же доли T4, что задают тетрадки 7.5 и 7.6 (LAB_TRAINING_XLA).
    share = float(LAB_TRAINING_XLA["XLA_CLIENT_MEM_FRACTION"])
    trains = {e.name: e.budget_bytes for e in by_name.values() if e.kind == "train"}
    assert trains.pop("b4_free") > 32 * 1024**3 - 1024**3  # задание 2 7.6: карта на 32 ГБ
    assert set(trains.values()) == {int(share * 15_360 * 1024**2)}
    assert {by_name["gen_1b"].config, by_name["gen_4b"].config} == {"1b", "4b"}
    assert by_name["w16_t4"].kind == "load" and by_name["w16_t4"].dtype == "bfloat16"
    loads = [e for e in by_name.values() if e.kind == "load" and e.name != "w16_t4"]
    assert all(e.dtype == "float32" and e.config == "4b" for e in loads)
    # Распределители при одном бюджете 7.3: пул BFC заранее, пул без предвыделения (как в
    # тетрадке, LAB_WALL_XLA), BFC по мере надобности и platform при занятой остальной карте.
    same_budget = {
        (e.emulation, e.allocator, e.preallocate) for e in loads if e.budget_bytes == LAB_7_3_POOL
    }
    assert same_budget == {
        ("pool", "bfc", True),
        ("pool", "bfc", False),
        ("held", "bfc", False),
        ("held", "platform", False),
    }
    assert all(e.timeout_s <= 90 for e in loads)
    assert [e.name for e in tiny_experiments()] == list(by_name)
    assert {e.config for e in tiny_experiments()} == {"tiny"}


def test_pools_of_different_sizes_share_the_card_by_memory(tmp_path):
    """Пул карты 32 ГБ занимает место нескольких T4: опыты ждут места, а не только слота."""
    experiments = [
        fake("big", peak_gib=1, sleep=0.6, budget_bytes=100 * 1024**3),
        *(fake(f"t4_{n}", peak_gib=1, sleep=0.4) for n in range(4)),
    ]
    runner = Runner(tmp_path, H200, RecordingHolder())
    outcomes = runner.run(experiments)
    assert {o.status for o in outcomes} == {"fits"}

    def running_at(moment):
        return [o for o in outcomes if o.started <= moment < o.ended]

    peak = max(
        sum(o.experiment.budget_bytes + SLOT_OVERHEAD for o in running_at(o.started))
        for o in outcomes
    )
    assert peak <= H200.free_bytes  # сразу идёт столько пулов, сколько помещается, не больше
    big = next(o for o in outcomes if o.experiment.name == "big")
    # И не по одному: T4 идут рядом с большим пулом, пока есть место.
    assert any(o is not big and o.started < big.ended and o.ended > big.started for o in outcomes)


def test_every_row_the_labs_read_is_an_experiment_of_the_check():
    """Новая запись make gpu-check годится лабораторным: в ней есть каждая строка, которую они
    читают (иначе 7.5 и 7.6 упали бы с KeyError, стоит перейти на новую запись)."""
    from feedback import accumulation, precision

    read = {precision.STEP_ROW, precision.WEIGHTS_ROW, "b1_t4", "b2_t4", "w16_t4"}
    read |= set(accumulation.MEASURED_BATCH_ROWS.values())
    assert read <= {experiment.name for experiment in lab_experiments()}
    assert read <= {row.name for row in measured.load_record().rows}


@pytest.mark.parametrize("prompt", [1, 10, 16, 17, 40])
def test_generation_counts_the_steps_up_to_the_padded_length(prompt):
    """Как в 7.1: запрос округлён вверх до LENGTH_STEP, сэмплер считает до max_length."""
    experiment = replace(lab_experiments()[-1], prompt_tokens=prompt, new_tokens=50)
    padded = math.ceil(prompt / LENGTH_STEP) * LENGTH_STEP
    assert experiment.max_length == padded + 50
    assert experiment.computed_steps == padded + 50 - prompt


def test_classify_result():
    assert classify(None) == "stall"
    assert classify(WorkerResult(ok=True)) == "fits"
    oom = "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1 bytes"
    assert classify(WorkerResult(error=oom)) == "wall"
    assert classify(WorkerResult(error="ValueError: не тот батч")) == "error"


def test_environment_of_each_way_to_emulate_a_t4():
    pool, lab_pool, held_bfc, held_platform = (
        e for e in lab_experiments() if e.kind == "load" and e.budget_bytes == LAB_7_3_POOL
    )
    user = {"XLA_PYTHON_CLIENT_MEM_FRACTION": ".95", "XLA_PYTHON_CLIENT_ALLOCATOR": "cuda_async"}
    env, fraction = experiment_env(pool, H200, user)
    assert env["XLA_CLIENT_MEM_FRACTION"] == env["XLA_PYTHON_CLIENT_MEM_FRACTION"] == fraction
    assert float(fraction) * H200.total_bytes == pytest.approx(LAB_7_3_POOL, rel=1e-5)
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "true"
    assert "XLA_PYTHON_CLIENT_ALLOCATOR" not in env
    # Как тетрадка 7.3 (LAB_WALL_XLA): та же доля, но без предвыделения.
    env, lab_fraction = experiment_env(lab_pool, H200, user)
    assert lab_fraction == fraction and env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert {name: env[name] for name in LAB_WALL_XLA if "FRACTION" not in name} == {
        name: value for name, value in LAB_WALL_XLA.items() if "FRACTION" not in name
    }
    env, fraction = experiment_env(held_bfc, H200, user)
    assert fraction is None and "XLA_PYTHON_CLIENT_MEM_FRACTION" not in env
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false"
    assert "XLA_PYTHON_CLIENT_ALLOCATOR" not in env
    env, _ = experiment_env(held_platform, H200, user)
    assert env["XLA_PYTHON_CLIENT_ALLOCATOR"] == "platform"
    env, fraction = experiment_env(pool, None, user)
    assert env["JAX_PLATFORMS"] == "cpu" and fraction is None


# --------------------------------------------------------------------------- процессы


def test_a_peak_over_the_budget_is_a_wall_and_silence_is_a_stall(tmp_path):
    experiments = [
        fake("fits", peak_gib=9.5),
        fake("wall", peak_gib=21.9),
        fake("stall", sleep=60, timeout_s=1.0),
    ]
    started = time.monotonic()
    outcomes = Runner(tmp_path, H200, RecordingHolder()).run(experiments)
    assert time.monotonic() - started < 10  # зависший (сон 60 с) остановлен по сроку 1 с
    fits, wall, stall = outcomes
    assert (fits.status, wall.status, stall.status) == ("fits", "wall", "stall")
    assert fits.result.peak_bytes == int(9.5 * 1024**3)
    assert "RESOURCE_EXHAUSTED" in wall.result.error and wall.seconds < 1
    assert 0 < stall.seconds <= 2.0 and stall.result is None
    assert "последний этап: имитация" in stall.note  # где именно опыт молчал
    text = table(outcomes)
    assert "стена: ошибка через" in text and "стена без ошибки / завис:" in text
    assert "помещается" in text and "9,5" in text


def test_a_process_aborted_on_memory_is_a_wall_other_crashes_are_errors(tmp_path):
    experiments = [
        fake("aborted", peak_gib=21.9, fake_abort=True),
        fake("broken", kind="fake", fake_sleep_s="не число"),
    ]
    aborted, broken = Runner(tmp_path, H200, RecordingHolder()).run(experiments)
    assert aborted.status == "wall" and "кодом 134" in aborted.note and aborted.result is None
    assert broken.status == "error"


def test_a_big_card_runs_slots_at_once_a_16_gb_card_one_by_one(tmp_path):
    experiments = [fake("a", sleep=0.3), fake("b", sleep=0.3)]
    together = Runner(tmp_path / "h200", H200, RecordingHolder()).run(experiments)
    assert overlap(*together)
    alone = Runner(tmp_path / "t4", T4, RecordingHolder()).run(experiments)
    assert not overlap(*alone)


def test_held_experiments_run_alone_inside_the_holder(tmp_path):
    holder = RecordingHolder()
    pooled = fake("pooled", sleep=0.3)
    held = fake("held", sleep=0.3, emulation="held", allocator="platform", preallocate=False)
    outcomes = Runner(tmp_path, H200, holder).run([held, pooled])
    assert [o.experiment.name for o in outcomes] == ["held", "pooled"]
    assert holder.calls == [T4_USABLE + CONTEXT_RESERVE]
    (span,) = holder.spans
    held_outcome, pooled_outcome = outcomes
    assert span[0] <= held_outcome.started and held_outcome.ended <= span[1]
    assert not overlap(held_outcome, pooled_outcome)
    assert held_outcome.held.free_bytes == T4_USABLE + CONTEXT_RESERVE
    assert held_outcome.mem_fraction is None and pooled_outcome.mem_fraction is not None


def test_the_whole_check_keeps_its_time_limit(tmp_path):
    experiments = [fake("slow", sleep=60), fake("late", sleep=60)]
    outcomes = Runner(tmp_path, T4, NoHolder(), time_limit=1.5).run(experiments)
    slow, late = outcomes
    assert slow.status == "error" and "срок всей проверки" in slow.note  # не замер
    assert late.status == "error" and "не запускался" in late.note


def test_record_is_the_course_format_and_the_chart_is_drawn(tmp_path):
    experiments = [fake("fits", peak_gib=9.5), fake("wall", peak_gib=21.9), fake("stall")]
    results = [
        WorkerResult(ok=True, peak_bytes=int(9.5 * 1024**3), weights_bytes=7 * 1024**3),
        WorkerResult(error="XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory", elapsed_s=12.3),
        None,
    ]
    outcomes = [
        Outcome(e, classify(r), r.elapsed_s if r else 75.0, r, "0.104750", None, 0, "", 0.0, 1.0)
        for e, r in zip(experiments, results, strict=True)
    ]
    origin = gpu_check.provenance(H200, 8, ["--only", "fits"])
    path = tmp_path / "record.json"
    write_record(path, record(origin, outcomes))
    loaded = measured.load_record(path)
    assert loaded.provenance.gpu == H200.name and loaded.provenance.gpu_memory_mib == 143_771
    assert loaded.provenance.driver == "580.159.04"
    assert [row.outcome for row in loaded.rows] == ["fits", "wall", "stall"]
    assert loaded.row("fits").peak_bytes == int(9.5 * 1024**3)
    assert loaded.row("wall").peak_bytes is None and loaded.row("wall").wall_after_s is not None
    assert loaded.row("stall").wall_after_s == 75.0 and loaded.row("wall").wall_after_s == 12.3
    assert loaded.row("fits").pool == "t4" and loaded.row("fits").mem_fraction
    assert set(json.loads(path.read_text(encoding="utf-8"))) == {"provenance", "rows"}
    chart(tmp_path / "chart.png", outcomes, origin.label())
    assert (tmp_path / "chart.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_fast_wall_names_the_allocator_that_fails_fast():
    pool, lab_pool, held_bfc, platform = (
        e for e in lab_experiments() if e.budget_bytes == LAB_7_3_POOL
    )

    def outcome(experiment, status, seconds):
        return Outcome(experiment, status, seconds, None, None, None, 0, "", 0.0, seconds)

    stalls = [
        outcome(pool, "stall", 90.0),
        outcome(lab_pool, "stall", 90.0),
        outcome(held_bfc, "wall", 75.0),
    ]
    assert fast_wall(stalls).startswith("Ни один")
    verdict = fast_wall([*stalls, outcome(platform, "wall", 12.5)])
    assert platform.title in verdict and pool.title not in verdict and "12,5 с" in verdict


def test_the_command_on_a_fake_card_prints_draws_and_records(tmp_path, capsys, monkeypatch):
    experiments = (
        fake("b1_t4", peak_gib=9.6, title="7.5: батч 1"),
        fake("b8_t4", peak_gib=21.9, title="7.6: батч 8"),
        fake("broken", fake_sleep_s="не число", title="сломанный"),
        fake("w32_platform_held", peak_gib=14.5, emulation="held", allocator="platform"),
    )
    monkeypatch.setattr(gpu_check, "lab_experiments", lambda: experiments)
    holder = RecordingHolder()
    code = gpu_check.main(["--out", str(tmp_path)], probe=lambda: H200, holder=holder)
    assert code == 1  # опыт «сломанный» упал не от нехватки памяти
    out = capsys.readouterr().out
    assert "до 8 сразу" in out and "7.6: батч 8: стена: ошибка через" in out
    stem = tmp_path / f"{gpu_check.provenance(H200, 8, []).date}-nvidia-h200"
    loaded = measured.load_record(stem.with_suffix(".json"))
    assert [row.name for row in loaded.rows] == ["b1_t4", "b8_t4", "w32_platform_held"]
    assert loaded.row("w32_platform_held").pool == "held" and holder.calls
    assert "up to 8 processes at once" in loaded.provenance.t4_emulation
    assert stem.with_suffix(".png").exists() and "Опыт" in stem.with_suffix(".txt").read_text()
    assert "broken" in (tmp_path / f"{stem.name}-errors.txt").read_text(encoding="utf-8")


# --------------------------------------------------------------------------- крошечная Gemma


@pytest.mark.slow  # два процесса с keras и крошечной Gemma: 1 × 8 и генерация (≈ 40 с)
def test_tiny_check_runs_the_lab_experiments_on_cpu(tmp_path, capsys):
    pytest.importorskip("keras_hub")
    argv = ["--config", "tiny", "--only", "acc8_t4,gen_1b"]
    assert gpu_check.main([*argv, "--out", str(tmp_path), "--slots", "2"]) == 0
    out = capsys.readouterr().out
    assert "Опыт" in out and "Первый шаг (компиляция)" in out
    (json_path,) = tmp_path.glob("*-cpu-tiny.json")
    assert json_path.with_suffix(".png").exists() and json_path.with_suffix(".txt").exists()
    loaded = measured.load_record(json_path)
    assert [row.name for row in loaded.rows] == ["acc8_t4", "gen_1b"]
    assert {row.outcome for row in loaded.rows} == {"fits"}
    accumulation = loaded.row("acc8_t4")
    assert "2 optimizer updates, 16 micro-steps" in accumulation.note
    assert accumulation.step_s > 0 and accumulation.first_step_s > 0
    generation = loaded.row("gen_1b")
    assert generation.seq_len == 16 + 8 and "14 computed steps" in generation.note
    assert generation.step_s > 0 and generation.first_step_s > 0
    assert not generation.weights_only and loaded.provenance.gpu == "CPU"
    assert {row.pool for row in loaded.rows} == {"none"}  # на процессоре памяти T4 нет

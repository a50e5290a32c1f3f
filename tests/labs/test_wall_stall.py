"""Сторож загрузки 7.3: молчаливое ожидание XLA у предела памяти кончается русской стеной.

На H200 загрузка во float32 в пуле размером с T4 не выдала ни ошибки, ни результата за 390 с
(запись измерений, опыт w32_lab73). Здесь тот же случай на процессоре: «загрузка» спит, а
замер памяти говорит, что всё занято, — сторож должен прервать её за секунды.
"""

from __future__ import annotations

import time

import pytest

from feedback import measured, wall

GIB = 1024**3


def at_limit():
    return 13 * GIB + GIB // 2, 13 * GIB + GIB // 2 + 10 * 1024**2  # свободно 10 МиБ


def slow_load(seconds: float = 10.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # как загрузка, которая ждёт памяти без конца
        time.sleep(0.01)
    return "модель"


def test_a_stall_at_the_memory_limit_becomes_the_wall():
    guard = wall.StallGuard(patience_s=0.3, probe=at_limit, poll_s=0.05)
    started = time.monotonic()
    model = None
    with pytest.raises(wall.MemoryWallStall) as error:
        with guard:
            model = slow_load()
    assert time.monotonic() - started < 5
    assert model is None and guard.outcome == "stall"
    message = str(error.value)
    assert message.startswith("Стена памяти") and "RESOURCE_EXHAUSTED" in message
    assert error.value._render_traceback_() == [message]
    report = wall.loaded_model_report(model, "gemma3_4b_text", guard)
    assert "не загрузилась" in report and "прервал" in report


def test_a_long_load_with_free_memory_is_left_alone():
    """Долгое скачивание на большой карте — не стена: память не у предела."""
    guard = wall.StallGuard(patience_s=0.1, probe=lambda: (2 * GIB, 28 * GIB), poll_s=0.02)
    with guard:
        model = slow_load(0.5)
    assert model == "модель" and guard.outcome == "loaded"


def test_unknown_memory_never_interrupts():
    guard = wall.StallGuard(patience_s=0.1, probe=lambda: None, poll_s=0.02)
    with guard:
        assert slow_load(0.4) == "модель"
    assert guard.outcome == "loaded"


def test_a_real_out_of_memory_error_passes_through():
    guard = wall.StallGuard(patience_s=5, probe=at_limit, poll_s=0.05)
    with pytest.raises(RuntimeError, match="RESOURCE_EXHAUSTED"):
        with guard:
            raise RuntimeError("RESOURCE_EXHAUSTED: Out of memory while trying to allocate")
    assert guard.outcome == "error"
    time.sleep(0.3)  # сторож остановлен: никакого прерывания после выхода из with


def test_a_manual_stop_is_reported_as_such():
    guard = wall.StallGuard(patience_s=5, probe=at_limit, poll_s=0.05)
    with pytest.raises(KeyboardInterrupt):
        with guard:
            raise KeyboardInterrupt
    assert guard.outcome == "interrupted"
    assert "остановили вручную" in wall.loaded_model_report(None, "gemma3_4b_text", guard)


def test_the_stall_is_the_measured_outcome_of_the_lab_7_3_load():
    row = measured.load_record().row("w32_lab73")
    assert row.outcome == "stall" and row.dtype == "float32" and row.lab == "7.3"
    assert wall.STALL_PATIENCE_S < 60  # ячейка кончается меньше чем за минуту


def test_the_lab_7_3_load_runs_under_the_guard():
    import json
    from pathlib import Path

    lab = "lab_7_3_memory_wall"
    path = Path(__file__).resolve().parents[2] / "solutions" / lab / f"{lab}.ipynb"
    cells = ["".join(c["source"]) for c in json.loads(path.read_text("utf-8"))["cells"]]
    (load,) = [c for c in cells if "from_preset(PRESET)" in c]
    assert "with wall.StallGuard() as loading:" in load
    assert any("loaded_model_report(model, " in c and "loading)" in c for c in cells)


def test_an_interrupt_that_lands_inside_exit_is_swallowed_not_shown_raw():
    """Гонка последнего мига: сторож выстрелил, когда загрузка уже кончилась, и прерывание
    пришло в ``__exit__`` (здесь — пока ждём поток сторожа) — учащийся не видит сырого
    KeyboardInterrupt, загрузка считается состоявшейся."""

    class InterruptedJoin:
        def join(self):
            raise KeyboardInterrupt

    guard = wall.StallGuard(patience_s=60, probe=at_limit, poll_s=0.05)
    guard._fired = True
    guard.stall = (45.0, *at_limit())
    guard._thread = InterruptedJoin()
    assert guard.__exit__(None, None, None) is False
    assert guard.outcome == "loaded"
    unfired = wall.StallGuard(patience_s=60, probe=at_limit, poll_s=0.05)
    unfired._thread = InterruptedJoin()
    with pytest.raises(KeyboardInterrupt):  # не сторож — значит, остановили вручную
        unfired.__exit__(None, None, None)

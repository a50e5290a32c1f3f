"""Ячейка курса, которая ждёт задания учащегося: в Jupyter — одна русская строка."""

from __future__ import annotations

import pytest

from feedback import precision
from feedback.engine.waiting import WaitingForTask


def test_waiting_for_a_task_shows_only_its_russian_line():
    """IPython показывает ``_render_traceback_`` вместо трассировки: одна строка текста."""
    stop = WaitingForTask("Обучение ждёт задания 1: допишите оптимизатор.")
    assert stop._render_traceback_() == ["Обучение ждёт задания 1: допишите оптимизатор."]


def test_the_7_5_model_placeholder_stops_the_same_way():
    """Заглушка модели 7.5 останавливает ячейку тем же общим исключением."""
    with pytest.raises(WaitingForTask) as stop:
        precision.NOT_LOADED.summary()
    [line] = stop.value._render_traceback_()
    assert "задание 1" in line and isinstance(stop.value, AttributeError)

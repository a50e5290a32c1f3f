"""Подсказки учащемуся о частых промахах с функциями (issue 42, п. 7)."""

from __future__ import annotations

import pytest

from feedback import explore, flops, memory
from feedback.engine.calling import observe_call

GIB = 1024**3


def _prints_flops(param_count, num_tokens):
    print(6 * param_count * num_tokens)


def test_print_instead_of_return_is_named(capsys):
    result = flops.check_compute_num_flops(_prints_flops)
    assert not result.passed
    # Первый случай — P = 10⁹, N = 30 000: функция напечатала свой ответ на него.
    assert "напечатала «180000000000000.0», но вернула None" in result.headline
    assert "замените print на return" in result.headline
    assert result.mistake == "calling.printed_not_returned"
    # Функция по-прежнему печатает: отладочный вывод учащегося не пропадает.
    assert "180000000000000.0" in capsys.readouterr().out


def test_function_without_return_and_without_print_gets_the_plain_verdict():
    result = memory.check_calculate_param_memory(lambda p, b: None)
    assert "вернула None" in result.headline and "print" not in result.headline


def test_returned_value_is_used_even_if_the_function_prints():
    def chatty(p, b):
        print("считаю…")
        return p * b / GIB

    assert memory.check_calculate_param_memory(chatty).passed


def test_printed_text_is_shortened_and_has_no_control_characters():
    outcome = observe_call(lambda: print("\x1b[2J" + "9" * 500), {})
    assert len(outcome["printed"]) <= 200
    result = memory.check_calculate_param_memory(lambda p, b: print("\x07" + "1" * 300))
    assert "\x07" not in result.message and "…" in result.headline


@pytest.mark.parametrize("fn", [_prints_flops])
def test_explore_shows_the_same_hint(fn):
    html = explore.flops_summary_html(9, 12, fn)
    assert "замените print на return" in html

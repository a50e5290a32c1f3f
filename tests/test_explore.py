"""Задание 3 лабораторной 7.2: ползунки и оценка времени обучения."""

from feedback import explore


def correct(p, n):
    return 6 * p * n


def stub(p, n):
    raise NotImplementedError


def test_summary_shows_flops_and_time():
    html = explore.flops_summary_html(9, 12, correct)
    assert "10<sup>9</sup>" in html and "6·10²¹ FLOPs" in html and "≈ 4,8 г." in html


def test_summary_of_stub_is_a_verdict():
    html = explore.flops_summary_html(9, 12, stub)
    assert "ещё не реализована" in html


def test_sliders_move_the_figure():
    box = explore.flops_sliders(correct)
    params, tokens, summary = box.children
    assert (params.min, params.max, tokens.min, tokens.max) == (6, 12, 9, 14)
    before = summary.value
    params.value = 10
    assert summary.value != before and "6·10²² FLOPs" in summary.value
    tokens.value = 13
    assert "6·10²³ FLOPs" in summary.value


def test_training_time_example_from_spec():
    html = explore.training_time_html(correct, 125e6, 2.5e9)
    assert "1,88·10¹⁸ FLOPs" in html and "≈ 13 ч" in html
    assert "ещё не реализована" in explore.training_time_html(stub, 125e6, 2.5e9)


def test_durations_pick_readable_units():
    assert explore.describe_duration(30) == "≈ 30 с"
    assert explore.describe_duration(90) == "≈ 1,5 мин"
    assert explore.describe_duration(3 * 24 * 3600) == "≈ 3 сут."

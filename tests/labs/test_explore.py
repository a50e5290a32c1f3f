"""Задание 3 лабораторной 7.2: ползунки и оценка времени обучения."""

from feedback import explore


def correct(p, n):
    return 6 * p * n


def stub(p, n):
    raise NotImplementedError


def test_summary_shows_flops_and_time():
    html = explore.flops_summary_html(9, 12, correct)
    assert "10<sup>9</sup>" in html and "6·10²¹ FLOPs" in html and "≈ 4,9 года" in html


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


def seconds(num_flops, peak_flops_per_second, utilization):
    return num_flops / (peak_flops_per_second * utilization)


def test_training_time_example_from_spec():
    html = explore.training_time_html(correct, seconds, 125e6, 2.5e9)
    assert "1,88·10¹⁸ FLOPs" in html and "≈ 13 ч" in html and "40\u00a0% пика" in html
    assert "ещё не реализована" in explore.training_time_html(stub, seconds, 125e6, 2.5e9)


def test_training_time_uses_the_learners_time_function():
    html = explore.training_time_html(correct, lambda f, peak, u: 3600.0, 125e6, 2.5e9)
    assert "≈ 1 ч" in html

    def time_stub(num_flops, peak_flops_per_second, utilization):
        raise NotImplementedError

    broken = explore.training_time_html(correct, time_stub, 125e6, 2.5e9)
    assert "training_seconds" in broken and "ещё не реализована" in broken


def test_durations_pick_readable_units():
    assert explore.describe_duration(30) == "≈ 30 с"
    assert explore.describe_duration(90) == "≈ 1,5 мин"
    assert explore.describe_duration(3 * 24 * 3600) == "≈ 3 сут."
    year = 365 * 24 * 3600
    assert explore.describe_duration(4.8 * year) == "≈ 4,8 года"
    assert explore.describe_duration(1 * year) == "≈ 1 год"
    assert explore.describe_duration(40 * year) == "≈ 40 лет"

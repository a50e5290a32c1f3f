"""Графики: логарифмическая шкала FLOPs и составные столбцы памяти с линией видеокарты."""

import matplotlib
import pytest

matplotlib.use("Agg")

from feedback import flops, plots
from feedback.answers.flops import training_flops


def test_flops_chart_is_log_scaled_and_labelled():
    rows = [{"Scenario": name, "FLOPs": training_flops(p, n)} for name, p, n in flops.SCENARIOS]
    figure = plots.plot_flops_scenarios(rows)
    axes = figure.axes[0]
    assert axes.get_yscale() == "log"
    labels = [text.get_text() for text in axes.texts]
    assert "2,53·10²⁴" in labels and "1,8·10¹⁴" in labels
    assert [tick.get_text() for tick in axes.get_xticklabels()] == [
        n for n, _, _ in flops.SCENARIOS
    ]


def test_memory_chart_stacks_items_and_draws_the_card_limit():
    figure = plots.plot_memory_breakdown(
        {"float32": {"Веса": 14.9, "Adam": 29.8}, "bfloat16": {"Веса": 7.45, "Adam": 14.9}},
        limit_gib=15,
    )
    axes = figure.axes[0]
    heights = [patch.get_height() for patch in axes.patches]
    assert heights == pytest.approx([14.9, 7.45, 29.8, 14.9])
    assert any(line.get_ydata()[0] == 15 for line in axes.get_lines())
    texts = [text.get_text() for text in axes.texts]
    assert "44,7 ГиБ" in texts
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert legend == ["Веса", "Adam", "память видеокарты: 15 ГиБ"]


def test_flops_chart_waits_for_numbers(capsys):
    rows = [{"Scenario": "BERT-Base", "FLOPs": ...}, {"Scenario": "PaLM", "FLOPs": "2e24"}]
    figure = plots.plot_flops_scenarios(rows)
    assert len(figure.axes[0].patches) == 1
    assert plots.plot_flops_scenarios(rows[:1]) is None
    assert "График появится" in capsys.readouterr().out


def test_lab_7_6_chart_shows_measured_steps_against_the_t4_line():
    """7.6: рядом с формулой 7.4 — замеры из записи; батч 8 (оценка по замерам) выше линии T4."""
    import json
    from pathlib import Path

    import matplotlib.pyplot as plt

    from feedback import accumulation, formatting, measured

    lab = "lab_7_6_gradient_accumulation"
    path = Path(__file__).resolve().parents[2] / "solutions" / lab / f"{lab}.ipynb"
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    (chart,) = [
        "".join(c["source"]) for c in cells if "step_memory_breakdowns" in "".join(c["source"])
    ]
    plt.close("all")
    exec(chart, {"accumulation": accumulation, "formatting": formatting})
    axes = plt.gcf().axes[0]
    ticks = [tick.get_text() for tick in axes.get_xticklabels()]
    assert ticks == [
        "батч 1\nформула 7.4",
        "батч 1\nзамер",
        "батч 4\nформула 7.4",
        "батч 4\nзамер",
        "батч 8\nоценка по замерам",
    ]
    record = measured.load_record()
    totals = [text.get_text() for text in axes.texts]
    assert totals[1] == formatting.format_gib(record.row("b1_t4").peak_gib)
    assert totals[3] == formatting.format_gib(record.row("b4_free").peak_gib)
    assert totals[4] == formatting.format_gib(record.extrapolated_peak_gib(8))
    (limit,) = [line.get_ydata()[0] for line in axes.get_lines()]
    tops = {}
    for patch in axes.patches:
        position = round(patch.get_x() + patch.get_width() / 2)
        tops[position] = max(tops.get(position, 0), patch.get_y() + patch.get_height())
    assert tops[1] < limit < tops[4]  # батч 1 помещается, батч 8 — стена
    assert tops[2] < limit  # а по формуле 7.4 поместился бы и батч 4

"""Графики лабораторных: FLOPs сценариев на логарифмической шкале и разбивка памяти.

matplotlib импортируется внутри функций, чтобы ``import feedback`` оставался лёгким.
Каждая функция возвращает фигуру, чтобы тесты и учащиеся могли её сохранить.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from feedback.formatting import format_gib, format_scientific

#: Цвета статей памяти: одинаковые на всех графиках курса.
MEMORY_COLOURS = ("#4c72b0", "#8172b3", "#dd8452", "#55a868", "#c44e52", "#937860")


def plot_flops_scenarios(rows: Sequence[Mapping[str, Any]]) -> Any:
    """Столбцы FLOPs по сценариям на логарифмической шкале с подписями «2,18·10¹⁸».

    Строки, где вместо числа ещё «…», пропускаются; если чисел нет совсем, вместо
    графика печатается подсказка и возвращается None.
    """
    import matplotlib.pyplot as plt

    ready = [row for row in rows if _positive_number(row.get("FLOPs"))]
    if not ready:
        print("График появится, когда в столбце FLOPs будут числа.")
        return None
    names = [str(row["Scenario"]) for row in ready]
    values = [float(row["FLOPs"]) for row in ready]
    figure, axes = plt.subplots(figsize=(8, 4))
    bars = axes.bar(names, values, color="#4c72b0")
    axes.set_yscale("log")
    axes.set_ylabel("FLOPs за эпоху (логарифмическая шкала)")
    axes.set_title("Сколько операций нужно на обучение")
    for bar, value in zip(bars, values, strict=True):
        axes.annotate(
            format_scientific(value),
            (bar.get_x() + bar.get_width() / 2, value),
            ha="center",
            va="bottom",
            fontsize=9,
        )
    axes.set_ylim(bottom=min(values) / 100, top=max(values) * 50)
    axes.tick_params(axis="x", labelrotation=10)
    figure.tight_layout()
    return figure


def _positive_number(value: Any) -> bool:
    try:
        return float(value) > 0
    except (TypeError, ValueError):
        return False


def plot_memory_breakdown(
    breakdowns: Mapping[str, Mapping[str, float]],
    limit_gib: float | None = None,
    title: str = "Из чего складывается память при обучении",
) -> Any:
    """Составные столбцы памяти (ГиБ) для нескольких вариантов, например fp32 и bfloat16.

    ``limit_gib`` рисует горизонтальную линию — память видеокарты.
    """
    import matplotlib.pyplot as plt

    labels = list(breakdowns)
    items = list(dict.fromkeys(name for parts in breakdowns.values() for name in parts))
    figure, axes = plt.subplots(figsize=(9, 4.8))
    bottoms = [0.0] * len(labels)
    for index, item in enumerate(items):
        heights = [breakdowns[label].get(item, 0.0) for label in labels]
        axes.bar(
            labels,
            heights,
            bottom=bottoms,
            label=item,
            color=MEMORY_COLOURS[index % len(MEMORY_COLOURS)],
        )
        bottoms = [b + h for b, h in zip(bottoms, heights, strict=True)]
    for position, total in enumerate(bottoms):
        axes.annotate(format_gib(total), (position, total), ha="center", va="bottom")
    if limit_gib is not None:
        axes.axhline(
            limit_gib,
            color="#222222",
            linestyle="--",
            linewidth=1.5,
            label=f"память видеокарты: {format_gib(limit_gib)}",
        )
    axes.set_xticks(range(len(labels)), [label.replace(", ", "\n") for label in labels])
    axes.set_ylabel("ГиБ")
    axes.set_title(title)
    handles, names = axes.get_legend_handles_labels()
    order = sorted(range(len(names)), key=lambda index: index == 0)  # линия — в конец легенды
    axes.legend(
        [handles[i] for i in order],
        [names[i] for i in order],
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
    )
    figure.tight_layout()
    return figure

"""Задания 3 и 4 лабораторной 7.2: FLOPs ползунками и время обучения.

Два способа исследовать FLOPs, и оба работают в Colab и JupyterLab: поля-формы Colab
(``# @param``) с вызовом :func:`show_flops` и ползунки ipywidgets из
:func:`flops_sliders`. Показывается и время обучения при реальной пропускной
способности видеокарты. :func:`show_training_time` считает время функцией учащегося
из задания 4 (``training_seconds``).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

from feedback.engine.calling import (
    LearnerProblem,
    as_number,
    learner_value,
    observe_call,
    require_function,
)
from feedback.formatting import format_flops, format_number, format_plain, plural

#: Пиковая скорость RTX 4080 в bfloat16 и доля пика, которую реально даёт обучение (MFU).
PEAK_FLOPS_PER_SECOND = 97.5e12
UTILIZATION = 0.4
#: Полезная производительность RTX 4080 при обучении: 40 % от пиковых 97,5 TFLOPS BF16.
USEFUL_FLOPS_PER_SECOND = PEAK_FLOPS_PER_SECOND * UTILIZATION

_YEAR = 365 * 24 * 3600
_UNITS = ((24 * 3600, "сут."), (3600, "ч"), (60, "мин"))


def describe_duration(seconds: float) -> str:
    """Длительность в самых удобных единицах: «≈ 13 ч», «≈ 2,5 сут.», «≈ 4,8 года»."""
    if seconds >= _YEAR:
        years = plural(seconds / _YEAR, "год", "года", "лет", lambda v: format_number(v, 2))
        return f"≈ {years}"
    for size, unit in _UNITS:
        if seconds >= size:
            return f"≈ {format_number(seconds / size, 2)} {unit}"
    return f"≈ {format_plain(seconds, 1)} с"


def _learner_number(fn: Callable, case: dict[str, float], name: str) -> float | str:
    """Число из функции учащегося или HTML с русским вердиктом, если она не готова."""
    try:
        require_function(fn)
        return as_number(learner_value(observe_call(fn, case), case), case)
    except LearnerProblem as problem:
        return (
            "<div class='course7-flops' style='color:#a12622'>"
            f"{html.escape(name)}: {html.escape(problem.headline)}</div>"
        )


def _learner_flops(compute_fn: Callable, case: dict[str, float]) -> float | str:
    """FLOPs из функции учащегося или HTML с русским вердиктом, если она не готова."""
    return _learner_number(compute_fn, case, "compute_num_flops")


def flops_summary_html(log_param_count: int, log_num_tokens: int, compute_fn: Callable) -> str:
    """HTML-строка: P, N, FLOPs по функции учащегося и время на одной видеокарте."""
    case = {"param_count": 10.0**log_param_count, "num_tokens": 10.0**log_num_tokens}
    flops = _learner_flops(compute_fn, case)
    if isinstance(flops, str):
        return flops
    seconds = flops / USEFUL_FLOPS_PER_SECOND
    return (
        "<div class='course7-flops' style='font-size:1.1em'>"
        f"P = 10<sup>{log_param_count}</sup> параметров, "
        f"N = 10<sup>{log_num_tokens}</sup> токенов → "
        f"<b class='course7-flops-value'>{html.escape(format_flops(flops))}</b><br>"
        f"На одной RTX 4080 при {format_number(USEFUL_FLOPS_PER_SECOND)} FLOPS полезной "
        f"работы: <b>{html.escape(describe_duration(seconds))}</b></div>"
    )


def training_time_html(
    compute_fn: Callable,
    time_fn: Callable,
    param_count: float,
    num_tokens: float,
    peak_flops_per_second: float = PEAK_FLOPS_PER_SECOND,
    utilization: float = UTILIZATION,
    speedup_on_four: float = 3.5,
) -> str:
    """Время обучения на одной и на четырёх картах по функциям учащегося.

    FLOPs считает ``compute_fn(param_count, num_tokens)`` (задание 1), секунды —
    ``time_fn(num_flops, peak_flops_per_second, utilization)`` (задание 4).
    """
    case = {"param_count": param_count, "num_tokens": num_tokens}
    flops = _learner_flops(compute_fn, case)
    if isinstance(flops, str):
        return flops
    time_case = {
        "num_flops": flops,
        "peak_flops_per_second": peak_flops_per_second,
        "utilization": utilization,
    }
    seconds = _learner_number(time_fn, time_case, "training_seconds")
    if isinstance(seconds, str):
        return seconds
    percent = format_plain(100 * utilization, 1)
    return (
        "<div class='course7-flops'>"
        f"P = {format_number(param_count)}, N = {format_number(num_tokens)} → "
        f"<b>{html.escape(format_flops(flops))}</b><br>"
        f"Одна видеокарта, пик {format_number(peak_flops_per_second)} FLOPS, "
        f"{html.escape(percent)}\u00a0% пика: "
        f"{format_number(seconds)} с, <b>{html.escape(describe_duration(seconds))}</b><br>"
        f"Четыре видеокарты (ускорение ≈ {format_plain(speedup_on_four, 1)}×): "
        f"<b>{html.escape(describe_duration(seconds / speedup_on_four))}</b></div>"
    )


def show_training_time(
    compute_fn: Callable, time_fn: Callable, param_count: float, num_tokens: float
) -> None:
    """Показывает оценку времени обучения (раздел «От FLOPs ко времени»)."""
    from IPython.display import HTML, display

    display(HTML(training_time_html(compute_fn, time_fn, param_count, num_tokens)))


def show_flops(log_param_count: int, log_num_tokens: int, compute_fn: Callable) -> None:
    """Показывает сводку для одной пары показателей (ячейка с полями Colab)."""
    from IPython.display import HTML, display

    display(HTML(flops_summary_html(log_param_count, log_num_tokens, compute_fn)))


def flops_sliders(compute_fn: Callable) -> Any:
    """Два ползунка ipywidgets: log₁₀ P от 6 до 12 и log₁₀ N от 9 до 14, шаг 1."""
    import ipywidgets as widgets

    style = {"description_width": "initial"}
    params = widgets.IntSlider(
        value=9, min=6, max=12, step=1, description="log_param_count", style=style
    )
    tokens = widgets.IntSlider(
        value=12, min=9, max=14, step=1, description="log_num_tokens", style=style
    )
    summary = widgets.HTML()

    def update(_: Any = None) -> None:
        summary.value = flops_summary_html(params.value, tokens.value, compute_fn)

    params.observe(update, names="value")
    tokens.observe(update, names="value")
    update()
    return widgets.VBox([params, tokens, summary])

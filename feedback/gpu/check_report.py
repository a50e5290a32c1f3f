"""``make gpu-check``: таблица по-русски, график и запись измерения в формате курса.

Запись — :class:`feedback.measured.Record` (происхождение и строки опытов), та же, что
``feedback/data/gpu/2026-12-04-h200.json``: её можно положить рядом и прочитать
:func:`feedback.measured.load_record`. В запись попадают только замеры (поместился, стена,
завис); опыт, упавший по другой причине, — строка таблицы и файл ``…-errors.txt``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from feedback.formatting import bytes_to_gb, format_plain, plural
from feedback.gpu.check_runner import BFC_WAIT_LOG, Outcome
from feedback.measured import Measurement, Provenance, Record

GIB = 1024**3


@dataclass(frozen=True)
class Estimate:
    """Оценка памяти обучения по формулам лабораторной 7.4 (ГиБ по статьям)."""

    items: dict[str, float]

    @property
    def total(self) -> float:
        return sum(self.items.values())


def estimate_lora_training(
    total_params: int,
    trainable_params: int,
    batch_size: int,
    seq_len: int,
    num_layers: int,
    hidden_dim: int,
    accumulation: bool,
) -> Estimate:
    """Веса bf16 + вход int32 + активации bf16 + градиенты и Adam для LoRA во float32."""
    items = {
        "Веса (bfloat16)": bytes_to_gb((total_params - trainable_params) * 2),
        "Веса LoRA (float32)": bytes_to_gb(trainable_params * 4),
        "Входные данные (int32)": bytes_to_gb(batch_size * seq_len * 4),
        "Активации (упрощённо)": bytes_to_gb(batch_size * seq_len * num_layers * hidden_dim * 2),
        "Градиенты LoRA (float32)": bytes_to_gb(trainable_params * 4),
        "Состояние Adam для LoRA": bytes_to_gb(2 * trainable_params * 4),
    }
    if accumulation:
        items["Буфер накопления (float32)"] = bytes_to_gb(trainable_params * 4)
    return Estimate(items)


# --------------------------------------------------------------------------- таблица


def _gib(value: int | None) -> str:
    return "—" if value is None else format_plain(value / GIB, 2)


def _seconds(value: float | None, decimals: int = 1) -> str:
    return "—" if value is None else f"{format_plain(value, decimals)} с"


def memory_text(outcome: Outcome) -> str:
    """Как опыт получил память T4: «пул 14,71 ГиБ (BFC, заранее)» или «свободно … (platform)»."""
    experiment = outcome.experiment
    budget = format_plain(experiment.budget_bytes / GIB, 2)
    if experiment.emulation == "pool":
        return f"пул {budget} ГиБ (BFC, заранее)"
    allocator = "platform" if experiment.allocator == "platform" else "BFC по мере надобности"
    return f"карта занята, кроме {budget} ГиБ ({allocator})"


def outcome_text(outcome: Outcome) -> str:
    """«помещается», «стена: ошибка через 12 с», «стена без ошибки / завис: 75 с»."""
    seconds = format_plain(outcome.seconds, 0 if outcome.seconds >= 10 else 1)
    return {
        "fits": f"помещается ({seconds} с)",
        "wall": f"стена: ошибка через {seconds} с",
        "stall": f"стена без ошибки / завис: {seconds} с",
        "error": "не измерен (см. примечания)",
    }[outcome.status]


def step_text(outcome: Outcome) -> str:
    """Время шага: секунды на шаг (на микрошаг при накоплении) или токены в секунду."""
    result = outcome.result
    if result is None or result.step_s is None:
        return "—"
    if outcome.experiment.kind == "generate" and result.tokens_per_s:
        steps = plural(result.steps, "шаг", "шага", "шагов")
        return f"{format_plain(result.tokens_per_s, 1)} ток/с ({steps})"
    text = f"{format_plain(result.step_s, 4)} с"
    return text + (" на микрошаг" if outcome.experiment.accumulation > 1 else "")


def table(outcomes: Sequence[Outcome]) -> str:
    """Таблица по-русски: опыт, память, исход и секунды, пик, шаг, первый шаг (компиляция)."""
    header = ("Опыт", "Память T4", "Исход", "Пик, ГиБ", "Шаг", "Первый шаг (компиляция)")
    rows = [header]
    for outcome in outcomes:
        result = outcome.result
        rows.append(
            (
                outcome.experiment.title,
                memory_text(outcome),
                outcome_text(outcome),
                _gib(result.peak_bytes if result else None),
                step_text(outcome),
                _seconds(result.first_step_s if result else None),
            )
        )
    widths = [max(len(row[column]) for row in rows) for column in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "  ".join("─" * width for width in widths))
    notes = [f"{outcome.experiment.name}: {outcome.note}" for outcome in outcomes if outcome.note]
    if notes:
        lines += ["", "Примечания:", *(f"  {note}" for note in notes)]
    return "\n".join(line.rstrip() for line in lines)


def fast_wall(outcomes: Sequence[Outcome], within_s: float = 60.0) -> str:
    """Какие распределители в опытах 7.3 дали ошибку нехватки памяти за ``within_s`` секунд."""
    load = [outcome for outcome in outcomes if outcome.experiment.kind == "load"]
    fast = [o for o in load if o.status == "wall" and o.seconds <= within_s]
    if not load:
        return ""
    if not fast:
        return f"Ни один вариант загрузки 7.3 не дал ошибки нехватки памяти за {within_s:.0f} с."
    names = "; ".join(f"{o.experiment.title} — {format_plain(o.seconds, 1)} с" for o in fast)
    return f"Ошибку нехватки памяти за {within_s:.0f} с дали: {names}."


# --------------------------------------------------------------------------- запись


def _note(outcome: Outcome) -> str:
    """Примечание строки записи: что видел опыт, держатель, скорость, сроки."""
    parts = []
    result = outcome.result
    if outcome.held is not None and outcome.held.held_bytes:
        parts.append(
            f"holder held {outcome.held.held_bytes} bytes, left {outcome.held.free_bytes} free"
        )
    if result is not None and result.free_at_start_bytes is not None:
        parts.append(f"free memory seen at start {result.free_at_start_bytes} bytes")
    if result is not None and result.driver_used_bytes is not None:
        parts.append(f"CUDA driver: {result.driver_used_bytes} bytes more in use at the end")
    if result is not None and result.tokens_per_s is not None:
        parts.append(
            f"{result.tokens_per_s:.1f} tokens/s over {result.steps} computed steps "
            f"(prompt {outcome.experiment.prompt_tokens} padded to a multiple of 16, "
            f"+{outcome.experiment.new_tokens} new)"
        )
    if result is not None and result.iterations is not None:
        parts.append(f"{result.iterations} optimizer updates, {result.steps} micro-steps")
    if outcome.status == "stall":
        parts.append(f"no result and no error within {outcome.seconds:.0f} s, stopped")
    if outcome.bfc_waits:
        parts.append(f"XLA logged '{BFC_WAIT_LOG}' {outcome.bfc_waits} times")
    if outcome.status == "wall" and result is not None:
        parts.append(result.error[-200:])
    return "; ".join(parts)


def _round(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)


def _pool(outcome: Outcome) -> str:
    """``t4`` — пул XLA размером с T4, ``held`` — остальная карта занята держателем,
    ``none`` — памяти T4 не было (``--config tiny`` на процессоре)."""
    if outcome.experiment.emulation == "pool" and outcome.mem_fraction is not None:
        return "t4"
    if outcome.experiment.emulation == "held" and outcome.held is not None:
        return "held"
    return "none"


def measurement(outcome: Outcome) -> Measurement:
    """Строка записи курса из исхода опыта (только поместился, стена или завис)."""
    experiment, result = outcome.experiment, outcome.result
    seq_len = experiment.max_length if experiment.kind == "generate" else experiment.seq_len
    return Measurement(
        name=experiment.name,
        lab=experiment.lab,
        config=experiment.config,
        dtype=experiment.dtype,
        batch=experiment.batch,
        accumulation=experiment.accumulation,
        seq_len=seq_len,
        weights_only=experiment.kind == "load",
        allocator=experiment.allocator,
        pool=_pool(outcome),
        mem_fraction=outcome.mem_fraction,
        limit_bytes=result.limit_bytes if result else None,
        outcome=outcome.status,
        peak_bytes=result.peak_bytes if result and outcome.status == "fits" else None,
        weights_bytes=result.weights_bytes if result else None,
        step_s=_round(result.step_s if result else None, 6),
        first_step_s=_round(result.first_step_s if result else None, 2),
        wall_after_s=round(outcome.seconds, 1) if outcome.status != "fits" else None,
        note=_note(outcome),
    )


def record(provenance: Provenance, outcomes: Sequence[Outcome]) -> Record:
    """Запись измерения: замеры — строками, ошибки опытов в неё не попадают."""
    rows = tuple(measurement(o) for o in outcomes if o.status in ("fits", "wall", "stall"))
    return Record(provenance=provenance, rows=rows)


def file_stem(provenance: Provenance, tiny: bool) -> str:
    """Имя файлов прогона: дата и видеокарта — ``2026-12-05-nvidia-h200``."""
    slug = re.sub(r"[^a-z0-9]+", "-", provenance.gpu.lower()).strip("-") or "gpu"
    return f"{provenance.date}-{slug}" + ("-tiny" if tiny else "")


def write_atomic(path: Path, text: str) -> None:
    partial = path.with_name(path.name + ".part")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def write_record(path: Path, data: Record) -> None:
    """JSON записи в том же виде, что записи курса (отступ 1, кириллица как есть)."""
    write_atomic(path, json.dumps(data.to_json(), ensure_ascii=False, indent=1) + "\n")


# --------------------------------------------------------------------------- график

_COLORS = {"fits": "#2e7d32", "wall": "#c62828", "stall": "#ef6c00", "error": "#757575"}
_LABELS = {"fits": "помещается", "wall": "стена (ошибка)", "stall": "завис", "error": "ошибка"}


def chart(path: Path, outcomes: Sequence[Outcome], title: str) -> None:
    """Столбцы пиковой памяти опытов и бюджет T4 каждого; стена и зависание — до бюджета."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [outcome.experiment.title for outcome in outcomes]
    figure, axes = plt.subplots(figsize=(10, 0.55 * len(outcomes) + 1.8))
    for index, outcome in enumerate(outcomes):
        budget = outcome.experiment.budget_bytes / GIB
        result = outcome.result
        peak = result.peak_bytes / GIB if result and result.peak_bytes else None
        if outcome.status == "fits":
            width = peak or 0.0
            label = f"{format_plain(peak, 2)} ГиБ" if peak else "помещается; пик не измерен"
        else:
            width, label = budget, outcome_text(outcome)
        hatch = None if outcome.status == "fits" else "//"
        axes.barh(index, width, color=_COLORS[outcome.status], hatch=hatch, alpha=0.85)
        axes.plot([budget, budget], [index - 0.4, index + 0.4], color="black", linewidth=1.5)
        axes.text(width, index, "  " + label, va="center", fontsize=8)
    axes.set_yticks(range(len(outcomes)), names, fontsize=8)
    axes.invert_yaxis()
    axes.set_xlabel("Пиковая память, ГиБ (чёрная черта — память T4 опыта)")
    axes.set_title(title, fontsize=9)
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=_COLORS[status]) for status in ("fits", "wall", "stall")
    ]
    axes.legend(handles, [_LABELS[s] for s in ("fits", "wall", "stall")], fontsize=8)
    axes.set_xlim(0, max(o.experiment.budget_bytes for o in outcomes) / GIB * 1.6)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)

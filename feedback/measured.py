"""Память и время GPU-лабораторных, измеренные на настоящей видеокарте (``make gpu-check``).

Каждое число о памяти GPU, которое называют лабораторные, README и руководство, берётся отсюда,
а не из оценки: из записи измерения в ``feedback/data/gpu/`` — строки опытов и откуда они
(видеокарта, драйвер, версии jax, Keras и keras-hub, дата, как эмулировалась T4). Запись курса —
:data:`COURSE_RECORD`; новую пишет ``make gpu-check`` рядом, в том же виде.

Модуль лёгкий (только стандартная библиотека): его читают и тетрадки CPU-лабораторных.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path

from feedback.formatting import bytes_to_gb

#: Запись, из которой лабораторные берут свои числа (имя файла в ``feedback/data/gpu/``).
COURSE_RECORD = "2026-12-04-h200.json"

#: Исходы опыта: поместилось; упёрлось в стену (ошибка нехватки памяти); ни ответа, ни ошибки.
OUTCOMES = ("fits", "wall", "stall")

_MONTHS = (
    "января февраля марта апреля мая июня июля августа сентября октября ноября декабря"
).split()


@dataclass(frozen=True)
class Provenance:
    """Где и чем измерено: без этого число о памяти ничего не значит."""

    date: str
    gpu: str
    gpu_memory_mib: int
    driver: str
    python: str
    jax: str
    jax_plugin: str
    keras: str
    keras_hub: str
    t4_emulation: str
    method: str
    source: str

    def label(self) -> str:
        """Короткая подпись по-русски: «NVIDIA H200, jax 0.11.2, Keras 3.15.1, 4 декабря 2026»."""
        year, month, day = self.date.split("-")
        when = f"{int(day)} {_MONTHS[int(month) - 1]} {year}"
        return f"{self.gpu}, jax {self.jax}, Keras {self.keras}, keras-hub {self.keras_hub}, {when}"


@dataclass(frozen=True)
class Measurement:
    """Один опыт: модель, тип весов, батч, память и время.

    ``pool`` — ``"t4"``, если JAX получил пул размером с T4 (``limit_bytes`` — сколько он
    сообщил), или ``"uncapped"`` — без ограничения; ``peak_bytes`` — пик
    ``memory_stats()['peak_bytes_in_use']``; ``wall_after_s`` — через сколько секунд пришла
    ошибка нехватки памяти (для исхода ``"wall"``).
    """

    name: str
    lab: str
    config: str
    dtype: str
    batch: int
    accumulation: int
    seq_len: int
    weights_only: bool
    allocator: str
    pool: str
    mem_fraction: str | None
    limit_bytes: int | None
    outcome: str
    peak_bytes: int | None
    weights_bytes: int | None
    step_s: float | None
    first_step_s: float | None
    wall_after_s: float | None
    note: str

    @property
    def peak_gib(self) -> float | None:
        return None if self.peak_bytes is None else bytes_to_gb(self.peak_bytes)

    @property
    def weights_gib(self) -> float | None:
        return None if self.weights_bytes is None else bytes_to_gb(self.weights_bytes)


@dataclass(frozen=True)
class Record:
    """Запись одного прогона измерений: откуда и строки опытов."""

    provenance: Provenance
    rows: tuple[Measurement, ...]

    def row(self, name: str) -> Measurement:
        for row in self.rows:
            if row.name == name:
                return row
        raise KeyError(f"в записи {self.provenance.date} нет опыта {name!r}")

    def activation_gib_per_example(self) -> float:
        """Сколько добавляет к пику каждый следующий пример батча (батч 2 минус батч 1)."""
        return self.row("b2_t4").peak_gib - self.row("b1_t4").peak_gib

    def extrapolated_peak_gib(self, batch: int) -> float:
        """Пик для батча, которого не мерили: прямая через батчи 1 и 2 (это оценка, не замер)."""
        return self.row("b1_t4").peak_gib + (batch - 1) * self.activation_gib_per_example()

    def to_json(self) -> dict:
        """Запись в том виде, в каком она лежит в файле."""
        return {
            "provenance": {f.name: getattr(self.provenance, f.name) for f in fields(Provenance)},
            "rows": [
                {f.name: getattr(row, f.name) for f in fields(Measurement)} for row in self.rows
            ],
        }


def parse_record(data: dict) -> Record:
    """Запись из JSON; лишние или недостающие поля — ошибка, а не молчаливый ноль."""
    rows = tuple(Measurement(**row) for row in data["rows"])
    for row in rows:
        if row.outcome not in OUTCOMES:
            raise ValueError(f"опыт {row.name}: исход {row.outcome!r} не из {OUTCOMES}")
    return Record(provenance=Provenance(**data["provenance"]), rows=rows)


def load_record(path: str | Path | None = None) -> Record:
    """Запись курса (:data:`COURSE_RECORD`) или запись по пути ``path``."""
    if path is None:
        text = resources.files("feedback").joinpath("data", "gpu", COURSE_RECORD).read_text("utf-8")
    else:
        text = Path(path).read_text(encoding="utf-8")
    return parse_record(json.loads(text))

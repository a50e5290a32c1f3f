"""Сколько памяти видеокарты на самом деле получит JAX — единственное место, где это знают.

Есть две разные цифры, и их легко перепутать:

* **вся память карты** — что сообщает ``nvidia-smi`` (T4 с включённым ECC — 15 360 МиБ);
* **предел XLA** — что сообщает сам JAX: ``device.memory_stats()["bytes_limit"]``.
  В нём *уже учтена* доля ``XLA_PYTHON_CLIENT_MEM_FRACTION`` (по умолчанию 0,75), и
  умножать его на долю второй раз нельзя — так лабораторная 7.3 занижала память на 10 %.

С ``XLA_PYTHON_CLIENT_ALLOCATOR=platform`` JAX ничего не занимает заранее и берёт память
по мере надобности, а доля не действует вовсе: доступна вся карта за вычетом контекста
CUDA (около 0,3 ГиБ).

Модуль лёгкий: стандартная библиотека и :mod:`feedback.formatting`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from feedback.formatting import format_plain

#: Доля памяти, которую JAX берёт по умолчанию, если её не задали.
DEFAULT_MEM_FRACTION = 0.75
#: Переменные доли: новое имя XLA_CLIENT_MEM_FRACTION и старое, как в оригинале курса.
FRACTION_ENV_VARS = ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION")
ALLOCATOR_ENV_VAR = "XLA_PYTHON_CLIENT_ALLOCATOR"
PREALLOCATE_ENV_VAR = "XLA_PYTHON_CLIENT_PREALLOCATE"
#: Память, которую занимает сам контекст CUDA (измерено на T4, около 0,3 ГиБ).
CUDA_CONTEXT_BYTES = 300 * 1024**2
#: T4 с включённым ECC: столько сообщает nvidia-smi в Colab и Kaggle.
T4_TOTAL_BYTES = 15_360 * 1024**2


@dataclass(frozen=True)
class XlaMemorySettings:
    """Настройки распределителя памяти JAX, прочитанные из переменных окружения."""

    allocator: str = "bfc"  # "bfc" (по умолчанию) или "platform"
    fraction: float = DEFAULT_MEM_FRACTION
    preallocate: bool = True

    @property
    def on_demand(self) -> bool:
        """``platform``: память берётся по мере надобности, доля не действует."""
        return self.allocator == "platform"


def xla_memory_settings(env: Mapping[str, str] | None = None) -> XlaMemorySettings:
    """Читает ``XLA_PYTHON_CLIENT_ALLOCATOR``, долю памяти и ``…_PREALLOCATE``."""
    env = os.environ if env is None else env
    allocator = env.get(ALLOCATOR_ENV_VAR, "").strip().lower()
    allocator = "platform" if allocator == "platform" else "bfc"
    fraction = DEFAULT_MEM_FRACTION
    for name in FRACTION_ENV_VARS:
        try:
            value = float(env.get(name, ""))
        except ValueError:
            continue
        if 0 < value <= 1:
            fraction = value
            break
    preallocate = env.get(PREALLOCATE_ENV_VAR, "").strip().lower() not in ("false", "0")
    return XlaMemorySettings(allocator, fraction, preallocate and allocator == "bfc")


@dataclass(frozen=True)
class UsableMemory:
    """Память, которую получит модель, и по-русски — откуда взялась эта цифра."""

    bytes: int
    how: str

    @property
    def gib(self) -> float:
        return self.bytes / 1024**3


def _percent(fraction: float) -> str:
    """«90 %» с неразрывным пробелом, «92,5 %» с десятичной запятой."""
    return f"{format_plain(fraction * 100, 1)}\u00a0%"


def usable_memory(
    total_bytes: int | None,
    limit_bytes: int | None = None,
    settings: XlaMemorySettings | None = None,
) -> UsableMemory | None:
    """Сколько памяти достанется модели на одной видеокарте.

    ``limit_bytes`` — предел, который сообщил JAX (в нём доля уже учтена): он и есть
    ответ. Иначе считаем от всей памяти карты ``total_bytes`` по настройкам XLA.
    ``None`` — если не известно ни то, ни другое.
    """
    settings = settings or XlaMemorySettings()
    if limit_bytes is not None:
        return UsableMemory(
            int(limit_bytes),
            "предел, который сообщил сам JAX (memory_stats, bytes_limit); "
            "доля памяти XLA в нём уже учтена",
        )
    if total_bytes is None:
        return None
    if settings.on_demand:
        return UsableMemory(
            max(int(total_bytes) - CUDA_CONTEXT_BYTES, 0),
            "вся память карты без ≈ 0,3 ГиБ на контекст CUDA: при "
            f"{ALLOCATOR_ENV_VAR}=platform JAX берёт память по мере надобности, "
            "доля не действует",
        )
    usable = min(int(total_bytes * settings.fraction), int(total_bytes) - CUDA_CONTEXT_BYTES)
    return UsableMemory(
        max(usable, 0),
        f"{_percent(settings.fraction)} всей памяти карты (доля XLA_PYTHON_CLIENT_MEM_FRACTION)",
    )

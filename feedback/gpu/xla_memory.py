"""Сколько памяти видеокарты на самом деле получит JAX — единственное место, где это знают.

Есть две разные цифры, и их легко перепутать:

* **вся память карты** — что сообщает ``nvidia-smi`` (T4 с включённым ECC — 15 360 МиБ);
* **предел XLA** — что сообщает сам JAX: ``device.memory_stats()["bytes_limit"]``.
  В нём *уже учтена* доля памяти (``XLA_CLIENT_MEM_FRACTION``, старое имя —
  ``XLA_PYTHON_CLIENT_MEM_FRACTION``), и умножать его на долю второй раз нельзя.

Что делает JAX без явной доли, зависит от версии. Старые версии занимают 75 % памяти и дальше
не растут; новые (документация JAX, «GPU memory allocation», 2026) выбирают политику XLA
«0.75+»: занимают 75 %, а пул может расти до всей карты. С
``XLA_PYTHON_CLIENT_PREALLOCATE=false`` распределитель BFC ничего не занимает заранее, но
предел остаётся долей (75 %, если доля не задана). Поэтому лабораторные задают долю явно
(:data:`feedback.settings.LAB_WALL_XLA`, :data:`feedback.settings.LAB_TRAINING_XLA`), под обоими
именами: старые JAX читают только старое, у новых оно устарело.

``XLA_PYTHON_CLIENT_ALLOCATOR=platform`` по документации берёт память по мере надобности и
отдаёт её обратно, а доля не действует. Но с openxla/xla#41761 (JAX 0.10 и новее) platform на
деле идёт через тот же BFC (jax-ml/jax#39145; исправление — openxla/xla#45668, в какой версии
JAX оно вышло, курс не проверял). Поэтому здесь platform считается «по мере надобности» только
для JAX до 0.10, а для новых — BFC с долей; лабораторные platform больше не задают.

Модуль лёгкий: стандартная библиотека и :mod:`feedback.formatting`.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from feedback.formatting import format_plain

#: Доля памяти, которую JAX берёт по умолчанию, если её не задали (начальная: новые версии
#: JAX с предвыделением могут расти и дальше, до всей карты).
DEFAULT_MEM_FRACTION = 0.75
#: Переменные доли: новое имя XLA_CLIENT_MEM_FRACTION и старое, как в оригинале курса.
FRACTION_ENV_VARS = ("XLA_CLIENT_MEM_FRACTION", "XLA_PYTHON_CLIENT_MEM_FRACTION")
ALLOCATOR_ENV_VAR = "XLA_PYTHON_CLIENT_ALLOCATOR"
PREALLOCATE_ENV_VAR = "XLA_PYTHON_CLIENT_PREALLOCATE"
#: Первая версия JAX, в которой platform идёт через BFC (openxla/xla#41761, jax-ml/jax#39145).
PLATFORM_VIA_BFC_SINCE = (0, 10)
#: Память, которую занимает сам контекст CUDA (измерено на T4, около 0,3 ГиБ).
CUDA_CONTEXT_BYTES = 300 * 1024**2
#: T4 с включённым ECC: столько сообщает nvidia-smi в Colab и Kaggle.
T4_TOTAL_BYTES = 15_360 * 1024**2


def _version_tuple(version: str | None) -> tuple[int, ...] | None:
    """«0.10.2» → (0, 10, 2); ``None`` или непонятная строка — ``None``."""
    if not version:
        return None
    parts = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts) or None


def installed_jax_version() -> str | None:
    """Версия установленного jax по метаданным пакета (jax не импортируется)."""
    from importlib import metadata

    try:
        return metadata.version("jax")
    except metadata.PackageNotFoundError:
        return None


def platform_on_demand(jax_version: str | None) -> bool:
    """Берёт ли platform память по мере надобности, как в документации: только до JAX 0.10.

    Неизвестная версия считается новой: так оценка памяти не завышается.
    """
    parsed = _version_tuple(jax_version)
    return parsed is not None and parsed < PLATFORM_VIA_BFC_SINCE


@dataclass(frozen=True)
class XlaMemorySettings:
    """Настройки распределителя памяти JAX, прочитанные из переменных окружения."""

    allocator: str = "bfc"  # "bfc" (по умолчанию) или "platform"
    fraction: float = DEFAULT_MEM_FRACTION
    preallocate: bool = True
    #: Доля задана явно (иначе новые JAX с предвыделением могут расти сверх 75 %).
    fraction_set: bool = False
    #: platform в этой версии JAX — действительно «по мере надобности» (JAX до 0.10).
    platform_passthrough: bool = False

    @property
    def on_demand(self) -> bool:
        """``platform`` в JAX до 0.10: память берётся по мере надобности, доля не действует."""
        return self.allocator == "platform" and self.platform_passthrough


def xla_memory_settings(
    env: Mapping[str, str] | None = None, jax_version: str | None = None
) -> XlaMemorySettings:
    """Читает ``XLA_PYTHON_CLIENT_ALLOCATOR``, долю памяти и ``…_PREALLOCATE``.

    ``jax_version`` — версия JAX (по умолчанию установленная): от неё зависит, что значит
    platform.
    """
    env = os.environ if env is None else env
    allocator = env.get(ALLOCATOR_ENV_VAR, "").strip().lower()
    allocator = "platform" if allocator == "platform" else "bfc"
    fraction, fraction_set = DEFAULT_MEM_FRACTION, False
    for name in FRACTION_ENV_VARS:
        try:
            value = float(env.get(name, ""))
        except ValueError:
            continue
        if 0 < value <= 1:
            fraction, fraction_set = value, True
            break
    version = installed_jax_version() if jax_version is None else jax_version
    passthrough = allocator == "platform" and platform_on_demand(version)
    preallocate = env.get(PREALLOCATE_ENV_VAR, "").strip().lower() not in ("false", "0")
    return XlaMemorySettings(
        allocator, fraction, preallocate and not passthrough, fraction_set, passthrough
    )


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
            f"{ALLOCATOR_ENV_VAR}=platform этот JAX (до 0.10) берёт память по мере "
            "надобности, доля не действует",
        )
    usable = min(int(total_bytes * settings.fraction), int(total_bytes) - CUDA_CONTEXT_BYTES)
    how = f"{_percent(settings.fraction)} всей памяти карты (доля памяти XLA)"
    if not settings.fraction_set and settings.preallocate:
        how += (
            "; доля не задана, и новые версии JAX могут занять и больше, вплоть до всей карты, "
            "так что это нижняя граница"
        )
    return UsableMemory(max(usable, 0), how)

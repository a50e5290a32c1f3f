"""Кэши оценивания на машине, где выполняются единицы: только для чтения из песочницы.

Крошечная Gemma для GPU-лабораторных собирается один раз на машину (несколько секунд) и
подключается в песочницу только для чтения — работы учащихся не могут её испортить
друг для друга.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV = "COURSE7_GRADING_CACHE"


def cache_root(preferred: str | None = None) -> Path:
    """Папка кэшей: из задания, ``$COURSE7_GRADING_CACHE`` или ``~/.cache/course7-grading``."""
    chosen = preferred or os.environ.get(CACHE_ENV)
    return Path(chosen).expanduser() if chosen else Path.home() / ".cache" / "course7-grading"


def tiny_model_cache(root: Path) -> Path:
    """Папка с собранной крошечной Gemma (``COURSE7_CACHE_DIR`` для ядра); собирает при нужде."""
    from feedback.tiny_gemma import tiny_preset_path

    root.mkdir(parents=True, exist_ok=True)
    tiny_preset_path(cache_dir=root, isolated=True)
    return root

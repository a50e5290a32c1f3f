"""Кэши оценивания на машине, где выполняются единицы: только для чтения из песочницы.

Крошечная Gemma для GPU-лабораторных собирается один раз на машину (несколько секунд) и
подключается в песочницу только для чтения — работы учащихся не могут её испортить
друг для друга.
"""

from __future__ import annotations

from pathlib import Path

from feedback.settings import GRADING_CACHE

# Настройки кэша компиляции JAX — с другими переменными сторонних библиотек в feedback/settings.py;
# ядра оценивания берут их отсюда, make test — командой
# :mod:`feedback.teacher.commands.caches`.
from feedback.settings import JAX_COMPILATION_CACHE_ENV as JAX_COMPILATION_CACHE_ENV

CACHE_ENV = GRADING_CACHE.name


def cache_root(preferred: str | None = None) -> Path:
    """Папка кэшей: из задания, ``$COURSE7_GRADING_CACHE`` или ``~/.cache/course7-grading``."""
    return Path(preferred).expanduser() if preferred else GRADING_CACHE.read()


def tiny_model_cache(root: Path) -> Path:
    """Папка с собранной крошечной Gemma (``COURSE7_CACHE_DIR`` для ядра); собирает при нужде.

    Если на этой машине та же сборка уже лежит в обычном кэше курса (преподаватель сам
    выполнял GPU-лабораторные в учебном режиме), она копируется, а не собирается заново.
    """
    from feedback.gpu.tiny_gemma import default_cache_dir, tiny_preset_path

    root.mkdir(parents=True, exist_ok=True)
    tiny_preset_path(cache_dir=root, isolated=True, reuse_from=default_cache_dir())
    return root

"""Где выполняется тетрадка: Google Colab, Kaggle или свой компьютер.

От этого зависят подсказки учащемуся: как включить видеокарту, куда положить ключ
Kaggle, где включается интернет. Модуль ничего не импортирует из пакета.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping


def detect_platform(
    env: Mapping[str, str] | None = None, modules: Mapping[str, object] | None = None
) -> str:
    """Возвращает ``"colab"``, ``"kaggle"`` или ``"local"``."""
    env = os.environ if env is None else env
    modules = sys.modules if modules is None else modules
    if "google.colab" in modules or "COLAB_RELEASE_TAG" in env or "COLAB_GPU" in env:
        return "colab"
    if "KAGGLE_KERNEL_RUN_TYPE" in env or "KAGGLE_URL_BASE" in env:
        return "kaggle"
    return "local"

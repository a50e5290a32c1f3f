"""Учебный режим с крошечной моделью: включён ли он в этом процессе.

Самый нижний слой помощников GPU-лабораторных: модуль импортирует из пакета только
реестр переменных :mod:`feedback.settings`, поэтому его могут читать и :mod:`feedback.qa_data`, и
:mod:`feedback.runtime` без круга импортов (раньше был круг
``qa_data → runtime → tiny_gemma → qa_data``).

Режим задаётся переменной ``COURSE7_TINY`` (``1`` — только крошечная модель,
``0`` — только настоящая), а если она не задана — решением последнего вызова
:func:`feedback.runtime.choose_preset`, который запоминает его здесь.
"""

from __future__ import annotations

from collections.abc import Mapping

from feedback.settings import TINY

TINY_ENV_VAR = TINY.name

# Решение последнего вызова choose_preset в этом процессе (None — ещё не вызывали).
_last_choice_tiny: bool | None = None


def tiny_setting(env: Mapping[str, str] | None = None) -> bool | None:
    """``COURSE7_TINY``: ``True`` — только крошечная модель, ``False`` — только настоящая,
    ``None`` — решать по наличию видеокарты."""
    return TINY.read(env)


def remember_choice(tiny: bool) -> None:
    """Запоминает, что выбрал :func:`feedback.runtime.choose_preset` в этом процессе."""
    global _last_choice_tiny
    _last_choice_tiny = bool(tiny)


def forget_choice() -> None:
    """Забывает выбор (для тестов и перезапуска лабораторной в том же процессе)."""
    global _last_choice_tiny
    _last_choice_tiny = None


def is_tiny_mode(env: Mapping[str, str] | None = None) -> bool:
    """Учебный режим: ``COURSE7_TINY=1`` или ``choose_preset`` выбрал крошечную модель."""
    setting = tiny_setting(env)
    if setting is not None:
        return setting
    return bool(_last_choice_tiny)

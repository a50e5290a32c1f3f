"""Проверки и помощники курса 7 «Ускорьте свою модель».

Лёгкий пакет: ``from feedback import flops, memory, formatting`` не тянет ни jax,
ни keras, ни tensorflow, ни torch — только то, что уже есть в Colab. Модули для
GPU-лабораторных импортируют тяжёлые библиотеки сами и только когда нужны.
"""

from feedback.result import CheckFailed, CheckResult, strict_mode

__all__ = ["CheckFailed", "CheckResult", "strict_mode"]
__version__ = "0.1.0"

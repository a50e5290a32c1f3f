"""Плагин pytest для ``make nbval``: что решение обязано показать, выполнившись целиком.

nbval в режиме ``--nbval-lax`` проверяет только, что ни одна ячейка не упала. Для путей,
которые другие тесты не проходят целиком (обучение GPU-лабораторной в учебном режиме с выводом
после каждой эпохи), здесь названы строки, которые должны появиться в выводах тетрадки: если
после её последней ячейки какой-то строки нет, последняя ячейка падает с их списком.
"""

from __future__ import annotations

from pathlib import Path

import pytest

#: Тетрадка → строки, которые её выводы должны содержать.
EXPECTED = {
    "lab_7_5_bfloat16_lora.ipynb": (
        "Учебный режим: крошечная модель вместо gemma3_4b_text",
        "--- Generations after epoch 4 ---",
    ),
    "lab_7_6_gradient_accumulation.ipynb": ("--- Generations after epoch 4 ---",),
}

_shown: dict[str, list[str]] = {}


def output_text(output) -> str:
    """Текст одного вывода ячейки: поток, text/plain и text/html, ошибка."""
    if output.get("output_type") == "stream":
        return output.get("text", "")
    if output.get("output_type") == "error":
        return "\n".join([output.get("ename", ""), output.get("evalue", "")])
    data = output.get("data", {})
    return "\n".join(str(data.get(kind, "")) for kind in ("text/plain", "text/html"))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    name = Path(str(item.fspath)).name
    if call.when != "call" or name not in EXPECTED or not hasattr(item, "test_outputs"):
        return
    _shown.setdefault(name, []).extend(output_text(o) for o in item.test_outputs or [])
    cells = [other for other in item.session.items if other.parent is item.parent]
    if cells[-1] is not item or not report.passed:
        return
    text = "\n".join(_shown.pop(name, []))
    missing = [line for line in EXPECTED[name] if line not in text]
    if missing:
        report.outcome = "failed"
        report.longrepr = f"{name}: в выводах тетрадки нет строк {missing}"

"""Проверка списка генераций (задания 1 и 2 лабораторной 7.1): сторона наблюдения.

Здесь проверка только описывает список учащегося (:func:`feedback.engine.values.describe`);
что считается верным списком и подсказки к ошибкам — в :mod:`feedback.answers.generation`
(в песочнице оценивания этой папки нет, и код учащегося не может спросить вердикт).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from feedback.engine.graded import GradedCheck, graded_check
from feedback.engine.result import CheckResult
from feedback.engine.values import describe
from feedback.generation.prompts import PROMPTS

CHECK_TITLE = "generations"


def _observe_generations(generations: Any, prompts: Sequence[str] = PROMPTS) -> dict[str, Any]:
    return describe(generations)


GENERATIONS = GradedCheck(
    "generation.check_generations",
    CHECK_TITLE,
    _observe_generations,
    "generation.judge_generations",
)


@graded_check(GENERATIONS)
def check_generations(generations: Any, prompts: Sequence[str] = PROMPTS) -> CheckResult:
    """Проверяет список генераций: по одной непустой строке на запрос, в том же порядке,
    и каждая продолжает свой запрос (Keras Hub возвращает запрос вместе с продолжением).
    """

"""Данные сводки по классу: задания, их ошибки и что считать долгой работой.

Их собирает :func:`feedback.teacher.analytics.class_data` из рабочей папки, а показывают
страница преподавателя (:mod:`feedback.teacher.summary`) и список ошибок к лекции. Отдельный
модуль — чтобы сводка и аналитика не импортировали друг друга.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from feedback.answers.mistakes import NOT_ASSESSED
from feedback.engine.result import UNKNOWN

#: Коды, которые не ошибки по существу: в список к лекции не попадают.
NOT_MISTAKES = {UNKNOWN, NOT_ASSESSED}


@dataclass
class TaskStats:
    """Задание автопроверки по классу: сколько работ, сколько прошли, какие ошибки."""

    lab: str
    task: str
    total: int = 0
    passed: int = 0
    mistakes: Counter = field(default_factory=Counter)
    hints: dict[str, Counter] = field(default_factory=dict)

    @property
    def failed(self) -> int:
        return self.total - self.passed

    @property
    def pass_rate(self) -> float:
        return self.passed / self.total if self.total else 0.0

    def share(self, mistake: str) -> float:
        """Доля работ задания с этой ошибкой (от всех работ задания)."""
        return self.mistakes[mistake] / self.total if self.total else 0.0


#: Непройденная проверка без строки в mistakes.csv (оценена версией без кодов ошибок).
NO_CODE = "—"


@dataclass
class ClassData:
    """Всё, что показывает сводка: по лабораторным, заданиям и спискам таблиц."""

    labs: list[str]
    scores: dict[str, list[tuple[float, float]]]  # лаб → [(баллы, максимум)]
    tasks: dict[str, list[TaskStats]]  # лаб → задания по порядку выпуска
    problems: list[dict[str, str]]
    review: list[dict[str, str]]
    similar: list[dict[str, str]]
    pending: list[dict[str, Any]]
    slowest: list[dict[str, str]]

    def top_mistakes(self, lab: str, count: int = 3) -> list[tuple[str, int, str]]:
        """Самые частые ошибки лабораторной: (код, сколько раз, самая частая подсказка)."""
        total: Counter = Counter()
        hints: dict[str, Counter] = {}
        for stats in self.tasks.get(lab, []):
            for mistake, number in stats.mistakes.items():
                if mistake in NOT_MISTAKES or mistake == NO_CODE:
                    continue
                total[mistake] += number
                hints.setdefault(mistake, Counter()).update(stats.hints.get(mistake, {}))
        ranked = sorted(total.items(), key=lambda item: (-item[1], item[0]))[:count]
        return [
            (mistake, number, hints[mistake].most_common(1)[0][0] if hints[mistake] else "")
            for mistake, number in ranked
        ]


#: Долгая работа: не меньше SLOW_SECONDS и во SLOW_FACTOR раз дольше медианы своей
#: лабораторной (у GPU-лабораторных своя медиана).
SLOW_SECONDS = 5.0
SLOW_FACTOR = 3.0

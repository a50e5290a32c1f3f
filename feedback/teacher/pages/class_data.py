"""Данные сводки по классу: задания, их ошибки и что считать долгой работой.

Их собирает :func:`feedback.teacher.pages.analytics.class_data` из таблиц класса (только что
записанных ``make grade`` или из рабочей папки) и базы оценок, а показывают
страница преподавателя (:mod:`feedback.teacher.pages.summary`) и список ошибок к лекции. Отдельный
модуль — чтобы сводка и аналитика не импортировали друг друга.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from feedback.teacher.core.tables import Problem, ReviewRow, SimilarRow, TimingRow
from feedback.teacher.records.mistakes import NOT_ATTEMPTED, NOT_MISTAKES


@dataclass
class TaskStats:
    """Задание автопроверки по классу: сколько работ, сколько прошли, какие ошибки.

    ``mistakes`` — сколько работ задания с каждой ошибкой (доли в таблице сводки),
    ``learners`` — кто именно её сделал: в списке к лекции учащийся с одной ошибкой в
    четырёх заданиях — один учащийся, а не четыре; ``students`` — все, чьё задание оценено.
    """

    lab: str
    task: str
    total: int = 0
    passed: int = 0
    mistakes: Counter = field(default_factory=Counter)
    hints: dict[str, Counter] = field(default_factory=dict)
    learners: dict[str, set[str]] = field(default_factory=dict)
    students: set[str] = field(default_factory=set)

    def add_mistake(self, student: str, mistake: str, hint: str = "") -> None:
        """Ошибка ``mistake`` в работе учащегося ``student`` (и подсказка, которую он видел)."""
        self.mistakes[mistake] += 1
        self.learners.setdefault(mistake, set()).add(student)
        if hint:
            self.hints.setdefault(mistake, Counter())[hint] += 1

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


@dataclass(frozen=True)
class Pending:
    """Работа, которая ждёт преподавателя (:func:`feedback.teacher.pages.analytics.pending_manual`).

    ``tasks``/``points`` — ответы, которые ждут ручной оценки, и их баллы; ``flagged``/
    ``flagged_points`` — проверки автопроверки на просмотре и их баллы.
    """

    student_id: str
    lab: str
    tasks: list[str]
    points: float
    flagged: list[str]
    flagged_points: float


@dataclass(frozen=True)
class Reopened:
    """Снятая ручная оценка, чей ответ ещё ждёт проверки: что изменилось и что было.

    Строка manual_archive.csv (:class:`feedback.teacher.core.tables.ManualArchiveRow`) и разница
    прежнего и нового ответа построчно: ``diff`` — пары (вид, строка), вид — ``"-"`` (было),
    ``"+"`` (стало), ``" "`` (то же) или ``"@"`` (заголовок куска).
    """

    student_id: str
    lab: str
    task: str
    points: str
    comment: str
    diff: list[tuple[str, str]]


@dataclass
class ClassData:
    """Всё, что показывает сводка: по лабораторным, заданиям и спискам таблиц."""

    labs: list[str]
    scores: dict[str, list[tuple[float, float]]]  # лаб → [(баллы, максимум)]
    tasks: dict[str, list[TaskStats]]  # лаб → задания по порядку выпуска
    problems: list[Problem]  # problems.csv
    review: list[ReviewRow]  # needs_review.csv
    similar: list[SimilarRow]  # similar.csv
    pending: list[Pending]
    slowest: list[TimingRow]  # долгие работы из timings.csv, самые долгие первыми
    #: Названия из выпуска, как в отчёте учащегося: лабораторная → «Лабораторная 7.2. …»,
    #: (лабораторная, grade_id) → «Задание 1. …» или «Вопрос 1».
    titles: dict[str, str] = field(default_factory=dict)
    task_titles: dict[tuple[str, str], str] = field(default_factory=dict)
    #: Снятые ручные оценки, чьи ответы ещё ждут проверки (manual_archive.csv).
    reopened: list[Reopened] = field(default_factory=list)
    #: Таблицы рабочей папки, на которые ссылается страница, и строк в changes.csv.
    tables: list[str] = field(default_factory=list)
    changes: int = 0
    #: Когда составлена: «5 декабря 2026, 09:10 (UTC+03:00)».
    as_of: str = ""

    def lab_title(self, lab: str) -> str:
        return self.titles.get(lab) or lab

    def task_title(self, lab: str, task: str) -> str:
        return self.task_titles.get((lab, task)) or task

    def works(self, lab: str) -> int:
        """Сколько учащихся сдали лабораторную (у кого оценено хоть одно задание)."""
        students: set[str] = set()
        for stats in self.tasks.get(lab, []):
            students |= stats.students
        return len(students)

    def not_attempted(self, lab: str) -> int:
        """Сколько учащихся не приступали хотя бы к одному заданию автопроверки лабораторной."""
        students: set[str] = set()
        for stats in self.tasks.get(lab, []):
            students |= stats.learners.get(NOT_ATTEMPTED, set())
        return len(students)

    def top_mistakes(self, lab: str, count: int = 3) -> list[tuple[str, int, str]]:
        """Самые частые ошибки лабораторной: (код, у скольких учащихся, самая частая подсказка).

        Считаются учащиеся, а не задания: одна и та же ошибка в четырёх заданиях одной
        работы — один учащийся.
        """
        learners: dict[str, set[str]] = {}
        hints: dict[str, Counter] = {}
        for stats in self.tasks.get(lab, []):
            for mistake, who in stats.learners.items():
                if mistake in NOT_MISTAKES or mistake == NO_CODE:
                    continue
                learners.setdefault(mistake, set()).update(who)
                hints.setdefault(mistake, Counter()).update(stats.hints.get(mistake, {}))
        ranked = sorted(
            ((mistake, len(who)) for mistake, who in learners.items() if who),
            key=lambda item: (-item[1], item[0]),
        )[:count]
        return [
            (mistake, number, hints[mistake].most_common(1)[0][0] if hints[mistake] else "")
            for mistake, number in ranked
        ]


#: Долгая работа: не меньше SLOW_SECONDS и во SLOW_FACTOR раз дольше медианы своей
#: лабораторной (у GPU-лабораторных своя медиана).
SLOW_SECONDS = 5.0
SLOW_FACTOR = 3.0

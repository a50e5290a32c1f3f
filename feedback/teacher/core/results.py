"""Что передают друг другу стадии оценивания: задание единицы, её результат, итог задания.

:class:`Job` (что оценить) собирает родительский процесс
(:func:`feedback.teacher.grading.run.job_for`),
единица (:mod:`feedback.teacher.unit.pipeline`) возвращает :class:`UnitResult` с
:class:`TaskOutcome`
по каждой ячейке-тесту, а читают его база оценок, отчёты, таблицы, прогрев и строка хода
оценивания. Единица выполняется в своём процессе, а то и на рабочем Dask, поэтому все три
умеют ``to_json`` и ``from_json``: в JSON — только числа, строки, списки и словари.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import nbformat

from feedback.teacher.core.settings import Limits


@dataclass(frozen=True)
class Finding:
    """Место в коде учащегося, которое стоит посмотреть (:func:`feedback.teacher.review.scan`)."""

    cell: str
    line: int
    code: str
    reason: str


def _known(cls: type, data: Mapping[str, Any]) -> dict[str, Any]:
    """Поля ``data``, которые есть у класса (ключи другой версии пакета не роняют разбор)."""
    names = {item.name for item in fields(cls)}
    return {key: value for key, value in data.items() if key in names}


@dataclass(frozen=True)
class TaskOutcome:
    """Итог одной ячейки-теста: баллы, вердикт, который видел учащийся, и код ошибки.

    ``mistake`` — код типичной ошибки (:mod:`feedback.answers.mistakes`); у пройденной
    проверки — ``None``, у неоценённой работы — ``NOT_ASSESSED``.
    """

    score: float
    points: float
    passed: bool = False
    verdict: str = ""
    mistake: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> TaskOutcome:
        return cls(**_known(cls, data))


@dataclass(frozen=True)
class Job:
    """Задание единицы: всё, что нужно для оценивания одной работы, и ничего лишнего.

    Ни путей к базе оценок, ни секрета курса: только зерно этого учащегося. ``release`` и
    ``upload`` — JSON тетрадок; ``rubrics`` — критерии письменных ответов из solutions/.
    Папку единицы (``unit_dir``) и ядра процессора (``cpus``) добавляет тот, кто запускает.
    """

    student: str
    lab: str
    release: dict[str, Any]
    upload: Any
    seed: str
    sandbox: str
    limits: Limits
    file: str = ""
    rubrics: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    allowed: list[str] = field(default_factory=list)
    gpu: bool = False
    cache_dir: str | None = None  # кэш крошечной Gemma на машине единицы
    jax_cache_dir: str | None = None  # прогретый кэш компиляции JAX (копия — каждой работе)
    jax_cache_write: str | None = None  # общий кэш компиляции, в который пишет только эталон
    #: сокет прогретой заготовки ядер на машине единицы (feedback.teacher.unit.warm); None — без неё
    kernel_template: str | None = None
    unit_dir: str | None = None
    cpus: list[int] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data = {item.name: getattr(self, item.name) for item in fields(self)}
        data["limits"] = self.limits.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Job:
        known = _known(cls, data)
        known["limits"] = Limits.from_json(known["limits"])
        return cls(**known)


@dataclass(frozen=True)
class UnitResult:
    """Результат единицы: проверенная тетрадка, итоги заданий, замечания и замеры.

    ``problems`` — строки problems.csv (и заметка в тетрадке); ``review`` — места кода
    для ручной проверки (needs_review.csv); ``cases`` — вытянутые случаи (cases.csv).
    ``execution_seconds``, ``peak_memory`` (байты) и ``wall_seconds`` (вместе с запуском
    процесса единицы) — в timings.csv; у неоценённой работы их нет.
    """

    student: str
    lab: str
    autograded: nbformat.NotebookNode
    tests: dict[str, TaskOutcome]
    file: str = ""
    problems: list[str] = field(default_factory=list)
    review: list[Finding] = field(default_factory=list)
    cases: dict[str, Any] = field(default_factory=dict)
    execution_seconds: float | None = None
    peak_memory: int | None = None
    wall_seconds: float | None = None
    warm_kernel: bool = False  # ядро — копия прогретой заготовки (feedback.teacher.unit.warm)
    #: работа оценена по существу; ``False`` — не оценена (файл повреждён, не найден ответ…):
    #: её нули — не оценка, и в выгрузку для LMS она не идёт, пока её не разберёт преподаватель
    assessed: bool = True

    @property
    def flagged(self) -> bool:
        """Есть что посмотреть вручную или что-то пошло не так."""
        return bool(self.problems or self.review)

    def to_json(self) -> dict[str, Any]:
        data = {item.name: getattr(self, item.name) for item in fields(self)}
        data["autograded"] = self.autograded  # NotebookNode — словарь JSON как есть
        data["tests"] = {grade_id: test.to_json() for grade_id, test in self.tests.items()}
        data["review"] = [asdict(item) for item in self.review]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> UnitResult:
        known = _known(cls, data)
        known["autograded"] = nbformat.from_dict(known["autograded"])
        known["tests"] = {
            grade_id: TaskOutcome.from_json(test) for grade_id, test in known["tests"].items()
        }
        known["review"] = [Finding(**item) for item in known.get("review", [])]
        return cls(**known)

"""Один запуск оценивания: что он знает (:class:`Run`), как он отказывает и задание единицы.

Отдельно от :mod:`feedback.teacher.grading.grade`, потому что это общее для всех стадий
запуска: эталонов (:mod:`feedback.teacher.grading.reference`), замка рабочей папки
(:mod:`feedback.teacher.grading.lock`) и самого цикла.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat

from feedback.teacher.core.labs import is_gpu_notebook
from feedback.teacher.core.results import Job
from feedback.teacher.core.settings import Settings
from feedback.teacher.intake import roster
from feedback.teacher.intake.uploads import Submission
from feedback.teacher.records import ledger
from feedback.teacher.records.class_tables import ClassTables
from feedback.teacher.unit import warm
from feedback.teacher.unit.pipeline import rubrics


class SetupError(RuntimeError):
    """Оценивание не может начаться: что-то не так у преподавателя (код выхода 2)."""


class NothingGraded(RuntimeError):
    """Запуск прошёл, таблицы записаны, но ни одна работа не оценена (код выхода 1).

    Все найденные файлы — строки problems.csv (имена, которые не разобрать, не те файлы,
    битые тетрадки): «завершено» с кодом 0 выглядело бы как успех.
    """


@dataclass
class Run:
    """Всё, что знает один запуск оценивания.

    ``tables`` — строки таблиц класса этого запуска (problems.csv и др.,
    :mod:`feedback.teacher.records.class_tables`); ``before`` — снимок баллов прошлого запуска
    (:mod:`feedback.teacher.records.ledger`), ``uploads`` и ``answers`` — отпечатки сданного
    сейчас и оценённого.
    """

    settings: Settings
    mode: str
    jobs: int
    releases: dict[str, nbformat.NotebookNode]
    allowed: dict[str, list[str]]
    secret: str
    matcher: roster.Matcher | None = None
    tables: ClassTables = field(default_factory=ClassTables)
    before: ledger.Scores = field(default_factory=dict)
    uploads: dict[tuple[str, str], str] = field(default_factory=dict)
    answers: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    #: Сколько баллов работы ждёт ручной оценки после её записи (для строки хода).
    pending: dict[tuple[str, str], float] = field(default_factory=dict)


def job_for(run: Run, submission: Submission, cache: Path | None) -> Job:
    """Задание единицы: всё, что нужно для оценивания одной работы, и ничего лишнего.

    Ни путей к базе оценок, ни секрета курса: только зерно этого учащегося.
    """
    release = run.releases[submission.lab]
    seed = hashlib.sha256(
        f"{run.secret}:{submission.student}:{submission.lab}".encode()
    ).hexdigest()
    return Job(
        student=submission.student,
        lab=submission.lab,
        file=submission.file,
        release=json.loads(nbformat.writes(release)),
        upload=submission.notebook,
        # Критерии письменных ответов — из solutions/: formgrader покажет их рядом с ответами.
        rubrics=rubrics(run.settings.rubric_source(submission.lab)),
        notes=list(submission.notes),
        allowed=run.allowed.get(submission.lab, []),
        seed=seed,
        sandbox=run.mode,
        limits=run.settings.limits_for(release),
        gpu=is_gpu_notebook(release),
        cache_dir=str(cache) if cache else None,
        jax_cache_dir=str(cache / "jax") if cache else None,
    )


def with_template(job: Job, templates: dict[str, str]) -> Job:
    """Задание с сокетом заготовки ядер своего вида (если заготовки запущены)."""
    return replace(job, kernel_template=templates.get(warm.profile_of(job.gpu)))

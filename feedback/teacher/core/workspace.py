"""Рабочая папка оценивания: единственное место, где названы её файлы и папки.

Всё, что оценивание пишет и читает между запусками, лежит в одной папке преподавателя
(``COURSE7_GRADING_DIR`` или .course-work/): база оценок nbgrader, работы по стадиям nbgrader,
таблицы класса, снимок баллов, страницы, состояние сервера курса. Стадии получают
:class:`Workspace` и берут путь у него (``workspace.gradebook``, ``workspace.table(GradeRow)``),
а не собирают ``work / "…"`` сами: так переименование или перенос файла — одна строка здесь,
и тест (tests/test_workspace_layout.py) не даёт написать имя файла папки где-то ещё.

Имена таблиц CSV — тоже здесь (:attr:`Workspace.GRADES` …): тип строки таблицы
(:mod:`feedback.teacher.core.tables`) берёт своё ``FILE`` отсюда. Модуль лёгкий: только
стандартная библиотека.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol


class NamedTable(Protocol):
    """Тип строки таблицы: имя её файла в рабочей папке."""

    FILE: ClassVar[str]


@dataclass(frozen=True)
class Workspace:
    """Рабочая папка оценивания и всё, что в ней лежит.

    ``exchange_dir`` и ``dask_certs_dir`` — папки, которые преподаватель может вынести из
    рабочей (``COURSE7_EXCHANGE_DIR``, ``COURSE7_DASK_CERTS``); без них — внутри неё.
    """

    folder: Path
    exchange_dir: Path | None = None
    dask_certs_dir: Path | None = None

    # ------------------------------------------------------------------ имена в папке
    GRADEBOOK: ClassVar[str] = "gradebook.db"
    LOCK: ClassVar[str] = ".grading.lock"
    SCORES: ClassVar[str] = "scores.json"
    SCORES_START: ClassVar[str] = "scores-start.json"
    SOURCES: ClassVar[str] = "sources.json"
    LMS_FOLDERS: ClassVar[str] = "lms_folders.json"
    SUMMARY: ClassVar[str] = "summary.html"
    MISTAKES_LIST: ClassVar[str] = "mistakes.md"
    ROSTER: ClassVar[str] = "students.csv"
    HUB_STATE: ClassVar[str] = "hub.json"
    HUB_PASSWORDS: ClassVar[str] = "passwords.json"
    # Таблицы CSV класса (тип строки каждой — в feedback.teacher.core.tables).
    PROBLEMS: ClassVar[str] = "problems.csv"
    NEEDS_REVIEW: ClassVar[str] = "needs_review.csv"
    CASES: ClassVar[str] = "cases.csv"
    TIMINGS: ClassVar[str] = "timings.csv"
    MISTAKES: ClassVar[str] = "mistakes.csv"
    SIMILAR: ClassVar[str] = "similar.csv"
    CHANGES: ClassVar[str] = "changes.csv"
    MANUAL_ARCHIVE: ClassVar[str] = "manual_archive.csv"
    LMS_IDS: ClassVar[str] = "lms_ids.csv"
    GRADES: ClassVar[str] = "grades.csv"
    GRADES_BY_TASK: ClassVar[str] = "grades_by_task.csv"
    # Папки.
    RELEASE: ClassVar[str] = "release"
    SUBMITTED: ClassVar[str] = "submitted"
    AUTOGRADED: ClassVar[str] = "autograded"
    LEARNER_REPORTS: ClassVar[str] = "feedback_reports"
    SOLUTION_RELEASE: ClassVar[str] = "solution_release"
    UNITS: ClassVar[str] = "units"
    CACHE: ClassVar[str] = "cache"
    EXCHANGE: ClassVar[str] = "exchange"
    DASK_CERTS: ClassVar[str] = "dask-certs"
    HUB: ClassVar[str] = "hub"

    # ------------------------------------------------------------------ файлы
    def table(self, row_type: type[NamedTable]) -> Path:
        """Таблица CSV класса по типу её строки: ``workspace.table(GradeRow)``."""
        return self.folder / row_type.FILE

    @property
    def gradebook(self) -> Path:
        """База оценок nbgrader (SQLite)."""
        return self.folder / self.GRADEBOOK

    @property
    def gradebook_url(self) -> str:
        return f"sqlite:///{self.gradebook}"

    @property
    def has_gradebook(self) -> bool:
        """Была ли здесь хоть одна регистрация лабораторных (make grade или make hub)."""
        return self.gradebook.is_file()

    @property
    def lock(self) -> Path:
        """Замок: одновременно в папке идёт один make grade."""
        return self.folder / self.LOCK

    @property
    def scores(self) -> Path:
        """Снимок баллов последнего запуска (с ним сравнивает следующий: changes.csv)."""
        return self.folder / self.SCORES

    @property
    def scores_start(self) -> Path:
        """Снимок баллов на начало запуска, пока запуск не закончен."""
        return self.folder / self.SCORES_START

    @property
    def lms_folders(self) -> Path:
        """Папки работ Moodle по учащимся: куда возвращать отчёты архивом."""
        return self.folder / self.LMS_FOLDERS

    @property
    def summary(self) -> Path:
        """summary.html — страница преподавателя после make grade."""
        return self.folder / self.SUMMARY

    @property
    def mistakes_list(self) -> Path:
        """mistakes.md — частые ошибки к лекции."""
        return self.folder / self.MISTAKES_LIST

    @property
    def roster(self) -> Path:
        """Список учащихся, который преподаватель кладёт в папку (students.csv)."""
        return self.folder / self.ROSTER

    # ------------------------------------------------------------------ папки
    @property
    def release(self) -> Path:
        """Выпуски лабораторных, с которыми сверяются работы (их же nbgrader заносит в базу)."""
        return self.folder / self.RELEASE

    def released(self, lab: str) -> Path:
        """Выпуск лабораторной ``lab`` (id): ``release/<лаб>/<лаб>.ipynb``."""
        return self.release / lab / f"{lab}.ipynb"

    @property
    def sources(self) -> Path:
        """Контрольные суммы исходников, с которыми зарегистрированы лабораторные (в release/)."""
        return self.release / self.SOURCES

    @property
    def submitted(self) -> Path:
        return self.folder / self.SUBMITTED

    @property
    def autograded(self) -> Path:
        return self.folder / self.AUTOGRADED

    @property
    def feedback_reports(self) -> Path:
        return self.folder / self.LEARNER_REPORTS

    @property
    def solution_release(self) -> Path:
        return self.folder / self.SOLUTION_RELEASE

    @property
    def units(self) -> Path:
        """Папки единиц этого запуска (задания с работами); их остатки убирает следующий запуск."""
        return self.folder / self.UNITS

    @property
    def cache(self) -> Path:
        """Кэши единиц на этой машине: крошечная Gemma и кэш компиляции JAX (прогрев)."""
        return self.folder / self.CACHE

    @property
    def exchange(self) -> Path:
        """exchange nbgrader (курс на JupyterHub): ``COURSE7_EXCHANGE_DIR`` или в рабочей папке."""
        return self.exchange_dir or self.folder / self.EXCHANGE

    @property
    def dask_certs(self) -> Path:
        """Сертификаты Dask (``make dask-certs``): ``COURSE7_DASK_CERTS`` или в рабочей папке."""
        return self.dask_certs_dir or self.folder / self.DASK_CERTS

    @property
    def hub(self) -> Path:
        """Состояние сервера курса (make hub): его настройки, пароли, журнал."""
        return self.folder / self.HUB

    @property
    def hub_state(self) -> Path:
        return self.hub / self.HUB_STATE

    @property
    def hub_passwords(self) -> Path:
        return self.hub / self.HUB_PASSWORDS

"""Рабочая папка оценивания: единственное место, где названы её файлы и папки.

Всё, что оценивание пишет и читает между запусками, лежит в одной папке преподавателя
(``COURSE7_GRADING_DIR`` или .course-work/): база оценок nbgrader, работы по стадиям nbgrader,
таблицы класса, снимок баллов, страницы, состояние сервера курса. Стадии получают
:class:`Workspace` и берут путь у него (``workspace.gradebook``, ``workspace.table(GradeRow)``),
а не собирают ``work / "…"`` сами: так переименование или перенос файла — одна строка здесь,
и тест (tests/teacher/core/test_workspace.py) не даёт написать имя файла папки где-то ещё.

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
    GRADING_SECRET: ClassVar[str] = ".grading-secret"
    SCORES: ClassVar[str] = "scores.json"
    SCORES_START: ClassVar[str] = "scores-start.json"
    SOURCES: ClassVar[str] = "sources.json"
    LMS_FOLDERS: ClassVar[str] = "lms_folders.json"
    SUMMARY: ClassVar[str] = "summary.html"
    MISTAKES_LIST: ClassVar[str] = "mistakes.md"
    ROSTER: ClassVar[str] = "students.csv"
    HUB_STATE: ClassVar[str] = "hub.json"
    HUB_PASSWORDS: ClassVar[str] = "passwords.json"
    # Файл преподавателя «номер участника Moodle → id» одной лабораторной.
    PARTICIPANTS: ClassVar[str] = "participants_{lab}.csv"
    # Что make export кладёт в папку выгрузки.
    MOODLE_GRADES: ClassVar[str] = "moodle_grades.csv"
    WORKSHEET: ClassVar[str] = "{lab}_worksheet.csv"
    LMS_FEEDBACK_ARCHIVE: ClassVar[str] = "{lab}_feedback_files.zip"
    HUB_USERS: ClassVar[str] = "users"
    HUB_CONFIG: ClassVar[str] = "config"
    HUB_PID: ClassVar[str] = "jupyterhub.pid"
    HUB_PROXY_PID: ClassVar[str] = "proxy.pid"
    HUB_DATABASE: ClassVar[str] = "jupyterhub.sqlite"
    HUB_COOKIE_SECRET: ClassVar[str] = "jupyterhub_cookie_secret"
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
    EXPORT: ClassVar[str] = "export"

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
    def grading_secret(self) -> Path:
        """Секрет курса для случаев оценивания (0600): один на папку, учащимся не виден."""
        return self.folder / self.GRADING_SECRET

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

    def participants(self, lab: str) -> Path:
        """``participants_<лаб>.csv``: чьи работы из Moodle, когда по имени папки не понять."""
        return self.folder / self.PARTICIPANTS.format(lab=lab)

    def learner_report(self, student: str, lab: str) -> Path:
        """Отчёт учащегося ``feedback_reports/<учащийся>/<лаб>/<лаб>.html``."""
        return self.feedback_reports / student / lab / f"{lab}.html"

    # ------------------------------------------------------------------ выгрузка (make export)
    @property
    def export(self) -> Path:
        """Папка выгрузки для LMS: таблица оценок, заполненные ведомости, архивы отзывов."""
        return self.folder / self.EXPORT

    @property
    def moodle_grades(self) -> Path:
        """Таблица для Moodle «Импорт оценок → CSV-файл»."""
        return self.export / self.MOODLE_GRADES

    def worksheet(self, lab: str) -> Path:
        """Заполненная копия ведомости оценок Moodle лабораторной."""
        return self.export / self.WORKSHEET.format(lab=lab)

    def feedback_archive(self, lab: str) -> Path:
        """Архив отчётов лабораторной для Moodle «Загрузить несколько файлов с отзывами»."""
        return self.export / self.LMS_FEEDBACK_ARCHIVE.format(lab=lab)

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

    @property
    def hub_users(self) -> Path:
        """Папки учащихся пробы make hub (``users/<имя>/``): там работают их серверы."""
        return self.hub / self.HUB_USERS

    @property
    def hub_config(self) -> Path:
        """Настройки серверов пробы (``config/<имя>/`` — ``JUPYTER_CONFIG_PATH`` сервера)."""
        return self.hub / self.HUB_CONFIG

    @property
    def hub_pid(self) -> Path:
        """pid-файл JupyterHub курса: по нему make hub-stop его останавливает."""
        return self.hub / self.HUB_PID

    @property
    def hub_proxy_pid(self) -> Path:
        return self.hub / self.HUB_PROXY_PID

    @property
    def hub_database(self) -> Path:
        """База JupyterHub (SQLite): пользователи и их серверы между запусками."""
        return self.hub / self.HUB_DATABASE

    @property
    def hub_cookie_secret(self) -> Path:
        return self.hub / self.HUB_COOKIE_SECRET

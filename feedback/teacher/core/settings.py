"""Настройки оценивания в одном месте: пути курса, рабочая папка, база оценок и бюджеты.

:class:`Settings` собирается один раз (:meth:`Settings.from_env`) из переменных окружения
реестра :mod:`feedback.settings` и передаётся дальше аргументом: ``grade(settings=…)``,
nbgrader_config.py, отчёты, выгрузка. Тесты и ``make bench`` задают свои настройки
объектом, а не подменой констант модулей.

Здесь же — бюджеты одной работы (:class:`Limits`): для лабораторных на процессоре
(:data:`CPU_LIMITS`) и для GPU-лабораторных в учебном режиме (:data:`GPU_LIMITS`), — пределы
чтения работ (:class:`UploadLimits`).
Всё, что преподаватель может настроить, — здесь или в реестре переменных; константа модуля
в остальном пакете — внутренний предел защиты, а не настройка (docs/development.md,
«Правило настроек»). Модуль лёгкий: только стандартная библиотека и реестр переменных.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from feedback.settings import (
    ALLOW_INSECURE_DASK,
    CALL_TIMEOUT,
    CELL_TIMEOUT,
    DASK_CERTS,
    EXCHANGE_DIR,
    GIB,
    GRADING_DIR,
    JOBS,
    KIB,
    MEMORY_LIMIT,
    MIB,
    NOTEBOOK_TIMEOUT,
    SANDBOX,
    SCHEDULER,
    WARM_KERNELS,
)
from feedback.teacher.core.labs import Lab, course_labs, find_lab, is_gpu_notebook
from feedback.teacher.core.workspace import Workspace

#: Корень репозитория курса (это же — курс nbgrader) и пакет проверок.
ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "feedback"
#: Исходные тетрадки с решениями и выпуск для учащихся.
SOLUTIONS = ROOT / "solutions"
NOTEBOOKS = ROOT / "notebooks"
#: Рабочая папка оценивания по умолчанию (в .gitignore).
DEFAULT_WORK = ROOT / ".course-work"
COURSE_ID = "course7"


@dataclass(frozen=True)
class Limits:
    """Бюджеты одной работы; у времени и памяти значений по умолчанию нет — они у лабораторной.

    Единицы: секунды и байты.
    """

    notebook_seconds: float
    cell_seconds: float
    # Вся память работы: процессы, а где есть контрольная группа памяти — и её tmpfs, memfd.
    memory_bytes: int
    # Вывод в отчёте — два разных предела: то, что ячейка вывела при оценивании (байты, режется
    # по ходу выполнения), и то, что было в сданной тетрадке учащегося (символы: его вывод
    # показывается рядом, не перепроверенный, — в GPU-лабораторных и у невыполненных ячеек).
    output_bytes: int = 2 * MIB  # вывод одной ячейки при оценивании, который попадёт в отчёт
    total_output_bytes: int = 8 * MIB  # весь вывод тетрадки при оценивании в отчёте
    submitted_output_chars: int = 512 * KIB  # сданный вывод одной ячейки, показанный в отчёте
    flood_bytes: int = 64 * MIB  # столько вывода — уже не работа, а флуд: ядро убивается
    # Файлы работы вместе: папка работы, /tmp и /dev/shm (каждая — tmpfs такого размера).
    disk_bytes: int = 256 * MIB
    files: int = 20_000  # файлов и папок: пустые файлы места не занимают, но память ядра ОС — да
    processes: int = 64
    call_seconds: float = float(CALL_TIMEOUT.default)  # один вызов функции учащегося в проверке
    # Запасы времени сверх бюджетов: за них ядро должно ответить на прерывание ячейки, а
    # единица — вернуться сверх бюджета тетрадки (запуск ядра, сборка, вердикты).
    interrupt_grace_seconds: float = 10.0
    unit_grace_seconds: float = 120.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Limits:
        return cls(**data)


#: Бюджеты по умолчанию: лабораторные на процессоре и GPU-лабораторные (учебный режим).
CPU_LIMITS = Limits(notebook_seconds=180, cell_seconds=60, memory_bytes=int(1.5 * GIB))
GPU_LIMITS = Limits(notebook_seconds=900, cell_seconds=600, memory_bytes=3 * GIB)


@dataclass(frozen=True)
class UploadLimits:
    """Пределы чтения работ из папки или архива LMS, байты.

    Их применяет :mod:`feedback.teacher.intake.archives`. Больше — строка ``problems.csv``
    вместо работы, а не оборванное чтение.
    """

    notebook_bytes: int = 32 * MIB  # одна тетрадка (с картинками их несколько мегабайт)
    archive_bytes: int = 2 * GIB  # всё прочитанное за один запуск: архив или папка целиком


#: Пределы чтения работ по умолчанию.
UPLOAD_LIMITS = UploadLimits()


def budget_changes(env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Бюджеты, которые преподаватель задал переменными COURSE7_*_TIMEOUT и COURSE7_MEMORY_LIMIT."""
    changes: dict[str, Any] = {}
    for variable, name in (
        (NOTEBOOK_TIMEOUT, "notebook_seconds"),
        (CELL_TIMEOUT, "cell_seconds"),
        (MEMORY_LIMIT, "memory_bytes"),
    ):
        value = variable.read(env)
        if value is not None:
            changes[name] = value
    if CALL_TIMEOUT.raw(env) is not None:
        changes["call_seconds"] = CALL_TIMEOUT.read(env)
    return changes


def _path(value: Any) -> Path | None:
    return Path(value).resolve() if value is not None else None


def work_dir(env: Mapping[str, str] | None = None, root: Path = ROOT) -> Path:
    """Рабочая папка оценивания: ``COURSE7_GRADING_DIR`` или .course-work/ в корне репозитория."""
    chosen = GRADING_DIR.read(env)
    return Path(chosen if chosen is not None else root / DEFAULT_WORK.name).resolve()


@dataclass(frozen=True)
class Settings:
    """Всё, что оценивание берёт не из работ: пути, режим песочницы, бюджеты, параллельность."""

    work: Path = field(default_factory=lambda: DEFAULT_WORK.resolve())
    root: Path = ROOT
    cpu_limits: Limits = CPU_LIMITS
    gpu_limits: Limits = GPU_LIMITS
    sandbox: str = str(SANDBOX.default)  # auto, bwrap или none (COURSE7_SANDBOX)
    jobs: int | None = None  # None — по числу ядер процессора
    scheduler: str | None = None  # адрес планировщика Dask
    allow_insecure_dask: bool = False  # планировщик без TLS (feedback.teacher.unit.dask_tls)
    dask_certs_dir: Path | None = None  # сертификаты Dask; None — dask-certs/ в рабочей папке
    warm_kernels: bool = True  # ядра из прогретых заготовок (feedback.teacher.unit.warm)
    exchange_dir: Path | None = None  # exchange nbgrader; None — exchange/ в рабочей папке

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, root: Path = ROOT) -> Settings:
        """Настройки из переменных окружения (реестр :mod:`feedback.settings`).

        Неразборчивое значение — :class:`feedback.settings.SettingError` с именем переменной.
        """
        env = os.environ if env is None else env
        changes = budget_changes(env)
        return cls(
            work=work_dir(env, root),
            root=root,
            cpu_limits=replace(CPU_LIMITS, **changes),
            gpu_limits=replace(GPU_LIMITS, **changes),
            sandbox=SANDBOX.read(env),
            jobs=JOBS.read(env) or None,
            scheduler=SCHEDULER.read(env),
            allow_insecure_dask=ALLOW_INSECURE_DASK.read(env) is True,
            dask_certs_dir=_path(DASK_CERTS.read(env)),
            warm_kernels=WARM_KERNELS.read(env) is not False,
            exchange_dir=_path(EXCHANGE_DIR.read(env)),
        )

    def limits_for(self, release: Mapping[str, Any]) -> Limits:
        """Бюджеты лабораторной по её выпуску."""
        return self.gpu_limits if is_gpu_notebook(release) else self.cpu_limits

    # ----------------------------------------------------------------------- пути курса

    @property
    def solutions(self) -> Path:
        return self.root / "solutions"

    @property
    def notebooks(self) -> Path:
        return self.root / "notebooks"

    def rubric_source(self, lab: str) -> Path:
        """Исходник лабораторной с критериями письменных ответов (solutions/)."""
        return self.solutions / lab / f"{lab}.ipynb"

    # ----------------------------------------------------------------------- рабочая папка
    @property
    def labs(self) -> tuple[Lab, ...]:
        """Лабораторные курса (:mod:`feedback.teacher.core.labs`): solutions/ этого корня."""
        return course_labs(self.root)

    def find_lab(self, text: str) -> Lab:
        """Лабораторная курса по id или номеру; нет такой — :class:`~.labs.UnknownLab`."""
        return find_lab(text, self.labs)

    @property
    def workspace(self) -> Workspace:
        """Рабочая папка и всё, что в ней (:class:`~feedback.teacher.core.workspace.Workspace`)."""
        return Workspace(self.work, self.exchange_dir, self.dask_certs_dir)

    def course_directory(self) -> dict[str, Any]:
        """Настройки ``CourseDirectory`` nbgrader: курс — репозиторий, рабочие папки — в work."""
        return {
            "course_id": COURSE_ID,
            "root": str(self.root),
            "source_directory": "solutions",
            "release_directory": "notebooks",
            "submitted_directory": str(self.workspace.submitted),
            "autograded_directory": str(self.workspace.autograded),
            "feedback_directory": str(self.workspace.feedback_reports),
            "solution_directory": str(self.workspace.solution_release),
            "db_url": self.workspace.gradebook_url,
        }

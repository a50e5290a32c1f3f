"""Общие настройки тестов: мягкий режим проверок и один оценённый класс на весь запуск."""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from notebook_runner import ROOT

#: Модули, чьи дорогие фикстуры (тетрадки, выполненные один раз, окружение Colab, браузер)
#: делятся между их тестами: при параллельном прогоне (pytest-xdist) такой модуль целиком
#: идёт одному процессу, чтобы фикстура не считалась дважды.
SHARED_FIXTURE_MODULES = {"test_student_notebooks", "test_colab_versions", "test_browser"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    # tryfirst: метки групп должны появиться раньше, чем xdist допишет группу к имени теста.
    for item in items:
        module = getattr(item.module, "__name__", "")
        if "graded_class" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("graded_class"))
        elif module in SHARED_FIXTURE_MODULES:
            item.add_marker(pytest.mark.xdist_group(module))


@pytest.fixture(autouse=True)
def lenient_checks(monkeypatch):
    """Тесты сами решают, включать ли строгий режим."""
    monkeypatch.delenv("FEEDBACK_STRICT", raising=False)


def tree_hash(folder: Path) -> str:
    """Хэш всех файлов папки (имена и содержимое), кроме кэшей Python."""
    from feedback.teacher.grade import tree_digest

    return tree_digest(folder).hex()


@dataclass
class GradedClass:
    """Итоги одного запуска оценивания на синтетическом классе (tests/corpus.py)."""

    work: Path
    folder: Path
    works: list
    before: dict[str, str]
    after: dict[str, str]
    grades_after_run: bytes
    seconds: float


@pytest.fixture(scope="session")
def sandbox():
    """Оценивание без bubblewrap на Linux не начинается: без него тест пропускается (не в CI)."""
    if shutil.which("bwrap") is None and not os.environ.get("COURSE7_REQUIRE_SANDBOX"):
        pytest.skip("нет bubblewrap (make sandbox или sudo apt-get install bubblewrap)")


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory, sandbox) -> GradedClass:
    from corpus import TEACHER_MARKER, class_works

    from feedback.teacher import grade
    from feedback.teacher.sandbox import GIB, Limits

    work = tmp_path_factory.mktemp("class-work")
    folder = tmp_path_factory.mktemp("class-submissions")
    targets = {
        "secret": str(work / ".grading-secret"),
        "gradebook": str(work / "gradebook.db"),
        "grades": str(work / "grades.csv"),
        "package_file": str(ROOT / "feedback" / "result.py"),
        "other_submission": str(
            folder / "h72_correct/lab_7_2_training_flops/lab_7_2_training_flops.ipynb"
        ),
    }
    works = class_works(targets)
    for item in works:
        item.write(folder)
    watched = {"feedback": ROOT / "feedback", "solutions": ROOT / "solutions", "class": folder}
    before = {name: tree_hash(path) for name, path in watched.items()}
    patch = pytest.MonkeyPatch()
    patch.setenv("COURSE7_GRADING_DIR", str(work))
    patch.setenv("COURSE7_TEACHER_SECRET", TEACHER_MARKER)  # его не должно быть в итогах
    patch.delenv("COURSE7_TINY", raising=False)
    # Короткие бюджеты для класса: зависшие работы не должны тянуть время тестов.
    short = Limits(notebook_seconds=60, cell_seconds=8, memory_bytes=int(1.5 * GIB), call_seconds=2)
    patch.setattr(grade, "CPU_LIMITS", short)
    started = time.monotonic()
    try:
        grade.grade(folder, jobs=2)
    finally:
        patch.undo()
    seconds = time.monotonic() - started
    grades_after_run = (work / "grades.csv").read_bytes()
    time.sleep(4)  # окно для отсоединённого процесса, который хотел переписать grades.csv
    after = {name: tree_hash(path) for name, path in watched.items()}
    return GradedClass(work, folder, works, before, after, grades_after_run, seconds)

"""Общие настройки тестов: мягкий режим проверок и один оценённый класс на весь запуск."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from notebook_runner import ROOT

#: Группы pytest-xdist: модули, чьи дорогие фикстуры делятся между их тестами, идут при
#: параллельном прогоне одному процессу, чтобы фикстура не считалась дважды. Тетрадки,
#: выполненные один раз, окружение Colab и браузер — у каждого модуля своя группа. Модули,
#: которые грузят keras, TensorFlow и крошечную Gemma в сам процесс тестов, — одна общая:
#: импорт стоит секунды процессора, а скомпилированные JAX программы остаются в процессе.
KERAS_IN_PROCESS = (
    "test_generation",
    "test_precision",
    "test_accumulation",
    "test_monitor",
    "test_tiny_gemma",
    "test_gpu_check",
    "test_kaggle_access",
)
SHARED_FIXTURE_MODULES = {
    "test_student_notebooks": "test_student_notebooks",
    "test_colab_versions": "test_colab_versions",
    "test_browser": "test_browser",
    **dict.fromkeys(KERAS_IN_PROCESS, "keras_in_process"),
}
#: Тесты модуля из группы, которым её фикстура не нужна, идут в любой процесс.
GROUP_FIXTURES = {"test_colab_versions": "colab_python"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    # tryfirst: метки групп должны появиться раньше, чем xdist допишет группу к имени теста.
    for item in items:
        group = _group_of(item)
        if group:
            item.add_marker(pytest.mark.xdist_group(group))
    # Порядок, в котором процессы берут работу (make test отключает свою сортировку xdist,
    # --no-loadscope-reorder). Класс оценивается один раз на весь запуск (фикстура
    # graded_class), а его тесты идут в разные процессы. Первый из них — первым: оценивание
    # — самая долгая цепочка запуска, и оно начинается сразу. Потом группы, от больших к
    # малым: долгая группа, начатая в конце, задержала бы весь запуск. Остальные тесты
    # класса — в конце: к ним процессы придут, когда класс уже оценён; первыми из них —
    # страницы в Chromium (по минуте и больше), чтобы они разошлись по разным процессам, а
    # не достались в самом конце одному.
    on_class = [item for item in items if "graded_class" in getattr(item, "fixturenames", ())]
    chosen = set(on_class)
    groups: dict[str, list] = {}
    for item in items:
        if item not in chosen:
            groups.setdefault(_group_of(item) or "", []).append(item)
    alone = groups.pop("", [])
    largest_first = sorted(groups, key=lambda name: -len(groups[name]))
    grouped = [item for name in largest_first for item in groups[name]]
    in_browser = [item for item in on_class[1:] if _module(item) in CLASS_PAGES_IN_BROWSER]
    rest_of_class = [item for item in on_class[1:] if item not in in_browser]
    items[:] = on_class[:1] + grouped + alone + in_browser + rest_of_class


#: Модули, чьи тесты класса открывают его страницы в Chromium: самые долгие после оценивания.
CLASS_PAGES_IN_BROWSER = ("test_hostile_pages", "test_formgrader")


def _module(item) -> str:
    return getattr(item.module, "__name__", "")


def _group_of(item) -> str | None:
    module = _module(item)
    needed = GROUP_FIXTURES.get(module)
    if module in SHARED_FIXTURE_MODULES and (
        needed is None or needed in getattr(item, "fixturenames", ())
    ):
        return SHARED_FIXTURE_MODULES[module]
    return None


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


def _class_targets(work: Path, folder: Path) -> dict[str, str]:
    """Пути, до которых пытаются дотянуться злые работы класса."""
    return {
        "secret": str(work / ".grading-secret"),
        "gradebook": str(work / "gradebook.db"),
        "grades": str(work / "grades.csv"),
        "package_file": str(ROOT / "feedback" / "engine" / "result.py"),
        "other_submission": str(
            folder / "h72_correct/lab_7_2_training_flops/lab_7_2_training_flops.ipynb"
        ),
    }


def _grade_class(work: Path, folder: Path) -> dict:
    """Оценивает класс из tests/corpus.py и возвращает то, что видно только во время запуска."""
    from corpus import TEACHER_MARKER, class_works

    from feedback.teacher import grade
    from feedback.teacher.settings import GIB, Limits, Settings

    work.mkdir(parents=True)
    folder.mkdir(parents=True)
    for item in class_works(_class_targets(work, folder)):
        item.write(folder)
    watched = {"feedback": ROOT / "feedback", "solutions": ROOT / "solutions", "class": folder}
    before = {name: tree_hash(path) for name, path in watched.items()}
    patch = pytest.MonkeyPatch()
    patch.setenv("COURSE7_TEACHER_SECRET", TEACHER_MARKER)  # его не должно быть в итогах
    patch.delenv("COURSE7_TINY", raising=False)
    # Короткие бюджеты для класса: зависшие работы не должны тянуть время тестов.
    short = Limits(notebook_seconds=60, cell_seconds=8, memory_bytes=int(1.5 * GIB), call_seconds=2)
    settings = replace(Settings.from_env(), work=work, cpu_limits=short)
    started = time.monotonic()
    try:
        grade.grade(folder, jobs=2, settings=settings)
    finally:
        patch.undo()
    seconds = time.monotonic() - started
    (work.parent / "grades-after-run.csv").write_bytes((work / "grades.csv").read_bytes())
    time.sleep(4)  # окно для отсоединённого процесса, который хотел переписать grades.csv
    after = {name: tree_hash(path) for name, path in watched.items()}
    return {"before": before, "after": after, "seconds": seconds}


@pytest.fixture(scope="session")
def graded_class(tmp_path_factory, sandbox) -> GradedClass:
    """Класс из tests/corpus.py, оценённый один раз на весь запуск.

    При pytest-xdist у процессов общая родительская временная папка: первый процесс,
    которому нужен класс, оценивает его под блокировкой, остальные ждут и читают готовые итоги.
    """
    from corpus import class_works

    shared = _shared_temp(tmp_path_factory)
    root = shared / "graded-class"
    work, folder = root / "work", root / "submissions"
    with open(shared / "graded-class.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        summary = root / "summary.json"
        if not summary.exists():
            shutil.rmtree(root, ignore_errors=True)  # остатки упавшей попытки
            observed = _grade_class(work, folder)
            summary.write_text(json.dumps(observed), encoding="utf-8")
        observed = json.loads(summary.read_text(encoding="utf-8"))
    return GradedClass(
        work,
        folder,
        class_works(_class_targets(work, folder)),
        observed["before"],
        observed["after"],
        (root / "grades-after-run.csv").read_bytes(),
        observed["seconds"],
    )


def _shared_temp(tmp_path_factory) -> Path:
    """Временная папка, общая для всех процессов pytest-xdist этого запуска."""
    shared = tmp_path_factory.getbasetemp()
    return shared.parent if os.environ.get("PYTEST_XDIST_WORKER") else shared


#: Лабораторные, чьи эталоны уже прогреты в заготовке рабочей папки (CPU: секунды).
WARM_LABS = ("lab_7_2_training_flops", "lab_7_4_gpu_memory")


@pytest.fixture(scope="session")
def fresh_work(tmp_path_factory):
    """Функция ``fresh_work(папка)``: рабочая папка оценивания, где лабораторные уже в базе.

    Первый запуск ``make grade`` в пустой папке регистрирует все шесть лабораторных
    (``generate_assignment`` и миграции базы nbgrader) и прогревает эталоны — десяток секунд
    процессора. Тестам, которые проверяют не это, а одно оценивание, достаётся копия
    заготовки: её один раз на весь запуск готовит сам ``make grade`` (:func:`prepare`
    и :func:`warm_up`), поэтому следующий ``make grade`` идёт в копии, как второй запуск
    преподавателя. Первый запуск в пустой папке проходит класс (фикстура ``graded_class``).
    Эталоны курса — не код учащихся: без bubblewrap заготовка прогревается и без песочницы.
    """
    from feedback.teacher import grade
    from feedback.teacher.settings import Settings

    shared = _shared_temp(tmp_path_factory)
    template = shared / "registered-work"
    with open(shared / "registered-work.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (template / ".ready").exists():
            shutil.rmtree(template, ignore_errors=True)
            settings = replace(Settings.from_env(), work=template)
            if shutil.which("bwrap") is None:
                settings = replace(settings, sandbox="none")
            run = grade.prepare(settings, jobs=2)
            grade.warm_up(run, set(WARM_LABS), settings.cache)
            (template / ".grading-secret").unlink()  # у каждой копии будет свой
            (template / ".ready").touch()

    def copy(target: Path) -> Path:
        shutil.copytree(template, target, ignore=shutil.ignore_patterns(".ready"))
        return target

    return copy

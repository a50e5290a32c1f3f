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

from feedback.settings import REQUIRE_SANDBOX

from notebook_runner import ROOT

#: Фикстуры, которые запускают ядро, песочницу, браузер, JupyterLab или formgrader, окружение
#: Colab, оценивание или keras с крошечной Gemma в процессе тестов. Тест с любой из них (и с
#: той, что их использует) — долгий: отметка ``slow`` ставится сама, и в быстрый прогон
#: (``make test``) он не попадает. Исключение — тесты с отметкой ``smoke``: быстрый прогон
#: нарочно проходит один настоящий путь оценивания.
SLOW_FIXTURES = frozenset(
    {
        "sandbox",
        "graded_class",
        "fresh_work",
        "cpu_template",
        "lab",
        "formgrader",
        "grading_copy",
        "colab_python",
        "validated",
        "executed_student_notebook",
        "keras",
        # Настоящие пользователи Unix (useradd) и кластеры Dask — не для быстрого прогона.
        "class_hub",
        "unix_users",
        "tls_cluster",
        "keras_hub",
        "tiny_model",
        "load",
        "heavy",
        "preset",
    }
)
#: Столько секунд может длиться тест быстрого прогона без отметки slow (``--max-fast-seconds``)
#: и во столько раз дольше — подготовка его фикстур: общая фикстура модуля, которая стоит
#: несколько секунд один раз на десяток быстрых тестов, в быстром прогоне уместна, а ядро,
#: песочница или keras — нет.
FAST_TEST_SECONDS = 3.0
SETUP_FACTOR = 3


def pytest_addoption(parser):
    parser.addoption(
        "--max-fast-seconds",
        type=float,
        default=None,
        help="тест без отметки slow дольше стольких секунд — ошибка (make test: "
        f"{FAST_TEST_SECONDS:g})",
    )


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    # tryfirst: отметки slow должны появиться раньше, чем -m "not slow" отберёт тесты.
    for item in items:
        if is_slow(item) and not item.get_closest_marker("slow"):
            item.add_marker(pytest.mark.slow)
    # Порядок, в котором процессы берут работу (make test не даёт xdist пересортировать,
    # --no-loadscope-reorder). Класс оценивается один раз на весь запуск (фикстура
    # graded_class), а его тесты идут в разные процессы. Первый из них — первым: оценивание
    # — самая долгая цепочка запуска, и оно начинается сразу. Потом группы xdist (их
    # объявляют сами модули), от больших к малым: долгая группа, начатая в конце, задержала бы
    # весь запуск. Остальные тесты класса — в конце: к ним процессы придут, когда класс уже
    # оценён; первыми из них — страницы в Chromium (отметка browser), чтобы они разошлись по
    # разным процессам, а не достались в самом конце одному.
    on_class = [item for item in items if "graded_class" in getattr(item, "fixturenames", ())]
    chosen = set(on_class)
    groups: dict[str, list] = {}
    for item in items:
        if item not in chosen:
            groups.setdefault(group_of(item) or "", []).append(item)
    alone = groups.pop("", [])
    largest_first = sorted(groups, key=lambda name: -len(groups[name]))
    grouped = [item for name in largest_first for item in groups[name]]
    in_browser = [item for item in on_class[1:] if item.get_closest_marker("browser")]
    rest_of_class = [item for item in on_class[1:] if item not in in_browser]
    items[:] = on_class[:1] + grouped + alone + in_browser + rest_of_class


def is_slow(item) -> bool:
    """Долгий ли тест: отмечен так сам или пользуется долгой фикстурой (и не отмечен smoke)."""
    if item.get_closest_marker("smoke"):
        return False
    return bool(item.get_closest_marker("slow")) or bool(
        SLOW_FIXTURES & set(getattr(item, "fixturenames", ()))
    )


def group_of(item) -> str | None:
    """Группа xdist, которую тест (или его модуль) объявил отметкой ``xdist_group``."""
    marker = item.get_closest_marker("xdist_group")
    return marker.args[0] if marker and marker.args else None


def _waited_for_a_core() -> float:
    """Сколько секунд поток тестов простоял в очереди планировщика, готовый работать.

    Пока соседние процессы (другие процессы xdist, чужая работа на машине) занимают ядра, тест
    не медленнее — он ждёт; это время планировщик Linux считает отдельно (``run_delay`` в
    ``/proc/thread-self/schedstat``), и предел быстрого прогона его не считает. Сон, ожидание
    подпроцесса или сервера в тесте — не очередь: они в пределе. Без schedstat — 0.
    """
    try:
        fields = Path("/proc/thread-self/schedstat").read_text().split()
        return int(fields[1]) / 1e9
    except (OSError, IndexError, ValueError):
        return 0.0


_WAIT_KEY = pytest.StashKey[dict]()

#: Тест, фикстуры которого сейчас готовятся (для счёта времени общих фикстур).
_PREPARING: list = []


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item):
    started = _waited_for_a_core()
    _PREPARING[:] = [item]
    try:
        yield
    finally:
        _PREPARING.clear()
    item.stash.setdefault(_WAIT_KEY, {})["setup"] = _waited_for_a_core() - started


# --------------------------------------------------------------------------- время фикстур

#: Общая фикстура (не одного теста), которая готовилась хотя бы столько секунд, попадает в
#: отчёт времени фикстур: make bench считает её отдельной группой, а не тестом, который
#: попросил её первым (в JUnit её время — в этом тесте, а ожидание её под блокировкой — в
#: тестах других процессов).
BILLED_FIXTURE_SECONDS = 1.0
FIXTURE_TIMES: list[dict] = []


class FixtureClock:
    """Время подготовки общих фикстур.

    Зарегистрирован как плагин (:func:`pytest_configure`), а не хуком этого conftest: хук
    conftest.py из tests/ pytest не зовёт для фикстур сеанса — их узел не в tests/.
    """

    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        started = time.monotonic()
        yield
        took = time.monotonic() - started
        if fixturedef.scope != "function" and took >= BILLED_FIXTURE_SECONDS and _PREPARING:
            FIXTURE_TIMES.append(
                {
                    "fixture": fixturedef.argname,
                    "test": _PREPARING[0].nodeid,
                    "seconds": round(took, 3),
                }
            )


def pytest_configure(config):
    config.pluginmanager.register(FixtureClock(), "course7-fixture-clock")


def fixture_times_file(config) -> Path | None:
    """Файл времени фикстур этого процесса рядом с отчётом JUnit (``--junitxml``), если он есть.

    ``.course-work/test-times.xml`` → ``.course-work/test-times.fixtures-gw0.json``: его читает
    :func:`feedback.teacher.course.bench.group_times`.
    """
    xmlpath = getattr(config.option, "xmlpath", None)
    if not xmlpath:
        return None
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = Path(xmlpath)
    return path.with_name(f"{path.stem}.fixtures-{worker}.json")


def pytest_sessionstart(session):
    """Отчёты времени фикстур прошлого прогона с тем же JUnit убираются (только главный процесс)."""
    target = fixture_times_file(session.config)
    if target is not None and "PYTEST_XDIST_WORKER" not in os.environ:
        for old in target.parent.glob(
            f"{Path(session.config.option.xmlpath).stem}.fixtures-*.json"
        ):
            old.unlink(missing_ok=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    started = _waited_for_a_core()
    yield
    item.stash.setdefault(_WAIT_KEY, {})["call"] = _waited_for_a_core() - started


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Быстрый прогон: тест без отметки slow дольше ``--max-fast-seconds`` — ошибка с именем.

    Считаются сам тест и, с запасом :data:`SETUP_FACTOR`, подготовка его фикстур, без времени,
    которое поток тестов ждал свободного ядра (:func:`_waited_for_a_core`): на занятой машине
    быстрый тест не становится медленным.
    """
    outcome = yield
    report = outcome.get_result()
    limit = item.config.getoption("--max-fast-seconds")
    if limit is None or is_slow(item) or item.get_closest_marker("smoke"):
        return
    if not report.passed or report.when not in ("setup", "call"):
        return
    allowed = limit * (SETUP_FACTOR if report.when == "setup" else 1)
    waited = item.stash.get(_WAIT_KEY, {}).get(report.when, 0.0)
    took = report.duration - waited
    if took > allowed:
        what = "готовился" if report.when == "setup" else "шёл"
        report.outcome = "failed"
        report.longrepr = (
            f"{item.nodeid} {what} {took:.1f} с — дольше {allowed:g} с, положенных "
            "тесту быстрого прогона. Ускорьте его или отметьте slow (или дайте ему долгую "
            "фикстуру из SLOW_FIXTURES в tests/conftest.py): тогда он пойдёт в make test-all."
        )


# --------------------------------------------------------------------------- счёт проверок

#: Сколько утверждений ``assert`` прошло в этом процессе (``pytest_assertion_pass`` вызывается,
#: только если включён ``enable_assertion_pass_hook`` — он включён в pyproject.toml).
ASSERTIONS_PASSED = 0


def pytest_assertion_pass(item, lineno, orig, expl):
    global ASSERTIONS_PASSED
    ASSERTIONS_PASSED += 1


def pytest_sessionfinish(session):
    """Процесс xdist отдаёт свой счёт главному процессу, а тот печатает сумму.

    И каждый процесс пишет время своих общих фикстур (:func:`fixture_times_file`).
    """
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["assertions_passed"] = ASSERTIONS_PASSED
    target = fixture_times_file(session.config)
    if target is not None and FIXTURE_TIMES:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(FIXTURE_TIMES, ensure_ascii=False), encoding="utf-8")


def pytest_testnodedown(node, error):
    global ASSERTIONS_PASSED
    ASSERTIONS_PASSED += getattr(node, "workeroutput", {}).get("assertions_passed", 0)


def pytest_terminal_summary(terminalreporter, config):
    if config.getini("enable_assertion_pass_hook"):
        terminalreporter.write_line(f"Утверждений assert прошло: {ASSERTIONS_PASSED}")


@pytest.fixture(autouse=True)
def lenient_checks(monkeypatch):
    """Тесты сами решают, включать ли строгий режим."""
    monkeypatch.delenv("FEEDBACK_STRICT", raising=False)


def tree_hash(folder: Path) -> str:
    """Хэш всех файлов папки (имена и содержимое), кроме кэшей Python."""
    from feedback.teacher.grading.reference import tree_digest

    return tree_digest(folder).hex()


@dataclass
class GradedClass:
    """Итоги одного запуска оценивания на синтетическом классе (tests/support/corpus.py)."""

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
    if shutil.which("bwrap") is None and REQUIRE_SANDBOX.read() is not True:
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
    """Оценивает класс из tests/support/corpus.py и возвращает то, что видно только во время
    запуска."""
    from corpus import TEACHER_MARKER, class_settings, class_works, use_class_secret

    from feedback.teacher.grading import grade

    work.mkdir(parents=True)
    folder.mkdir(parents=True)
    use_class_secret(work)
    for item in class_works(_class_targets(work, folder)):
        item.write(folder)
    watched = {"feedback": ROOT / "feedback", "solutions": ROOT / "solutions", "class": folder}
    before = {name: tree_hash(path) for name, path in watched.items()}
    patch = pytest.MonkeyPatch()
    patch.setenv("COURSE7_TEACHER_SECRET", TEACHER_MARKER)  # его не должно быть в итогах
    patch.delenv("COURSE7_TINY", raising=False)
    settings = class_settings(work)
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
    """Класс из tests/support/corpus.py, оценённый один раз на весь запуск.

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
    from feedback.teacher.core.settings import Settings
    from feedback.teacher.grading import grade, reference

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
            reference.warm_up(run, set(WARM_LABS), settings.workspace.cache)
            (template / ".grading-secret").unlink()  # у каждой копии будет свой
            (template / ".ready").touch()

    def copy(target: Path) -> Path:
        shutil.copytree(template, target, ignore=shutil.ignore_patterns(".ready"))
        return target

    return copy

"""Параллельный прогон тестов (make test, pytest-xdist) держит общие фикстуры в одном процессе.

Если группы xdist молча перестанут работать (так было с pytest 9 и xdist 3.8), два процесса
начнут одновременно собирать одно окружение Colab: CI падает непонятно и вдвое дольше. Этот
тест ловит это сразу. Синтетический класс делят все процессы (он оценивается один раз под
блокировкой, tests/conftest.py): его тесты стоят так, чтобы оценивание началось первым, а
ждать его не пришлось.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from notebook_runner import ROOT

SHARED_MODULE = """
import json, os, pathlib, time
import pytest

pytestmark = pytest.mark.xdist_group("shared")

def record(name):
    time.sleep(0.3)
    out = pathlib.Path(os.environ["GROUPS_OUT"]) / name
    out.write_text(os.environ.get("PYTEST_XDIST_WORKER", "main"))

def test_one(): record("one")
def test_two(): record("two")
def test_three(): record("three")
def test_four(): record("four")
"""

OTHER_MODULE = """
import time

def test_a(): time.sleep(0.3)
def test_b(): time.sleep(0.3)
"""

TESTS = ROOT / "tests"
CONFTEST = f"""
import importlib.util, sys
sys.path.insert(0, {str(TESTS / "support")!r})
spec = importlib.util.spec_from_file_location("course_conftest", {str(TESTS / "conftest.py")!r})
course_conftest = importlib.util.module_from_spec(spec)
sys.modules["course_conftest"] = course_conftest
spec.loader.exec_module(course_conftest)
pytest_collection_modifyitems = course_conftest.pytest_collection_modifyitems
pytest_addoption = course_conftest.pytest_addoption
pytest_runtest_makereport = course_conftest.pytest_runtest_makereport
"""


@pytest.mark.slow  # вложенный pytest в двух процессах
def test_shared_fixture_module_runs_in_one_worker(tmp_path):
    project = tmp_path / "project"
    out = tmp_path / "out"
    project.mkdir()
    out.mkdir()
    (project / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (project / "test_student_notebooks.py").write_text(SHARED_MODULE)
    (project / "test_other.py").write_text(OTHER_MODULE)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, "-n", "2", "--dist", "loadgroup", str(project)],
        cwd=project,
        env={"GROUPS_OUT": str(out), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    workers = {path.name: path.read_text() for path in out.iterdir()}
    assert len(workers) == 4, workers
    assert len(set(workers.values())) == 1, json.dumps(workers)
    assert next(iter(workers.values())).startswith("gw"), workers


class _Item:
    """Тест для порядка и отметок: имя, фикстуры и отметки (как у pytest)."""

    def __init__(self, name: str, on_class=False, fixtures=(), marks=()) -> None:
        self.name = name
        self.fixturenames = ("graded_class", *fixtures) if on_class else tuple(fixtures)
        self.marks = list(marks)

    def get_closest_marker(self, name):
        return next((mark for mark in self.marks if mark.name == name), None)

    def add_marker(self, marker) -> None:
        self.marks.append(marker.mark)


def _modify(items):
    from tests.conftest import pytest_collection_modifyitems

    pytest_collection_modifyitems(items)
    return [item.name for item in items]


def test_the_class_is_graded_first_and_its_other_tests_run_last():
    items = [_Item(name, name.startswith("class")) for name in
             ("a", "class_1", "b", "class_2", "c", "class_3")]  # fmt: skip
    items.append(_Item("class_pages", True, marks=[pytest.mark.browser.mark]))
    # Страницы класса в Chromium — первыми среди остальных тестов класса: они самые долгие.
    assert _modify(items) == ["class_1", "a", "b", "c", "class_pages", "class_2", "class_3"]


def test_groups_declared_by_modules_go_first_largest_first():
    """Группы xdist объявляют сами модули; группы — до одиночных тестов, большие — раньше."""

    keras, colab = pytest.mark.xdist_group("keras").mark, pytest.mark.xdist_group("colab").mark
    items = [
        _Item("colab_venv", marks=[colab]),
        _Item("other"),
        _Item("generation", marks=[keras]),
        _Item("precision", marks=[keras]),
    ]
    assert _modify(items) == ["generation", "precision", "colab_venv", "other"]


def test_the_tier_follows_from_the_fixtures_a_test_uses():
    """Тест с фикстурой, которая запускает ядро, песочницу или браузер, — сам становится slow."""

    items = [
        _Item("unit", fixtures=("tmp_path",)),
        _Item("grading", fixtures=("tmp_path", "fresh_work")),
        _Item("smoke", fixtures=("sandbox",), marks=[pytest.mark.smoke.mark]),
        _Item("marked", marks=[pytest.mark.slow.mark]),
    ]
    _modify(items)
    slow = {item.name for item in items if item.get_closest_marker("slow")}
    assert slow == {"grading", "marked"}


SLOW_UNMARKED = """
import time

def test_quick():
    pass

def test_sleeps():
    time.sleep(4)
"""


@pytest.mark.slow  # вложенный pytest со спящим тестом
def test_a_fast_tier_test_over_three_seconds_fails_with_its_name(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (project / "test_sleepy.py").write_text(SLOW_UNMARKED)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [*command, "-m", "not slow", "--max-fast-seconds", "3", str(project)],
        cwd=project,
        env={"PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    assert "1 failed, 1 passed" in done.stdout
    assert "test_sleepy.py::test_sleeps шёл 4" in done.stdout

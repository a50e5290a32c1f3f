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
import types

from notebook_runner import ROOT

SHARED_MODULE = """
import json, os, pathlib, time

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
sys.path.insert(0, {str(TESTS)!r})
spec = importlib.util.spec_from_file_location("course_conftest", {str(TESTS / "conftest.py")!r})
course_conftest = importlib.util.module_from_spec(spec)
sys.modules["course_conftest"] = course_conftest
spec.loader.exec_module(course_conftest)
pytest_collection_modifyitems = course_conftest.pytest_collection_modifyitems
"""


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
    def __init__(self, name: str, on_class: bool = False, module: str = "", fixtures=()) -> None:
        self.name = name
        self.module = types.SimpleNamespace(__name__=module) if module else None
        self.fixturenames = ("graded_class",) if on_class else tuple(fixtures)
        self.groups: list[str] = []

    def add_marker(self, marker) -> None:
        self.groups.append(marker.args[0])


def test_the_class_is_graded_first_and_its_other_tests_run_last():
    sys.path.insert(0, str(TESTS))
    from conftest import pytest_collection_modifyitems

    items = [_Item(name, name.startswith("class")) for name in
             ("a", "class_1", "b", "class_2", "c", "class_3")]  # fmt: skip
    items.append(_Item("class_pages", True, module="test_hostile_pages"))
    pytest_collection_modifyitems(items)
    # Страницы класса в Chromium — первыми среди остальных тестов класса: они самые долгие.
    order = ["class_1", "a", "b", "c", "class_pages", "class_2", "class_3"]
    assert [item.name for item in items] == order


def test_keras_modules_share_one_group_and_colab_tests_without_its_venv_go_anywhere():
    """Один процесс на keras в процессе тестов; группы — до одиночных тестов, большие — раньше."""
    sys.path.insert(0, str(TESTS))
    from conftest import pytest_collection_modifyitems

    items = [
        _Item("colab_plan", module="test_colab_versions", fixtures=("tmp_path",)),
        _Item("colab_venv", module="test_colab_versions", fixtures=("colab_python",)),
        _Item("generation", module="test_generation"),
        _Item("other", module="test_flops"),
        _Item("precision", module="test_precision"),
        _Item("monitor", module="test_monitor"),
    ]
    pytest_collection_modifyitems(items)
    groups = {item.name: item.groups for item in items}
    assert groups["generation"] == groups["precision"] == groups["monitor"] == ["keras_in_process"]
    assert groups["colab_venv"] == ["test_colab_versions"]
    assert groups["colab_plan"] == groups["other"] == []
    # Группы — первыми, от больших к малым (make test не даёт xdist пересортировать их).
    order = [item.name for item in items]
    assert order == ["generation", "precision", "monitor", "colab_venv", "colab_plan", "other"]

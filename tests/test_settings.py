"""Настройки: реестр переменных окружения (feedback/settings.py) и настройки оценивания."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

from feedback import settings
from feedback.settings import VARIABLES, SettingError, parse_size
from feedback.teacher.settings import (
    CPU_LIMITS,
    GPU_LIMITS,
    Limits,
    Settings,
    gradebook_url,
    is_gpu_lab,
)

from notebook_runner import ROOT

NAME = re.compile(r"\b(?:COURSE7|FEEDBACK)_[A-Z0-9_]*[A-Z0-9]")
#: Не переменная курса: метка, которую тесты кладут в окружение преподавателя, чтобы
#: убедиться, что она не попадает ни в песочницу, ни в итоги.
NOT_SETTINGS = {"COURSE7_TEACHER_SECRET"}


def mentioning_files():
    yield from sorted((ROOT / "feedback").rglob("*.py"))
    yield from sorted((ROOT / "tests").glob("*.py"))
    yield from sorted((ROOT / "docs").glob("*.md"))
    yield from sorted((ROOT / ".ci").glob("*"))
    for name in ("nbgrader_config.py", "Makefile", "README.md"):
        yield ROOT / name


def test_every_variable_the_course_mentions_is_in_the_registry():
    unknown = {}
    for path in mentioning_files():
        if not path.is_file():
            continue
        for name in set(NAME.findall(path.read_text(encoding="utf-8"))) - NOT_SETTINGS:
            if name not in VARIABLES:
                unknown.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert not unknown, f"переменные не названы в feedback/settings.py: {unknown}"


def test_only_the_registry_spells_the_names():
    """Модули читают переменные через реестр: имя строкой записано только в нём."""
    spelled = {}
    for path in sorted((ROOT / "feedback").rglob("*.py")):
        if path == ROOT / "feedback" / "settings.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in VARIABLES:
                spelled.setdefault(node.value, []).append(str(path.relative_to(ROOT)))
    assert not spelled, f"имена переменных строкой вне feedback/settings.py: {spelled}"


def test_keras_backend_default_is_set_in_one_place():
    """«Keras на JAX по умолчанию» — одна функция (settings.default_keras_backend), без копий."""
    copies = []
    for path in sorted((ROOT / "feedback").rglob("*.py")):
        if path == ROOT / "feedback" / "settings.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr == "setdefault"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and node.args[0].value == "KERAS_BACKEND"
            ):
                copies.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert copies == [], f"свой выбор бэкенда вместо default_keras_backend: {copies}"


def test_keras_backend_default_respects_a_chosen_backend():
    env = {}
    settings.default_keras_backend(env)
    chosen = {"KERAS_BACKEND": "tensorflow"}
    settings.default_keras_backend(chosen)
    # keras уже импортирован (другими тестами процесса) — тогда выбор не трогается вовсе.
    assert chosen == {"KERAS_BACKEND": "tensorflow"}
    assert env == ({} if "keras" in sys.modules else {"KERAS_BACKEND": "jax"})


def test_every_variable_says_what_it_means():
    for variable in VARIABLES.values():
        assert re.search("[а-я]", variable.meaning), variable.name
        assert variable.kind in {"flag", "seconds", "size", "integer", "path", "text"}
        assert variable.default is not None or variable.shown_default
    table = settings.table()
    assert all(f"`{name}`" in table for name in VARIABLES)


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), (" Yes ", True), ("on", True), ("0", False), ("off", False), ("", None)],
)
def test_flags(value, expected):
    assert settings.STRICT.read({"FEEDBACK_STRICT": value}) is expected


def test_typed_values_and_defaults():
    assert settings.CALL_TIMEOUT.read({}) == 10.0
    assert settings.CALL_TIMEOUT.read({"COURSE7_CALL_TIMEOUT": "2,5"}) == 2.5
    assert settings.MEMORY_LIMIT.read({"COURSE7_MEMORY_LIMIT": "1536M"}) == 1536 * 1024**2
    assert settings.MEMORY_LIMIT.read({}) is None
    assert settings.CACHE_DIR.read({}) == Path.home() / ".cache" / "course7"
    assert settings.JOBS.read({"JOBS": "4"}) == 4
    with pytest.raises(SettingError, match="COURSE7_CELL_TIMEOUT"):
        settings.CELL_TIMEOUT.read({"COURSE7_CELL_TIMEOUT": "минута"})
    assert settings.CALL_TIMEOUT.read_or(7.0, {"COURSE7_CALL_TIMEOUT": "x"}) == 7.0
    assert parse_size("2.5GiB") == int(2.5 * 1024**3)


def test_the_registry_is_light():
    """Модуль читает и ядро в песочнице: только стандартная библиотека."""
    tree = ast.parse((ROOT / "feedback" / "settings.py").read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module.split(".")[0])
    import sys

    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported


def test_grading_settings_from_the_environment(tmp_path):
    found = Settings.from_env({"COURSE7_GRADING_DIR": str(tmp_path), "JOBS": "3"})
    assert found.work == tmp_path.resolve() and found.jobs == 3
    assert found.gradebook_url == gradebook_url(tmp_path.resolve())
    assert found.gradebook_url == f"sqlite:///{tmp_path.resolve() / 'gradebook.db'}"
    assert found.submitted == tmp_path.resolve() / "submitted"
    assert Settings.from_env({}).work == (ROOT / ".course-work").resolve()
    assert Settings.from_env({}).cpu_limits == CPU_LIMITS
    budgets = Settings.from_env({"COURSE7_NOTEBOOK_TIMEOUT": "30", "COURSE7_CALL_TIMEOUT": "1"})
    assert budgets.gpu_limits == replace(GPU_LIMITS, notebook_seconds=30, call_seconds=1)
    assert budgets.cpu_limits == replace(CPU_LIMITS, notebook_seconds=30, call_seconds=1)


def test_gpu_labs_are_told_apart_in_one_place():
    gpu = {
        path.parent.name
        for path in (ROOT / "notebooks").glob("*/*.ipynb")
        if is_gpu_lab(nbformat.read(path, as_version=4))
    }
    assert {lab[:7] for lab in gpu} == {"lab_7_1", "lab_7_3", "lab_7_5", "lab_7_6"}, gpu
    assert Settings().limits_for(nbformat.v4.new_notebook()) == CPU_LIMITS


def test_limits_travel_as_json_and_have_no_made_up_budget():
    assert Limits.from_json(GPU_LIMITS.to_json()) == GPU_LIMITS
    with pytest.raises(TypeError):
        Limits()  # время и память — только у лабораторной

"""Настройки: реестр переменных окружения (feedback/settings.py) и настройки оценивания."""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import replace
from functools import cache
from pathlib import Path

import nbformat
import pytest

from feedback import settings
from feedback.settings import VARIABLES, SettingError, parse_size
from feedback.teacher.core.labs import is_gpu_notebook
from feedback.teacher.core.settings import (
    CPU_LIMITS,
    GPU_LIMITS,
    UPLOAD_LIMITS,
    Limits,
    Settings,
    UploadLimits,
)

from notebook_runner import ROOT

NAME = re.compile(r"\b(?:COURSE7|FEEDBACK)_[A-Z0-9_]*[A-Z0-9]")
#: Не переменная курса: метка, которую тесты кладут в окружение преподавателя, чтобы
#: убедиться, что она не попадает ни в песочницу, ни в итоги.
NOT_SETTINGS = {"COURSE7_TEACHER_SECRET"}


def mentioning_files():
    yield from sorted((ROOT / "feedback").rglob("*.py"))
    yield from sorted((ROOT / "tests").rglob("*.py"))
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


@cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def package_modules(*, besides: Path = ROOT / "feedback" / "settings.py"):
    """Модули пакета, кроме реестра переменных."""
    return [path for path in sorted((ROOT / "feedback").rglob("*.py")) if path != besides]


def test_only_the_registry_spells_the_names():
    """Модули читают переменные через реестр: имя строкой записано только в нём."""
    spelled = {}
    for path in package_modules():
        for node in ast.walk(tree(path)):
            if isinstance(node, ast.Constant) and node.value in VARIABLES:
                spelled.setdefault(node.value, []).append(str(path.relative_to(ROOT)))
    assert not spelled, f"имена переменных строкой вне feedback/settings.py: {spelled}"


#: Переменные сторонних библиотек машинного обучения (Keras, TensorFlow, JAX, XLA, CUDA).
LIBRARY_NAME = re.compile(r"^(KERAS|TF|JAX|XLA|CUDA)_[A-Z0-9_]+$")


def library_settings(module: ast.Module) -> list[tuple[int, str]]:
    """Где модуль задаёт переменной сторонней библиотеки постоянное значение.

    Словарь окружения (``{"JAX_PLATFORMS": "cpu"}``, ``dict(KERAS_BACKEND="jax")``),
    ``env.setdefault(…)``, ``env.update(…)``, ``os.environ[…] = …``. Путь, который зависит от
    запуска (``KERAS_HOME`` — домашняя папка ядра), — не постоянное значение.
    """

    def named(node) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value if LIBRARY_NAME.match(node.value) else None
        return None

    def constant(node) -> bool:
        return isinstance(node, ast.Constant)

    found = []
    for node in ast.walk(module):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if named(key) and constant(value):
                    found.append((node.lineno, named(key)))
        elif isinstance(node, ast.Call):
            function = node.func
            method = function.attr if isinstance(function, ast.Attribute) else None
            if method in ("setdefault", "putenv") and len(node.args) > 1:
                if named(node.args[0]) and constant(node.args[1]):
                    found.append((node.lineno, named(node.args[0])))
            if method == "update" or (isinstance(function, ast.Name) and function.id == "dict"):
                for keyword in node.keywords:
                    if keyword.arg and LIBRARY_NAME.match(keyword.arg) and constant(keyword.value):
                        found.append((node.lineno, keyword.arg))
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Subscript) and named(target.slice):
                    if constant(node.value):
                        found.append((node.lineno, named(target.slice)))
    return found


def test_library_variables_are_set_in_one_place():
    """Значения переменных Keras, TensorFlow, JAX, XLA и CUDA курс задаёт только в реестре."""
    copies = [
        f"{path.relative_to(ROOT)}:{line} {name}"
        for path in package_modules()
        for line, name in library_settings(tree(path))
    ]
    assert copies == [], (
        "переменные сторонних библиотек задаются вне feedback/settings.py "
        f"(возьмите KERAS_ON_JAX, QUIET_TENSORFLOW, CPU_ONLY… оттуда): {copies}"
    )
    assert set(settings.LIBRARY_VARIABLES) == {
        "KERAS_BACKEND",
        "TF_CPP_MIN_LOG_LEVEL",
        "JAX_PLATFORMS",
        "CUDA_VISIBLE_DEVICES",
        "XLA_FLAGS",
        "XLA_PYTHON_CLIENT_PREALLOCATE",
        "XLA_PYTHON_CLIENT_ALLOCATOR",
        *settings.JAX_COMPILATION_CACHE_ENV,
    }
    assert all(LIBRARY_NAME.match(name) for name in settings.LIBRARY_VARIABLES)


def test_the_library_rule_sees_each_way_of_setting():
    source = """
import os
env = {"JAX_PLATFORMS": "cpu", "HOME": "/h", "KERAS_HOME": str(home)}
env.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
env.update(KERAS_BACKEND="jax", JAX_COMPILATION_CACHE_DIR=path)
os.environ["XLA_FLAGS"] = "--x"
child = dict(CUDA_VISIBLE_DEVICES="")
value = os.environ.get("XLA_PYTHON_CLIENT_PREALLOCATE")
"""
    assert [name for _, name in sorted(library_settings(ast.parse(source)))] == [
        "JAX_PLATFORMS",
        "TF_CPP_MIN_LOG_LEVEL",
        "KERAS_BACKEND",
        "XLA_FLAGS",
        "CUDA_VISIBLE_DEVICES",
    ]


def test_tests_read_their_variables_through_the_registry():
    """Свои переменные (``COURSE7_REQUIRE_SANDBOX``, ``COURSE7_REQUIRE_BROWSER``,
    ``COURSE7_CHROMIUM``) тесты читают реестром (``.read()``): «1», «true», «yes» и «on» значат
    одно и то же везде."""
    names = {variable.name for variable in VARIABLES.values() if variable.where == settings.TESTS}
    assert {"COURSE7_REQUIRE_SANDBOX", "COURSE7_REQUIRE_BROWSER"} <= names
    spelled = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.value}"
        for path in sorted((ROOT / "tests").rglob("*.py"))
        if path != Path(__file__).resolve()
        for node in ast.walk(tree(path))
        if isinstance(node, ast.Constant) and node.value in names
    ]
    assert spelled == [], f"тесты читают свои переменные мимо реестра: {spelled}"


def numeric(node: ast.expr) -> bool:
    """Число или выражение из чисел и KIB/MIB/GIB (``2 * 1024**2``, ``64 * MIB``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, int | float) and not isinstance(node.value, bool)
    if isinstance(node, ast.BinOp):
        return all(
            numeric(part) or (isinstance(part, ast.Name) and part.id in ("KIB", "MIB", "GIB"))
            for part in (node.left, node.right)
        )
    return isinstance(node, ast.UnaryOp) and numeric(node.operand)


def uncommented_constants(path: Path) -> list[str]:
    """Числовые константы модуля без комментария: ни в конце строки, ни в блоке над ней."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = []
    for node in tree(path).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        value = getattr(node, "value", None)
        if not (isinstance(target, ast.Name) and target.id.isupper() and value is not None):
            continue
        if not numeric(value) or "#" in lines[node.end_lineno - 1]:
            continue
        above = node.lineno - 2
        while above >= 0 and lines[above].strip() and not lines[above].lstrip().startswith("#"):
            above -= 1  # соседние константы одного блока делят его комментарий
        if above < 0 or not lines[above].lstrip().startswith("#"):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno} {target.id}")
    return found


def test_module_limits_are_internal_and_say_why():
    """Правило настроек (docs/development.md): что может настроить преподаватель — в
    feedback/teacher/core/settings.py (Limits, UploadLimits, Settings); число-константа модуля
    оценивания или движка — внутренний предел защиты, и комментарий говорит, почему он такой."""
    modules = [
        path
        for folder in ("teacher", "engine")
        for path in sorted((ROOT / "feedback" / folder).rglob("*.py"))
        if path != ROOT / "feedback" / "teacher" / "core" / "settings.py"
    ]
    found = [item for path in modules for item in uncommented_constants(path)]
    assert found == [], f"константы без комментария (или это настройка — тогда в Limits): {found}"


def test_the_upload_caps_are_read_from_the_settings(tmp_path, monkeypatch):
    """Предел архива (и тетрадки) меняется в одном месте — ``UploadLimits`` в настройках
    оценивания: чтение папки и архива берёт его оттуда при каждом чтении, своей копии числа
    у него нет."""
    import zipfile

    from feedback.teacher.core import settings as teacher_settings
    from feedback.teacher.intake.archives import from_folder, from_zip

    data = b"{}" * 50  # содержимое не разбирается: считаются только байты
    names = [f"{student}/lab.ipynb" for student in ("a", "b", "c")]
    archive, folder = tmp_path / "export.zip", tmp_path / "folder"
    with zipfile.ZipFile(archive, "w") as zf:
        for name in names:
            zf.writestr(name, data)
            (folder / name).parent.mkdir(parents=True)
            (folder / name).write_bytes(data)
    sources = ((from_zip, archive), (from_folder, folder))
    for read, source in sources:
        assert [upload.path for upload in read(source)[0]] == names
    smaller = UploadLimits(archive_bytes=2 * len(data) + 10)
    monkeypatch.setattr(teacher_settings, "UPLOAD_LIMITS", smaller)
    for read, source in sources:
        found, problems = read(source)
        assert [upload.path for upload in found] == names[:2]
        assert [(p.file, "не прочитан" in p.problem) for p in problems] == [(names[2], True)]
    monkeypatch.setattr(
        teacher_settings, "UPLOAD_LIMITS", UploadLimits(notebook_bytes=len(data) - 1)
    )
    for read, source in sources:
        found, problems = read(source)
        assert found == [] and all("файл больше 99 байт" in p.problem for p in problems)
        assert len(problems) == 3


def test_what_a_teacher_tunes_is_in_the_settings():
    """Пределы чтения работ, вывода в отчёте и запасы времени — поля настроек, а не
    константы модулей; модули берут их оттуда."""
    assert UPLOAD_LIMITS == UploadLimits()  # пределы чтения работ — по умолчанию
    for limits in (CPU_LIMITS, GPU_LIMITS):
        assert limits.output_bytes == 2 * 1024**2  # вывод ячейки при оценивании, байты
        assert limits.submitted_output_chars == 512 * 1024  # сданный вывод ячейки, символы
        assert (limits.interrupt_grace_seconds, limits.unit_grace_seconds) == (10, 120)
    for module in ("runner", "execute", "learner_outputs"):
        source = (ROOT / "feedback" / "teacher" / "unit" / f"{module}.py").read_text(
            encoding="utf-8"
        )
        assert "GRACE" not in source and "CELL_LIMIT" not in source, module


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
    assert found.workspace.gradebook_url == f"sqlite:///{tmp_path.resolve() / 'gradebook.db'}"
    assert found.workspace.submitted == tmp_path.resolve() / "submitted"
    assert Settings.from_env({}).work == (ROOT / ".course-work").resolve()
    assert Settings.from_env({}).cpu_limits == CPU_LIMITS
    budgets = Settings.from_env({"COURSE7_NOTEBOOK_TIMEOUT": "30", "COURSE7_CALL_TIMEOUT": "1"})
    assert budgets.gpu_limits == replace(GPU_LIMITS, notebook_seconds=30, call_seconds=1)
    assert budgets.cpu_limits == replace(CPU_LIMITS, notebook_seconds=30, call_seconds=1)


def test_gpu_labs_are_told_apart_in_one_place():
    gpu = {
        path.parent.name
        for path in (ROOT / "notebooks").glob("*/*.ipynb")
        if is_gpu_notebook(nbformat.read(path, as_version=4))
    }
    assert {lab[:7] for lab in gpu} == {"lab_7_1", "lab_7_3", "lab_7_5", "lab_7_6"}, gpu
    assert Settings().limits_for(nbformat.v4.new_notebook()) == CPU_LIMITS


def test_limits_travel_as_json_and_have_no_made_up_budget():
    assert Limits.from_json(GPU_LIMITS.to_json()) == GPU_LIMITS
    with pytest.raises(TypeError):
        Limits()  # время и память — только у лабораторной

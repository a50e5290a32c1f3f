"""Рабочая папка названа в одном месте, лабораторные — одним списком.

Три правила программы преподавателя (feedback/teacher/), которые легко нарушить незаметно:

- имя файла или папки рабочей папки (``Workspace.GRADEBOOK`` = "gradebook.db", "release",
  "units" …) пишется только в :mod:`feedback.teacher.core.workspace`; остальные модули берут
  путь у :class:`~feedback.teacher.core.workspace.Workspace` (``workspace.gradebook``);
- никто не собирает путь ``work / "…"`` сам;
- список лабораторных один — :func:`feedback.teacher.core.labs.course_labs`
  (``Settings.labs``): прежних ``lab_sources``, ``lab_ids``, ``lab_titles`` и ``resolve_lab``
  нет, а новая лабораторная в solutions/ сразу видна выпуску и выгрузке.

Исходники разбираются :mod:`ast`: строки документации и комментарии не в счёт, в счёт —
строковые константы, куски f-строк и части пути через «/» внутри строки.
"""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest

from feedback.teacher.core.settings import Settings
from feedback.teacher.core.workspace import Workspace

from notebook_runner import ROOT

TEACHER = ROOT / "feedback" / "teacher"
WORKSPACE_MODULE = TEACHER / "core" / "workspace.py"

#: Где имя из рабочей папки законно означает другое: (модуль, функция, строка) → почему.
#: Функция — цепочка вложенных ``def`` (``plain_nbgrader.run``), вне функций — «».
ALLOWED: dict[tuple[str, str, str], str] = {
    ("course/bench.py", "plain_nbgrader.run", "submitted"): "обычный курс nbgrader в make bench",
    ("course/bench.py", "plain_nbgrader.run", "autograded"): "обычный курс nbgrader в make bench",
    ("hub/accounts.py", "prepare_exchange_link", "exchange"): "общая папка класса, не рабочая",
    ("hub/accounts.py", "setup", "config"): "общая папка класса, не рабочая",
    ("hub/state.py", "Hub.config", "config"): "общая папка класса, не рабочая",
    ("hub/process.py", "_config_file", "hub"): "папка hub/ репозитория с настройками JupyterHub",
}

#: Ответы на «какие лабораторные есть», которых больше нет: их заменил core/labs.py.
OLD_LAB_ANSWERS = ("lab_sources", "lab_ids", "lab_titles", "resolve_lab")


def workspace_names() -> dict[str, str]:
    """Имена рабочей папки: ``Workspace.GRADEBOOK`` → "gradebook.db" и т. д."""
    return {
        key: value
        for key, value in vars(Workspace).items()
        if key.isupper() and isinstance(value, str)
    }


def forbidden_pieces() -> dict[str, str]:
    """Что нельзя писать строкой: имена целиком, а у шаблонов ("{lab}_worksheet.csv") —
    их особая часть ("_worksheet.csv"), которая стоит в f-строке рядом с ``{lab}``."""
    pieces = {}
    for key, value in workspace_names().items():
        if "{" not in value:
            pieces[value] = key
            continue
        for part in value.replace("{", "}").split("}")[::2]:
            if len(part) >= 8:  # ".csv" сам по себе — не имя рабочей папки
                pieces[part] = key
    return pieces


def teacher_modules() -> list[Path]:
    return sorted(path for path in TEACHER.rglob("*.py") if path != WORKSPACE_MODULE)


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def _path_pieces(tree: ast.AST) -> set[int]:
    """Строки, которые стоят частью пути: справа от ``/`` или аргументом ``joinpath``/``Path``."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found.add(id(node.right))
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("joinpath", "Path"):
                found.update(id(arg) for arg in node.args)
    return found


class _Strings(ast.NodeVisitor):
    """Строковые константы (и куски f-строк) с цепочкой функций, где они стоят, и стоят ли
    они частью пути."""

    def __init__(self, skip: set[int], pieces: set[int]) -> None:
        self.skip, self.pieces, self.where, self.found = skip, pieces, [], []

    def _scope(self, node: ast.AST) -> None:
        self.where.append(node.name)
        self.generic_visit(node)
        self.where.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scope

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and id(node) not in self.skip:
            in_path = id(node) in self.pieces
            self.found.append((node.lineno, ".".join(self.where), node.value, in_path))


def strings(path: Path) -> list[tuple[int, str, str, bool]]:
    """(строка, функция, текст, часть ли пути) строковых констант модуля, кроме документации."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    visitor = _Strings(_docstrings(tree), _path_pieces(tree))
    visitor.visit(tree)
    return visitor.found


def _names_in(text: str, piece: str, name: str, in_path: bool) -> bool:
    """Есть ли в строке имя рабочей папки.

    Папка ("release") — только вся строка целиком: «hub/health» или «c7-hub» — не она; а папка,
    названная обычным словом («config», «users», «exchange»), — только там, где строка стоит
    частью пути (``… / "config"``): ключ JSON, подкоманда или магия ``%config`` — не папка.
    Файл ("gradebook.db") — и часть пути через «/». Особая часть шаблона ("_worksheet.csv") —
    где угодно в строке.
    """
    if "{" in name:
        return piece in text
    if "." in piece:
        return piece in text.split("/")
    if piece.isalpha() and not in_path:
        return False
    return text == piece


def spelled_names(path: Path) -> list[tuple[int, str, str, str]]:
    """(строка, функция, текст, имя Workspace) для каждого имени рабочей папки строкой."""
    names = workspace_names()
    return [
        (line, where, text, key)
        for line, where, text, in_path in strings(path)
        for piece, key in forbidden_pieces().items()
        if _names_in(text, piece, names[key], in_path)
    ]


def test_work_folder_names_live_only_in_workspace():
    names = workspace_names()
    used = set()
    problems = []
    for path in teacher_modules():
        module = path.relative_to(TEACHER).as_posix()
        for line, where, text, key in spelled_names(path):
            if (module, where, names[key]) in ALLOWED:
                used.add((module, where, names[key]))
                continue
            problems.append(f"{module}:{line} ({where or '—'}): {text!r} — это Workspace.{key}")
    assert problems == [], "\n".join(problems)
    assert used == set(ALLOWED), f"лишние исключения: {set(ALLOWED) - used}"


def test_the_scan_finds_a_spelled_name(tmp_path):
    """Проверка сканера: имя строкой, в пути и в f-строке находится, в документации — нет."""
    module = tmp_path / "m.py"
    module.write_text(
        '"""gradebook.db в документации — можно."""\n'
        'A = "gradebook.db"\n'
        'B = f"{work}/hub/hub.json"\n'
        "def f(lab, folder):\n"
        '    return f"{lab}_worksheet.csv", folder / "release", "release notes", "c7-hub"\n'
        'C = {"release": "подкоманда", "config": "ключ"}\n',
        encoding="utf-8",
    )
    assert [(line, where, key) for line, where, _, key in spelled_names(module)] == [
        (2, "", "GRADEBOOK"),
        (3, "", "HUB_STATE"),
        (5, "f", "WORKSHEET"),
        (5, "f", "RELEASE"),
    ]


def _work_joins(path: Path) -> list[int]:
    """Строки, где путь собирается как ``work / "…"`` (или ``settings.work / f"…"``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div)):
            continue
        left = node.left
        named_work = (isinstance(left, ast.Name) and left.id == "work") or (
            isinstance(left, ast.Attribute) and left.attr == "work"
        )
        literal = isinstance(node.right, ast.JoinedStr) or (
            isinstance(node.right, ast.Constant) and isinstance(node.right.value, str)
        )
        if named_work and literal:
            found.append(node.lineno)
    return found


def test_nobody_builds_paths_in_the_work_folder_by_hand():
    problems = [
        f"{path.relative_to(TEACHER).as_posix()}:{line}"
        for path in teacher_modules()
        for line in _work_joins(path)
    ]
    assert problems == [], "пути рабочей папки — у Workspace: " + ", ".join(problems)


def test_the_old_lab_lists_are_gone():
    defined = [
        f"{path.relative_to(ROOT).as_posix()}: {node.name}"
        for path in sorted((ROOT / "feedback").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.FunctionDef) and node.name in OLD_LAB_ANSWERS
    ]
    assert defined == []


#: Кто спрашивает, какие лабораторные есть: все — у core/labs.py (Settings.labs,
#: Settings.find_lab, course_labs, find_lab), никто не ищет тетрадки в solutions/ или release/.
LAB_USERS = (
    "course/release.py",
    "grading/grade.py",
    "grading/reference.py",
    "hub/collect.py",
    "commands/hub.py",
    "lms/export.py",
    "pages/analytics.py",
)
LAB_LIST = {"labs", "find_lab", "course_labs"}


@pytest.mark.parametrize("module", LAB_USERS)
def test_every_stage_asks_the_one_list_of_labs(module):
    tree = ast.parse((TEACHER / module).read_text(encoding="utf-8"))
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    names |= {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert names & LAB_LIST, f"{module} не берёт лабораторные у core/labs.py"
    globs = [
        node.args[0].value
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in {"glob", "rglob"}
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and str(node.args[0].value).endswith(".ipynb")
        and str(node.args[0].value).count("/") == 1  # <лаб>/<лаб>.ipynb — поиск лабораторных
    ]
    assert globs == [], f"{module} ищет лабораторные сам: {globs}"


# --------------------------------------------------------------------------- седьмая лабораторная

SEVENTH = "lab_7_7_extra"
SEVENTH_TITLE = "Лабораторная 7.7. Проба"


@pytest.fixture
def course_root(tmp_path):
    """Копия курса (solutions/ и pyproject.toml) с седьмой лабораторной в solutions/."""
    root = tmp_path / "course"
    shutil.copytree(ROOT / "solutions", root / "solutions")
    shutil.copy(ROOT / "pyproject.toml", root / "pyproject.toml")
    source = root / "solutions" / SEVENTH / f"{SEVENTH}.ipynb"
    source.parent.mkdir()
    notebook = {
        "cells": [
            {
                "cell_type": "markdown",
                "id": "badges",
                "metadata": {"course7": "badges"},
                "source": "старые значки",
            },
            {
                "cell_type": "markdown",
                "id": "title",
                "metadata": {},
                "source": f"# {SEVENTH_TITLE}",
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    source.write_text(json.dumps(notebook, ensure_ascii=False), encoding="utf-8")
    return root


def test_a_new_lab_in_solutions_is_in_the_list(course_root):
    settings = Settings(root=course_root)
    assert [lab.id for lab in settings.labs][-1] == SEVENTH
    assert settings.find_lab("7.7").title == SEVENTH_TITLE


def test_a_new_lab_in_solutions_is_released(course_root):
    from feedback.teacher.course import release

    stale = release.stamp_sources(course_root, write=False)
    assert course_root / "solutions" / SEVENTH / f"{SEVENTH}.ipynb" in stale


def test_a_new_lab_in_solutions_is_exported(course_root, tmp_path, monkeypatch):
    from feedback.teacher.lms import export

    # База оценок здесь ни при чём: пустая, без nbgrader.
    monkeypatch.setattr(export.gradebook, "results", lambda *_: {})
    monkeypatch.setattr(export.gradebook, "students", lambda *_: {})
    settings = Settings(work=tmp_path / "work", root=course_root)
    settings.workspace.folder.mkdir()
    settings.workspace.roster.write_text(
        "id,first_name,last_name,email\nivanov,Иван,Иванов,ivanov@example.org\n", encoding="utf-8"
    )
    target, _ = export.moodle_grades(settings)
    header = target.read_text(encoding="utf-8").splitlines()[0].split(",")
    assert header[-2:] == [SEVENTH_TITLE, f"{SEVENTH_TITLE} — отзыв"]
    assert target == settings.workspace.moodle_grades

"""Граф импортов пакета feedback без циклов.

Граф строится по исходникам (:mod:`ast`), а не импортом: рёбра — и импорты модуля, и
импорты внутри функций (``from feedback.teacher.grade import work_dir`` в ``main()`` —
тоже ребро). Цикл значит, что два модуля знают друг о друге: общую часть надо вынести в
модуль, который импортируют оба.
"""

from __future__ import annotations

import ast
from pathlib import Path

from notebook_runner import ROOT

PACKAGE = ROOT / "feedback"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported(tree: ast.AST, name: str, is_package: bool, known: set[str]) -> set[str]:
    """Модули пакета, которые импортирует модуль ``name`` (где угодно в его тексте)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - node.level + 1]
                prefix = ".".join([*base, node.module] if node.module else base)
            else:
                prefix = node.module or ""
            # «from feedback.teacher import grade» — ребро к feedback.teacher.grade.
            targets = [f"{prefix}.{alias.name}" for alias in node.names] + [prefix]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    paths = sorted(PACKAGE.rglob("*.py"))
    names = {module_name(path): path for path in paths}
    known = set(names)
    graph = {}
    for name, path in names.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        edges = imported(tree, name, path.name == "__init__.py", known)
        # Импорт подмодуля выполняет и пакеты над ним: это не ребро назад.
        graph[name] = {target for target in edges if not name.startswith(target + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Сильно связные компоненты больше одного модуля (алгоритм Тарьяна)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in sorted(graph[node]):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_graph_is_read_from_the_source():
    graph = import_graph()
    assert "feedback.teacher.unit" in graph["feedback.teacher.grade"]
    assert "feedback.teacher.sandbox" in graph["feedback.teacher.unit"] or any(
        "feedback.teacher.sandbox" in graph[name] for name in graph["feedback.teacher.unit"]
    )


def test_the_package_has_no_import_cycle():
    found = cycles(import_graph())
    assert not found, (
        "Модули пакета feedback импортируют друг друга (цикл): "
        + "; ".join(" ↔ ".join(component) for component in found)
        + ". Вынесите общую часть в модуль, который импортируют оба."
    )

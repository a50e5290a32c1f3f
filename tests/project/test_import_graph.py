"""Граф импортов пакета feedback: без циклов и только вниз по слоям.

Граф строится по исходникам (:mod:`ast`), а не импортом: рёбра — и импорты модуля, и
импорты внутри функций (``from feedback.teacher.grading.grade import work_dir`` в ``main()`` —
тоже ребро). Цикл значит, что два модуля знают друг о друге: общую часть надо вынести в
модуль, который импортируют оба.

Слои пакета — :data:`LAYERS`, а что какому слою импортировать нельзя — :data:`FORBIDDEN`:
движок проверок и GPU-среда не знают ни модулей лабораторных, ни эталонов, ни программы
преподавателя; эталоны и лабораторные не знают программы преподавателя; лабораторные
импортируют эталоны только строкой (в песочнице оценивания папки эталонов нет). Такие
рёбра «по строке» — модуль лабораторной называет эталон (``"flops.COMPUTE_NUM_FLOPS"``), а
:func:`feedback.engine.graded.reference` импортирует его через :mod:`importlib` при
вынесении вердикта — в тексте импортов не видны, поэтому названы в :data:`ANSWER_EDGES`, и
тест разрешает каждое.

Граф, рёбра по строке и нарушения слоёв печатает ``python tests/project/test_import_graph.py
[корень репозитория]``.
"""

from __future__ import annotations

import ast
import importlib
import re
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "feedback"

#: Комнаты программы преподавателя снизу вверх: комната импортирует только комнаты ниже себя.
#: Основа (настройки, рабочая папка, список лабораторных, таблицы) → тетрадки nbgrader вообще →
#: обзор кода → курс (выпуск) → приём работ → единица оценивания → записи семестра →
#: страницы → LMS → сервер курса → запуск оценивания целиком → команды make.
TEACHER_ROOMS: tuple[str, ...] = (
    "core",
    "notebook",
    "review",
    "course",
    "intake",
    "unit",
    "records",
    "pages",
    "lms",
    "hub",
    "grading",
    "commands",
)
#: Слои программы преподавателя: «teacher.комната».
TEACHER_LAYERS = tuple(f"teacher.{room}" for room in TEACHER_ROOMS)
#: Слои пакета: слой → модули и пакеты (с подмодулями). Модуль прямо в feedback/, не
#: названный здесь, — модуль лабораторных (их импортируют тетрадки); новый подпакет
#: нужно вписать в свой слой.
LAYERS: dict[str, tuple[str, ...]] = {
    # Основа: только стандартная библиотека; её импортирует любой слой.
    "base": ("feedback.settings", "feedback.formatting", "feedback.qa_local", "feedback.measured"),
    "engine": ("feedback.engine",),
    "gpu": ("feedback.gpu",),
    "labs": ("feedback", "feedback.generation"),
    "answers": ("feedback.answers",),
    # Рядом с лабораторными: рабочая копия make lab и присмотр за ядром оценивания.
    "tools": ("feedback.workspace", "feedback.kernel_guard", "feedback.kernel_template"),
    # Сам пакет feedback.teacher (только описание) — на верхнем этаже.
    **{
        layer: (f"feedback.{layer}",) + (("feedback.teacher",) if room == TEACHER_ROOMS[-1] else ())
        for room, layer in zip(TEACHER_ROOMS, TEACHER_LAYERS, strict=True)
    },
}
#: Слой → слои, которые ему импортировать нельзя.
FORBIDDEN: dict[str, set[str]] = {
    "base": {"engine", "gpu", "labs", "answers", "tools", *TEACHER_LAYERS},
    "engine": {"labs", "answers", *TEACHER_LAYERS},
    "gpu": {"labs", "answers", *TEACHER_LAYERS},
    # Эталоны — только строкой (ANSWER_EDGES): в песочнице оценивания папки эталонов нет.
    "labs": {"answers", *TEACHER_LAYERS},
    "answers": set(TEACHER_LAYERS),
    # Работают у учащегося и в песочнице, где нет ни эталонов, ни программы преподавателя.
    "tools": {"answers", *TEACHER_LAYERS},
    # Комната — не выше себя: всё, что над ней.
    **{layer: set(TEACHER_LAYERS[i + 1 :]) for i, layer in enumerate(TEACHER_LAYERS)},
}
#: Рёбра по строке: модуль лабораторной → модуль эталонов, который он называет.
ANSWER_EDGES: dict[str, str] = {
    "feedback.accumulation": "feedback.answers.accumulation",
    "feedback.flops": "feedback.answers.flops",
    "feedback.generation.check": "feedback.answers.generation",
    "feedback.memory": "feedback.answers.memory",
    "feedback.precision": "feedback.answers.precision",
    "feedback.wall": "feedback.answers.wall",
}
#: Таблицы обзора кода читаются без анализатора: модуль не импортирует ничего из пакета.
STANDALONE = ("feedback.teacher.review.rules",)

_REFERENCE = re.compile(r"^(?P<module>[a-z_][a-z0-9_]*)\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")


def module_name(path: Path, package: Path = PACKAGE) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
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
            # «from feedback.teacher import grade» — ребро к feedback.teacher.grading.grade.
            targets = [f"{prefix}.{alias.name}" for alias in node.names] + [prefix]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


@cache
def tree_of(path: Path) -> ast.Module:
    """Дерево исходника (одно на запуск: граф строят несколько тестов)."""
    return ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def sources(package: Path = PACKAGE) -> dict[str, Path]:
    return {module_name(path, package): path for path in sorted(package.rglob("*.py"))}


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    names = sources(package)
    known = set(names)
    graph = {}
    for name, path in names.items():
        edges = imported(tree_of(path), name, path.name == "__init__.py", known)
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


def layer_of(name: str) -> str | None:
    """Слой модуля по самому длинному совпавшему префиксу :data:`LAYERS`."""
    best: tuple[str, str] | None = None
    for layer, prefixes in LAYERS.items():
        for prefix in prefixes:
            if (name == prefix or name.startswith(prefix + ".")) and (
                best is None or len(prefix) > len(best[1])
            ):
                best = (layer, prefix)
    if best is None or (best[1] == "feedback" and name.count(".") > 1):
        return None  # подмодуль подпакета, которого нет в LAYERS
    return best[0]


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Рёбра графа, которые идут в запрещённый слой: «модуль (слой) → модуль (слой)»."""
    found = []
    for name in sorted(graph):
        layer = layer_of(name)
        for target in sorted(graph[name]):
            other = layer_of(target)
            if layer and other in FORBIDDEN[layer]:
                found.append(f"{name} ({layer}) → {target} ({other})")
    return found


def _top_level_names(path: Path) -> set[str]:
    names = set()
    for node in tree_of(path).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def named_answers(path: Path, package: Path = PACKAGE) -> dict[str, set[str]]:
    """Эталоны, которые модуль называет строкой: модуль эталонов → имена в нём.

    Строка ``"модуль.ИМЯ"``, где ``ИМЯ`` определено в ``feedback/answers/модуль.py``, — имя
    эталона; f-строка ``f"модуль.{…}"`` — имя, вычисляемое из модуля эталонов (``"*"``).
    Строки того же вида, которых в эталонах нет, — имена проверок и коды ошибок.
    """
    answers = {p.stem: p for p in (package / "answers").glob("*.py") if p.stem != "__init__"}
    defined = {stem: _top_level_names(p) for stem, p in answers.items()}
    found: dict[str, set[str]] = {}
    for node in ast.walk(tree_of(path)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _REFERENCE.match(node.value)
            if match and match["name"] in defined.get(match["module"], ()):
                found.setdefault(f"feedback.answers.{match['module']}", set()).add(match["name"])
        elif isinstance(node, ast.JoinedStr) and node.values:
            head = node.values[0]
            if isinstance(head, ast.Constant) and isinstance(head.value, str):
                module, dot, rest = head.value.partition(".")
                if dot and not rest and module in answers:
                    found.setdefault(f"feedback.answers.{module}", set()).add("*")
    return found


def answer_edges(package: Path = PACKAGE) -> dict[str, set[str]]:
    """Рёбра по строке во всём пакете, кроме самих эталонов: модуль → модули эталонов."""
    edges = {}
    for name, path in sources(package).items():
        if layer_of(name) in ("answers", *TEACHER_LAYERS):
            continue
        found = named_answers(path, package)
        if found:
            edges[name] = set(found)
    return edges


# --------------------------------------------------------------------------- тесты


def test_the_graph_is_read_from_the_source():
    graph = import_graph()
    assert "feedback.teacher.unit.pipeline" in graph["feedback.teacher.grading.grade"]
    assert "feedback.teacher.unit.sandbox" in graph["feedback.teacher.unit.pipeline"] or any(
        "feedback.teacher.unit.sandbox" in graph[name]
        for name in graph["feedback.teacher.unit.pipeline"]
    )


def test_the_package_has_no_import_cycle():
    found = cycles(import_graph())
    assert not found, (
        "Модули пакета feedback импортируют друг друга (цикл): "
        + "; ".join(" ↔ ".join(component) for component in found)
        + ". Вынесите общую часть в модуль, который импортируют оба."
    )


def test_every_module_has_a_layer():
    unplaced = [name for name in import_graph() if layer_of(name) is None]
    assert not unplaced, f"модули без слоя — впишите их в LAYERS: {unplaced}"
    assert layer_of("feedback.flops") == "labs" and layer_of("feedback.gpu.check") == "gpu"
    assert layer_of("feedback.teacher.review.rules") == "teacher.review"
    assert layer_of("feedback.teacher.grading.grade") == "teacher.grading"
    assert set(FORBIDDEN) == set(LAYERS)


def test_layers_import_only_what_they_may():
    found = violations(import_graph())
    assert not found, (
        "Импорты против слоёв (tests/project/test_import_graph.py, LAYERS и FORBIDDEN): "
        + "; ".join(found)
        + ". Общую часть вынесите в слой ниже или передайте значение аргументом."
    )


def test_the_layer_rule_sees_an_upward_import():
    graph = {"feedback.gpu.tiny_gemma": {"feedback.qa_data"}, "feedback.qa_data": set()}
    assert violations(graph) == ["feedback.gpu.tiny_gemma (gpu) → feedback.qa_data (labs)"]


def test_every_answer_named_by_a_string_is_in_the_table():
    found = answer_edges()
    table = {name: {target} for name, target in ANSWER_EDGES.items()}
    assert found == table, (
        "модули называют эталоны строкой не так, как записано в ANSWER_EDGES "
        f"(tests/project/test_import_graph.py): найдено {found}, в таблице {table}"
    )
    assert all(layer_of(name) == "labs" for name in ANSWER_EDGES)
    assert all(layer_of(target) == "answers" for target in ANSWER_EDGES.values())


def check_edges() -> dict[str, set[str]]:
    """Рёбра по строке к модулям лабораторных: :mod:`feedback.checks` → модули с проверками."""
    from feedback.checks import CHECK_MODULES

    return {"feedback.checks": {f"feedback.{module}" for module in CHECK_MODULES}}


def string_imports(path: Path) -> list[str]:
    """Функции модуля, которые вызывают ``importlib.import_module`` (импорт по строке)."""
    found = []
    for function in ast.walk(tree_of(path)):
        if isinstance(function, ast.FunctionDef):
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "import_module"
                ):
                    found.append(function.name)
    return found


def test_lab_modules_are_imported_by_name_only_from_the_checks_table():
    """Движок и GPU-среда не импортируют по строке ничего, кроме эталонов при вердикте."""
    edges = check_edges()
    assert all(layer_of(target) == "labs" for target in edges["feedback.checks"])
    assert not violations({**import_graph(), **edges})
    by_string = {
        name: string_imports(path)
        for name, path in sources().items()
        if layer_of(name) in ("engine", "gpu") and string_imports(path)
    }
    assert by_string == {"feedback.engine.graded": ["reference"]}


def _named_at_runtime(module) -> set[str]:
    """Имена эталонов, которые держат проверки модуля: задания-функции и вердикты по имени."""
    from feedback.engine.comparing import FunctionTask
    from feedback.engine.graded import GradedCheck, Verdict

    names = set()
    for value in vars(module).values():
        spec = getattr(value, "graded", None)
        if isinstance(value, FunctionTask):
            names.add(value.answer)
        elif isinstance(spec, GradedCheck) and isinstance(spec.judge, str | Verdict):
            names.add(spec.judge if isinstance(spec.judge, str) else spec.judge.name)
        elif isinstance(value, GradedCheck) and isinstance(value.judge, str | Verdict):
            names.add(value.judge if isinstance(value.judge, str) else value.judge.name)
    return names


@pytest.mark.parametrize(("name", "target"), sorted(ANSWER_EDGES.items()))
def test_each_answer_edge_resolves(name, target):
    """Каждое имя эталона, которое называет модуль, разрешается в его модуле эталонов."""
    from feedback.answers.mistakes import MISTAKES
    from feedback.engine.graded import find, reference

    module = importlib.import_module(name)
    importlib.import_module(target)
    short = target.removeprefix("feedback.answers.")
    literal = set()
    for node in ast.walk(tree_of(sources()[name])):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = _REFERENCE.match(node.value)
            if match and match["module"] == short:
                literal.add(node.value)
    named = _named_at_runtime(module) | literal
    resolved = set()
    for text in sorted(named):
        if text in MISTAKES:
            continue  # код типичной ошибки, не эталон
        try:
            find(text)
            continue  # имя проверки самого модуля
        except KeyError:
            pass
        assert reference(text) is not None, text
        resolved.add(text)
    assert resolved, f"{name} не называет ни одного эталона из {target}"
    assert all(text.startswith(short + ".") for text in resolved), resolved


def test_review_rules_stand_alone():
    graph = import_graph()
    assert all(graph[name] == set() for name in STANDALONE), {n: graph[n] for n in STANDALONE}


# --------------------------------------------------------------------------- отчёт


def report(root: Path) -> str:
    """Модули, рёбра, рёбра по строке, нарушения слоёв и циклы пакета в ``root``."""
    package = root / "feedback"
    graph = import_graph(package)
    dynamic = answer_edges(package)
    lines = [
        f"модулей: {len(graph)}",
        f"рёбер импорта: {sum(len(targets) for targets in graph.values())}",
        f"рёбер по строке (эталоны): {sum(len(targets) for targets in dynamic.values())}",
    ]
    layers: dict[str, int] = {}
    for name in graph:
        layers[str(layer_of(name))] = layers.get(str(layer_of(name)), 0) + 1
    lines.append("по слоям: " + ", ".join(f"{k} {v}" for k, v in sorted(layers.items())))
    between: dict[tuple[str, str], int] = {}
    for name, targets in graph.items():
        for target in targets:
            pair = (str(layer_of(name)), str(layer_of(target)))
            if pair[0] != pair[1]:
                between[pair] = between.get(pair, 0) + 1
    lines.append(
        "рёбра между слоями: " + ", ".join(f"{a}→{b} {n}" for (a, b), n in sorted(between.items()))
    )
    for name, targets in sorted(dynamic.items()):
        lines.append(f"  по строке: {name} → {', '.join(sorted(targets))}")
    for name, targets in sorted(check_edges().items()):
        lines.append(f"  по строке (проверки): {name} → {', '.join(sorted(targets))}")
    found = violations(graph)
    lines.append(f"нарушений слоёв: {len(found)}")
    lines += [f"  {item}" for item in found]
    bad = [
        f"{n} → {t}"
        for n, targets in sorted(dynamic.items())
        for t in sorted(targets)
        if layer_of(n) != "labs"
    ]
    lines.append(f"рёбер по строке не из лабораторных: {len(bad)}")
    lines += [f"  {item}" for item in bad]
    lines.append(f"циклов: {len(cycles(graph))}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT))

"""Что в коде учащегося стоит посмотреть глазами: обращения к механизму проверки.

Вердикты выносятся вне песочницы, поэтому подменить проверку нельзя: можно только
ответить. Но ответить можно и нечестно — вызвать эталон курса вместо своей
функции, подсмотреть переменные проверки через кадры стека, подменить модуль курса.
Такие места :func:`scan` находит в ячейках учащегося (решениях и добавленных) по
синтаксическому дереву и называет ячейку, строку и причину; преподаватель видит их в
``needs_review.csv`` и в начале проверенной тетрадки.

Помощники курса, которыми решение пользуется по замыслу (например,
``generation.generate`` в лабораторной 7.1), берутся из эталонных решений
(:func:`allowed_helpers`) и поводом для проверки не считаются.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass

#: Модули, импорт которых в решении — уже повод посмотреть.
MODULES = {
    "feedback": "импортирует пакет проверок курса",
    "importlib": "управляет импортом модулей (importlib)",
    "inspect": "заглядывает во внутренности функций и стека (inspect)",
    "gc": "перебирает объекты в памяти (gc)",
    "ctypes": "работает с памятью интерпретатора напрямую (ctypes)",
    "builtins": "меняет встроенные функции Python (builtins)",
    "IPython": "обращается к ядру IPython",
    "signal": "меняет обработку сигналов (это сломало бы лимиты времени проверки)",
    "threading": "запускает фоновые потоки",
    "_thread": "запускает фоновые потоки",
    "sys": None,  # сам по себе безобиден; опасные атрибуты ниже
    "os": None,
}
#: Атрибуты модулей, обращение к которым — повод посмотреть.
MODULE_ATTRIBUTES = {
    ("sys", "modules"): "подменяет или перебирает загруженные модули (sys.modules)",
    ("sys", "_getframe"): "читает кадры стека вызовов (sys._getframe)",
    ("sys", "settrace"): "ставит трассировку выполнения (sys.settrace)",
    ("sys", "setprofile"): "ставит профилировщик (sys.setprofile)",
    ("sys", "addaudithook"): "ставит перехватчик событий (sys.addaudithook)",
    ("sys", "meta_path"): "меняет механизм импорта (sys.meta_path)",
    ("sys", "path_hooks"): "меняет механизм импорта (sys.path_hooks)",
    ("os", "environ"): "меняет переменные окружения (os.environ)",
    ("os", "putenv"): "меняет переменные окружения (os.putenv)",
    ("os", "unsetenv"): "меняет переменные окружения (os.unsetenv)",
    ("os", "_exit"): "завершает процесс ядра (os._exit)",
    ("os", "kill"): "посылает сигналы процессам (os.kill)",
    ("os", "killpg"): "посылает сигналы процессам (os.killpg)",
    ("os", "fork"): "порождает процессы (os.fork)",
}
#: Встроенные имена, вызов или упоминание которых — повод посмотреть.
NAMES = {
    "__builtins__": "меняет встроенные функции Python (__builtins__)",
    "__import__": "импортирует модули в обход обычного import (__import__)",
    "get_ipython": "обращается к ядру IPython (get_ipython)",
    "exec": "выполняет код из строки (exec)",
    "eval": "вычисляет код из строки (eval)",
    "compile": "компилирует код из строки (compile)",
    "globals": "меняет глобальные переменные тетрадки через globals()",
    "setattr": "меняет атрибуты объектов через setattr",
    "delattr": "удаляет атрибуты объектов через delattr",
}
#: Атрибуты, через которые заглядывают в кадры стека и внутренности функций.
ATTRIBUTES = {
    "f_back": "читает кадры стека вызовов",
    "f_locals": "читает переменные чужого кадра стека",
    "f_globals": "читает глобальные переменные чужого кадра стека",
    "tb_frame": "читает кадры стека из трассировки",
    "gi_frame": "читает кадр генератора",
    "cr_frame": "читает кадр сопрограммы",
    "__globals__": "читает глобальные переменные функции",
    "__code__": "меняет код функции",
    "__closure__": "читает замыкание функции",
    "__subclasses__": "перебирает классы интерпретатора",
    "__bases__": "меняет иерархию классов",
    "__mro__": "перебирает иерархию классов",
}


#: Магии IPython (``%env``, ``%load_ext``), которые меняют само ядро; ``%time`` или
#: ``!pip`` сюда не входят.
MAGICS = {
    "env": "меняет переменные окружения (%env)",
    "set_env": "меняет переменные окружения (%set_env)",
    "load_ext": "загружает расширение IPython (%load_ext)",
    "reload_ext": "загружает расширение IPython (%reload_ext)",
    "run": "выполняет сторонний файл (%run)",
    "config": "меняет настройки IPython (%config)",
    "autoreload": "перезагружает модули (%autoreload)",
    "aimport": "перезагружает модули (%aimport)",
}
_MAGIC_METHODS = {"run_line_magic", "run_cell_magic", "system", "getoutput"}


def _magic(node: ast.Call) -> str | None:
    """Имя магии, если это вызов, в который IPython превращает ``%магия`` или ``!команду``."""
    function = node.func
    if not (
        isinstance(function, ast.Attribute)
        and function.attr in _MAGIC_METHODS
        and isinstance(function.value, ast.Call)
        and isinstance(function.value.func, ast.Name)
        and function.value.func.id == "get_ipython"
    ):
        return None
    if function.attr in ("system", "getoutput"):
        return ""
    first = node.args[0] if node.args else None
    return first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else "?"


@dataclass(frozen=True)
class Finding:
    """Место в коде учащегося, которое стоит посмотреть."""

    cell: str
    line: int
    code: str
    reason: str


def course_modules(setup_sources: Iterable[str]) -> set[str]:
    """Имена, под которыми ячейки подготовки импортируют модули курса (``flops``, ``memory``)."""
    names = {"feedback"}
    for source in setup_sources:
        tree = _parse(source)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "feedback":
                names.update(alias.asname or alias.name for alias in node.names)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == "feedback":
                        names.add(alias.asname or alias.name.split(".")[0])
    return names


def allowed_helpers(solution_sources: Iterable[str], modules: set[str]) -> set[str]:
    """``модуль.имя`` помощников курса, которыми пользуются эталонные решения."""
    allowed = set()
    for source in solution_sources:
        tree = _parse(source)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
            ):
                allowed.add(f"{node.value.id}.{node.attr}")
    return allowed


def _parse(source: str) -> ast.Module | None:
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        source = TransformerManager().transform_cell(source)
    except Exception:
        pass
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError):
        return None


class _Scanner(ast.NodeVisitor):
    def __init__(self, modules: set[str], allowed: set[str]) -> None:
        self.modules, self.allowed = modules, allowed
        self.aliases: dict[str, str] = {}  # имя в коде → модуль (import numpy as np → np)
        self.found: list[tuple[int, str]] = []

    def flag(self, node: ast.AST, reason: str) -> None:
        self.found.append((getattr(node, "lineno", 0), reason))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._imported(node, alias.name, alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        for alias in node.names:
            full = f"{module}.{alias.name}"
            self._imported(node, full, alias.asname or alias.name)

    def _imported(self, node: ast.AST, module: str, bound: str) -> None:
        top = module.split(".")[0]
        self.aliases[bound] = module
        reason = MODULES.get(top)
        if reason:
            self.flag(node, reason)
        elif (top, module.split(".")[1] if "." in module else "") in MODULE_ATTRIBUTES:
            self.flag(node, MODULE_ATTRIBUTES[(top, module.split(".")[1])])
        if bound in self.modules and top != "feedback":
            self.flag(node, f"переопределяет имя модуля курса «{bound}»")

    def visit_Call(self, node: ast.Call) -> None:
        magic = _magic(node)
        if magic is None:
            self.generic_visit(node)
            return
        if magic in MAGICS:
            self.flag(node, MAGICS[magic])
        for argument in node.args[1:]:
            self.visit(argument)

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in NAMES:
            self.flag(node, NAMES[node.id])
        if isinstance(node.ctx, ast.Store | ast.Del) and node.id in self.modules:
            self.flag(node, f"переопределяет имя модуля курса «{node.id}»")

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        if node.name in self.modules:
            self.flag(node, f"переопределяет имя модуля курса «{node.name}»")
        self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if node.attr in ATTRIBUTES:
            self.flag(node, ATTRIBUTES[node.attr])
        if isinstance(node.value, ast.Name):
            owner = node.value.id
            module = self.aliases.get(owner, owner).split(".")[0]
            if (module, node.attr) in MODULE_ATTRIBUTES:
                self.flag(node, MODULE_ATTRIBUTES[(module, node.attr)])
            if owner in self.modules:
                if isinstance(node.ctx, ast.Store | ast.Del):
                    self.flag(node, f"меняет модуль курса: {owner}.{node.attr}")
                elif f"{owner}.{node.attr}" not in self.allowed:
                    self.flag(
                        node,
                        f"пользуется {owner}.{node.attr} из пакета проверок — "
                        "решение задания этого не требует",
                    )
        self.generic_visit(node)


def scan(cells: Iterable[tuple[str, str]], modules: set[str], allowed: set[str]) -> list[Finding]:
    """Находки в ячейках учащегося; ``cells`` — пары (подпись ячейки, код)."""
    findings = []
    for label, source in cells:
        tree = _parse(source)
        if tree is None:
            continue
        scanner = _Scanner(modules, allowed)
        scanner.visit(tree)
        lines = source.splitlines()
        seen = set()
        for line, reason in scanner.found:
            if (line, reason) in seen:
                continue
            seen.add((line, reason))
            code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            findings.append(Finding(label, line, code[:200], reason))
    return findings

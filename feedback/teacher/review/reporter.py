"""Второй проход: каждое обращение в ячейке учащегося сверяется с таблицами обзора.

:class:`Reporter` обходит дерево ячейки, для каждого имени, атрибута, вызова и импорта
спрашивает у привязок (:mod:`~feedback.teacher.review.bindings`), что оно значит, и
записывает находку (строка и причина), если путь есть в таблицах
(:mod:`~feedback.teacher.review.rules`) или это модуль курса не так, как им пользуются
эталонные решения. Код внутри магий и строк, которые выполнятся как код, проверяется как
код этой же строки ячейки.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from feedback.teacher.review.bindings import Notebook
from feedback.teacher.review.cells import (
    as_code,
    code_strings,
    embedded,
    literal_text,
    magic_call,
    spelled_root,
    spelling,
)
from feedback.teacher.review.rules import (
    ATTRIBUTES,
    BACKGROUND,
    CODE_FILE,
    COURSE,
    EXTRACTORS,
    GETTERS,
    IMPORTERS,
    INTERNALS,
    LISTERS,
    MAGICS,
    MODULES,
    NAMES,
    OBSERVATION,
    OPENERS,
    PATCHED,
    PATH_WRITERS,
    SCRIPT_MAGICS,
    SHELL_PYTHON,
    SHELL_WRITE,
    SPOOFED,
    VALUE_TYPES,
    WRITERS,
    bare,
)
from feedback.teacher.review.scopes import visit_scope
from feedback.teacher.review.values import (
    UNKNOWN,
    danger,
    is_course,
    is_dotted,
    is_sensitive,
    top_module,
)


class Reporter(ast.NodeVisitor):
    """Второй проход по ячейке учащегося: сверяет каждое обращение с таблицами."""

    def __init__(self, notebook: Notebook, allowed: set[str], named: set[str]) -> None:
        self.nb, self.modules, self.allowed, self.named = notebook, notebook.modules, allowed, named
        self.scope = notebook.module
        self.offset = 0
        self.callees: set[int] = set()
        self.found: list[tuple[int, str]] = []

    def flag(self, node: ast.AST, reason: str) -> None:
        line = getattr(node, "lineno", 0)
        self.found.append((line + self.offset if line else 0, reason))

    def value(self, node: ast.AST) -> frozenset[str]:
        return self.nb.value(node, self.scope)

    def strings(self, node: ast.AST | None) -> list[str]:
        return self.nb.strings(node, self.scope)

    def _inside(self, node: ast.AST) -> None:
        visit_scope(self, node)

    def _check_value(self, node: ast.AST) -> None:
        for value in self.value(node):
            # Результат вызова (``frame = sys._getframe()``) — находка там, где вызов, а
            # не на каждой строке, где им пользуются.
            derived = "()" in value or "[]" in value
            reason = None if derived else danger(value)
            if reason:
                self.flag(node, reason)
            if (
                isinstance(node, ast.Name)
                and id(node) not in self.callees
                and (value in GETTERS or value in LISTERS)
            ):
                name = (GETTERS | LISTERS)[value]
                self.flag(node, f"передаёт {name} как значение — так прячут обращения по имени")

    def _rebinds(self, node: ast.AST, name: str) -> None:
        if name in self.modules:
            self.flag(node, f"переопределяет имя модуля курса «{name}»")

    # ----------------------------------------------------------------- модули курса

    def _course(self, node: ast.AST, owner: str, attr: str, ctx: ast.expr_context) -> None:
        """Обращение ``owner.attr``, где ``owner`` — модуль или объект курса."""
        spelled = spelling(node)
        path = f"{owner}.{attr}"
        root = spelled_root(node)
        if root is not None and root not in self.modules and not spelled.startswith(COURSE):
            spelled = f"{spelled} (это {path})"
        if isinstance(ctx, ast.Store | ast.Del):
            self.flag(node, f"меняет модуль курса: {spelled}")
        elif attr in INTERNALS:
            self.flag(node, f"достаёт внутренности проверки курса (эталон, случаи): {spelled}")
        elif attr == "__dict__":
            self.flag(node, f"перебирает содержимое модуля курса: {spelled}")
        elif path not in self.allowed and path not in self.named:
            local = spelling(node)
            if local not in self.allowed:
                self.flag(
                    node,
                    f"пользуется {spelled} из пакета проверок — решение задания этого не требует",
                )

    # ----------------------------------------------------------------- импорты

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._imported(node, alias.name, alias.asname or alias.name.split(".")[0])

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        if node.level:
            return
        for alias in node.names:
            bound = alias.asname or alias.name
            full = module if alias.name == "*" else f"{module}.{alias.name}"
            self._imported(node, full, bound if alias.name != "*" else "")

    def _imported(self, node: ast.AST, module: str, bound: str) -> None:
        top = module.split(".")[0]
        if top == COURSE:
            self.flag(node, MODULES[COURSE])
        else:
            reason = danger(module)
            if reason:
                self.flag(node, reason)
            if bound:
                self._rebinds(node, bound)

    # ----------------------------------------------------------------- имена

    def visit_Name(self, node: ast.Name) -> None:
        if node.id in NAMES:
            self.flag(node, NAMES[node.id])
        if isinstance(node.ctx, ast.Store | ast.Del):
            self._rebinds(node, node.id)
        else:
            self._check_value(node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self._rebinds(node, node.name)
        self._inside(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._rebinds(node, node.name)
        bases = {v for base in node.bases for v in self.value(base)}
        if bases & VALUE_TYPES:
            methods = {
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            }
            spoofed = sorted(methods & SPOOFED)
            if spoofed:
                self.flag(
                    node,
                    f"подменяет поведение чисел или строк ({node.name}: {', '.join(spoofed)}) — "
                    "так ответ выглядит верным только для проверки",
                )
        self._inside(node)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._inside(node)

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self._rebinds(node, node.name)
        self.generic_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> None:
        if node.name:
            self._rebinds(node, node.name)
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, str) and OBSERVATION in node.value:
            self.flag(node, "подделывает вывод проверки (тип данных наблюдения курса)")

    # ----------------------------------------------------------------- атрибуты

    def visit_Attribute(self, node: ast.Attribute) -> None:
        attr = node.attr
        if attr in ATTRIBUTES:
            self.flag(node, ATTRIBUTES[attr])
        if attr in BACKGROUND:
            self.flag(node, BACKGROUND[attr])
        store = isinstance(node.ctx, ast.Store | ast.Del)
        for owner in self.value(node.value):
            if is_course(owner) and owner.endswith(".__dict__"):
                continue  # vars(flops).items(): находка уже у vars(flops)
            if is_course(owner):
                self._course(node, owner, attr, node.ctx)
            elif owner == "?":
                self.flag(node, f"пользуется модулем, имя которого вычисляется: {spelling(node)}")
            elif not is_dotted(owner):
                continue
            elif attr == "__dict__" and is_sensitive(owner):
                self.flag(node, f"перебирает содержимое модуля {bare(owner)} (__dict__)")
            elif store and top_module(owner) in PATCHED and not owner.endswith(("()", "[]")):
                self.flag(node, f"меняет модуль {top_module(owner)}: {spelling(node)}")
        self._check_value(node)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        keys = self.strings(node.slice) or [UNKNOWN]
        for owner in self.value(node.value):
            if owner == "sys.modules":
                verb = "подменяет" if isinstance(node.ctx, ast.Store | ast.Del) else "берёт"
                for key in keys:
                    if is_course(key):
                        self.flag(node, f"{verb} модуль курса «{key}» в sys.modules")
            elif owner.endswith(".__dict__") and is_course(owner):
                base = owner.removesuffix(".__dict__")
                for key in keys:
                    self._course(node, base, key, node.ctx)
        self._check_value(node)
        self.generic_visit(node)

    # ----------------------------------------------------------------- вызовы

    def visit_Call(self, node: ast.Call) -> None:
        magic = magic_call(node)
        if magic is not None:
            self._ipython(node, *magic)
            for argument in magic[2]:
                self.visit(argument)
            return
        self.callees.add(id(node.func))
        callees = self.value(node.func)
        self._code_in_strings(node, callees)
        for callee in callees:
            if callee in GETTERS:
                if len(node.args) > 1:
                    self._getattr(node, GETTERS[callee], node.args[0], node.args[1])
            elif callee.startswith("getter:"):
                if node.args:
                    self._getattr(node, "operator.attrgetter", node.args[0], None, callee[7:])
            elif callee in LISTERS:
                self._listing(node, LISTERS[callee])
            elif callee in IMPORTERS:
                self._dynamic_import(node, IMPORTERS[callee])
            elif callee in OPENERS:
                self._open(node, callee)
            elif callee in WRITERS or (
                callee.startswith("posix.") and "os" + callee[5:] in WRITERS
            ):
                self._writes(node, callee, [*node.args, *(k.value for k in node.keywords)])
        raw = any(k.arg == "raw" and not _false(k.value) for k in node.keywords)
        for callee in callees:
            if _is_display(callee) and (raw or callee.endswith("publish_display_data")):
                self.flag(node, "выводит сырые данные (raw=True): так подделывают вывод проверки")
        function = node.func
        if isinstance(function, ast.Attribute):
            unbound = any(callee in GETTERS for callee in callees)
            if function.attr in ("__getattribute__", "__getattr__") and node.args and not unbound:
                self._getattr(node, function.attr, function.value, node.args[0])
            self._path_method(node, function)
        self._check_value(node)
        self.generic_visit(node)

    def _getattr(self, node, how, target, name_node, name: str | None = None) -> None:
        owners = self.value(target)
        literal = name is not None or literal_text(name_node) is not None
        names = [name] if name is not None else self.strings(name_node)
        names = [n for n in names if UNKNOWN not in n]
        for owner in owners:
            if is_course(owner):
                self.flag(node, f"обращается к модулю курса через {how}: {spelling(node)}")
                for attr in names:
                    self._course(node, owner, attr, ast.Load())
            if not literal and is_sensitive(owner):
                where = "модуля курса" if is_course(owner) else f"модуля {bare(top_module(owner))}"
                self.flag(node, f"{how} с вычисляемым именем атрибута у {where}")
        for attr in names:
            if attr in ATTRIBUTES:
                self.flag(node, ATTRIBUTES[attr])
            if attr in BACKGROUND:
                self.flag(node, BACKGROUND[attr])

    def _listing(self, node: ast.Call, how: str) -> None:
        if not node.args:
            if how == "vars":
                self.flag(node, "читает глобальные переменные тетрадки через vars()")
            return
        for owner in self.value(node.args[0]):
            if is_course(owner):
                self.flag(node, f"перебирает содержимое модуля курса: {spelling(node)}")
            elif is_sensitive(owner):
                self.flag(node, f"перебирает содержимое модуля {bare(top_module(owner))} ({how})")

    def _dynamic_import(self, node: ast.Call, how: str) -> None:
        if how == "importlib.reload":
            return  # importlib уже находка, а модуль — аргумент
        first = node.args[0] if node.args else None
        names = self.strings(first)
        for name in names:
            if is_course(name.split(":")[0]):
                self.flag(node, f"импортирует модуль курса «{name}» в обход import ({how})")
        if literal_text(first) is None:
            self.flag(node, f"импортирует модуль по вычисляемому имени ({how})")

    def _open(self, node: ast.Call, callee: str) -> None:
        args = list(node.args)
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        target = args[0] if args else keywords.get("file")
        mode = args[1] if len(args) > 1 else keywords.get("mode")
        if mode is None:
            return  # по умолчанию — на чтение
        modes = self.strings(mode)
        if modes and all(UNKNOWN not in m and not set(m) & set("wax+") for m in modes):
            return
        self._writes(node, callee, [target] if target is not None else [])

    def _path_method(self, node: ast.Call, function: ast.Attribute) -> None:
        name = function.attr
        if name not in PATH_WRITERS and name not in EXTRACTORS and name != "open":
            return
        targets: list[str] = []
        for owner in self.value(function.value):
            if owner.startswith("%") and (name in PATH_WRITERS or name == "open"):
                if name == "open":
                    mode = node.args[0] if node.args else None
                    for keyword in node.keywords:
                        if keyword.arg == "mode":
                            mode = keyword.value
                    modes = self.strings(mode) if mode is not None else ["r"]
                    if modes and all(UNKNOWN not in m and not set(m) & set("wax+") for m in modes):
                        continue
                targets.append(owner[1:])
        if name in ("rename", "replace", "symlink_to", "hardlink_to") and targets:
            targets += self.strings(node.args[0]) if node.args else []
        if name in EXTRACTORS:
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                targets += self.strings(argument)
        self._report_paths(node, targets)

    def _writes(self, node: ast.Call, callee: str, arguments: list[ast.expr]) -> None:
        targets = [s for argument in arguments for s in self.strings(argument)]
        self._report_paths(node, targets)

    def _report_paths(self, node: ast.AST, targets: list[str]) -> None:
        for target in targets:
            if CODE_FILE.search(target):
                shown = target if len(target) <= 80 else target[:77] + "…"
                self.flag(
                    node,
                    f"пишет файл «{shown}»: файлы .py и папка feedback рядом с тетрадкой "
                    "подменяют модули курса",
                )

    def _code_in_strings(self, node: ast.Call, callees: Iterable[str]) -> None:
        """Строки, которые вызов выполнит как код, разбираются как код этой же строки ячейки."""
        for argument in code_strings(node, callees):
            texts = (
                [argument.value]
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str)
                else self.strings(argument)
            )
            for text in texts:
                tree = as_code(text)
                if tree is None:
                    continue
                outer = self.offset
                self.offset = self.offset + node.lineno - 1
                try:
                    self.visit(tree)
                finally:
                    self.offset = outer

    def _ipython(self, node: ast.Call, kind: str, name: str, args: list[ast.expr]) -> None:
        if kind == "shell" or name in ("sx", "system"):
            command = literal_text(args[0]) if args else None
            if command is None:
                return
            if COURSE in command.lower() or (".py" in command and SHELL_WRITE.search(command)):
                self.flag(node, f"команда оболочки трогает пакет курса или файлы .py: {command}")
            elif SHELL_PYTHON.search(command):
                self.flag(node, f"выполняет код Python в отдельном процессе: {command}")
            return
        if name in MAGICS:
            self.flag(node, MAGICS[name])
        elif name == "?":
            self.flag(node, "вызывает магию IPython по вычисляемому имени")
        elif name in ("writefile", "file") and args:
            line = (literal_text(args[0]) or "").split()
            self._report_paths(node, [word for word in line if not word.startswith("-")] or [""])
        elif kind == "run_cell_magic" and name in SCRIPT_MAGICS:
            self.flag(node, f"выполняет код вне ядра (%%{name})")
        for tree, offset in embedded(node):
            outer = self.offset
            self.offset = offset
            try:
                self.visit(tree)
            finally:
                self.offset = outer


def _false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and not node.value


def _is_display(callee: str) -> bool:
    """Функции вывода IPython: ``display`` и ``publish_display_data`` откуда угодно."""
    name = callee.rsplit(".", 1)[-1]
    return callee.startswith(("IPython.", "ipykernel.")) and name in (
        "display",
        "publish_display_data",
    )

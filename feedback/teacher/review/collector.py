"""Первый проход сканера: привязки имён, области видимости, вызовы и возвраты.

:class:`Collector` обходит ячейки подготовки и учащегося и записывает в
:class:`~feedback.teacher.review.bindings.Notebook`, что где связывается: импорты (их
значение известно сразу), присваивания и распаковку, циклы и включения, ``with … as``,
умолчания параметров, ``self`` методов, вызовы и возвращаемые значения своих функций.
Вычислять значения он не пытается: присваивание ``f = flops`` в одной ячейке может
зависеть от импорта в следующей, поэтому значения считает потом
:meth:`Notebook.solve <feedback.teacher.review.bindings.Notebook.solve>` по всем
собранным привязкам сразу. Код из строк и магий (``exec("import feedback as f")``)
обходится как код той же ячейки: привязки внутри него — тоже привязки.
"""

from __future__ import annotations

import ast

from feedback.teacher.review.bindings import Notebook
from feedback.teacher.review.cells import as_code, code_strings, embedded, spelled_callees
from feedback.teacher.review.scopes import visit_scope


class Collector(ast.NodeVisitor):
    """Первый проход: привязки имён, области видимости, вызовы и возвраты."""

    def __init__(self, notebook: Notebook) -> None:
        self.nb = notebook
        self.scope = notebook.module

    def _inside(self, node: ast.AST) -> None:
        visit_scope(self, node)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        self.nb.bind_name(self.scope, node.name, {f"def:{id(node)}"})
        inner = self.nb.scope_for(node, self.scope)
        arguments = node.args
        positional = (*arguments.posonlyargs, *arguments.args)
        if isinstance(self.scope.function, ast.ClassDef) and positional:
            # self в методе — экземпляр класса: его атрибуты — атрибуты класса
            self.nb.bind_name(inner, positional[0].arg, {f"class:{self.scope.key}"})
        for argument, default in zip(positional[::-1], arguments.defaults[::-1], strict=False):
            self.nb.assigns.append((inner, ast.Name(argument.arg, ast.Store()), default, False))
        for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
            if default is not None:
                self.nb.assigns.append((inner, ast.Name(argument.arg, ast.Store()), default, False))
        self._inside(node)

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self._inside(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self.nb.bind_name(self.scope, node.name, {f"class:{id(node)}"})
        self._inside(node)

    def visit_Return(self, node: ast.Return) -> None:
        scope = self.scope
        if node.value is not None and scope.function is not None:
            self.nb.returns.setdefault(scope.key, []).append((scope, node.value))
        self.generic_visit(node)

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.nb.assigns.append((self.scope, target, node.value, False))
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.nb.assigns.append((self.scope, node.target, node.value, False))
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        if isinstance(node.target, ast.Name):
            combined = ast.BinOp(ast.Name(node.target.id, ast.Load()), node.op, node.value)
            self.nb.assigns.append((self.scope, node.target, combined, False))
        self.generic_visit(node)

    def visit_NamedExpr(self, node: ast.NamedExpr) -> None:
        self.nb.assigns.append((self.scope, node.target, node.value, False))
        self.generic_visit(node)

    def visit_For(self, node: ast.For | ast.AsyncFor) -> None:
        self.nb.assigns.append((self.scope, node.target, node.iter, True))
        self.generic_visit(node)

    visit_AsyncFor = visit_For  # type: ignore[assignment]

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.nb.assigns.append((self.scope, node.target, node.iter, True))
        self.generic_visit(node)

    def visit_withitem(self, node: ast.withitem) -> None:
        if node.optional_vars is not None:
            self.nb.assigns.append((self.scope, node.optional_vars, node.context_expr, False))
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.asname:
                self.nb.bind_name(self.scope, alias.asname, {alias.name})
            else:
                top = alias.name.split(".")[0]
                self.nb.bind_name(self.scope, top, {top})

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level or not node.module:
            return
        for alias in node.names:
            if alias.name != "*":
                bound = alias.asname or alias.name
                self.nb.bind_name(self.scope, bound, {f"{node.module}.{alias.name}"})

    def visit_Call(self, node: ast.Call) -> None:
        self.nb.calls.append((self.scope, node))
        for tree, _ in embedded(node):
            self.visit(tree)
        # Привязки внутри кода из строки (``exec("import feedback as f")``) — тоже привязки.
        for argument in code_strings(node, spelled_callees(node)):
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                tree = as_code(argument.value)
                if tree is not None:
                    self.visit(tree)
        self.generic_visit(node)

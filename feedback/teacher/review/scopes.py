"""Области видимости тетрадки: где функция связывает свои имена и где лежит её тело.

Модель та же, что у Python: модуль (все ячейки тетрадки), функция, lambda и класс;
``global`` и ``nonlocal`` отсылают имя наружу, методы не видят имён тела класса.
:func:`visit_scope` обходит определение так, как его выполняет Python: декораторы,
умолчания и аннотации — в охватывающей области, тело — в своей. Этим обходом пользуются
оба прохода сканера — сбор привязок (:mod:`~feedback.teacher.review.bindings`) и отчёт
(:mod:`~feedback.teacher.review.reporter`), — поэтому он здесь, а не в одном из них.
"""

from __future__ import annotations

import ast
from typing import Any


class Scope:
    """Область видимости: модуль (все ячейки тетрадки), функция, lambda или класс."""

    __slots__ = ("declared_global", "declared_nonlocal", "function", "key", "names", "parent")

    def __init__(self, key: int, parent: Scope | None, function: ast.AST | None = None):
        self.key, self.parent, self.function = key, parent, function
        self.names: set[str] = set()
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()


def bound_names(function: ast.AST) -> tuple[set[str], set[str], set[str]]:
    """Имена, которые функция (lambda, класс) связывает у себя; объявленные global и nonlocal."""
    names: set[str] = set()
    declared_global: set[str] = set()
    declared_nonlocal: set[str] = set()
    if isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
        arguments = function.args
        for argument in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            names.add(argument.arg)
        for argument in (arguments.vararg, arguments.kwarg):
            if argument is not None:
                names.add(argument.arg)
    body = [function.body] if isinstance(function, ast.Lambda) else list(function.body)
    stack: list[ast.AST] = body
    while stack:
        node = stack.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
            stack.extend(node.decorator_list)
            continue
        if isinstance(node, ast.Lambda):
            continue
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.Global):
            declared_global.update(node.names)
        elif isinstance(node, ast.Nonlocal):
            declared_nonlocal.update(node.names)
        stack.extend(ast.iter_child_nodes(node))
    return names - declared_global - declared_nonlocal, declared_global, declared_nonlocal


def visit_scope(visitor: Any, node: ast.AST) -> None:
    """Обходит определение: снаружи — декораторы и умолчания, в своей области — тело."""
    if isinstance(node, ast.ClassDef):
        outside = [*node.decorator_list, *node.bases, *node.keywords]
        body: list[ast.AST] = list(node.body)
    else:
        arguments = node.args  # type: ignore[attr-defined]
        outside = [*arguments.defaults, *(d for d in arguments.kw_defaults if d is not None)]
        if isinstance(node, ast.Lambda):
            body = [node.body]
        else:
            every = (
                *arguments.posonlyargs,
                *arguments.args,
                *arguments.kwonlyargs,
                arguments.vararg,
                arguments.kwarg,
            )
            outside += node.decorator_list  # type: ignore[attr-defined]
            outside += [a.annotation for a in every if a is not None and a.annotation]
            if node.returns is not None:  # type: ignore[attr-defined]
                outside.append(node.returns)  # type: ignore[attr-defined]
            body = list(node.body)  # type: ignore[attr-defined]
    for part in outside:
        visitor.visit(part)
    outer = visitor.scope
    visitor.scope = visitor.nb.scope_for(node, outer)
    try:
        for part in body:
            visitor.visit(part)
    finally:
        visitor.scope = outer

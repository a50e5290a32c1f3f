"""Привязки имён всей тетрадки: что может значить каждое имя и выражение.

Первый проход (:class:`Collector`) собирает по ячейкам подготовки и учащегося импорты,
присваивания (и распаковку), циклы, ``with … as``, параметры своих функций по их вызовам,
возвращаемые значения, простые контейнеры и строки, сложенные из констант.
:meth:`Notebook.solve` проходит по ним, пока значения имён не перестанут расти, а
:meth:`Notebook.value` говорит, что может значить выражение: модуль или атрибут по полному
пути (``sys._getframe``), строка, путь к файлу, своя функция или класс. Сверяет значения с
таблицами уже отчёт (:mod:`feedback.teacher.review.reporter`).

Пределы анализа ниже — внутренняя защита сканера (не настройка): запутанный код не должен
стоить больше секунды, а исчерпанный бюджет — сам находка.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from feedback.teacher.review.cells import as_code, code_strings, embedded, spelled_callees
from feedback.teacher.review.rules import (
    CODE_FILE,
    COURSE,
    GETTERS,
    IMPORTERS,
    PATH_TYPES,
    PRELOADED,
    REEXPORTED,
    SENSITIVE,
    reason,
)

_BUILTINS = frozenset(dir(builtins))
_MAX_VALUES = 48  # столько значений имени помним, не больше (важные — в первую очередь)
_MAX_DEPTH = 60  # глубже в выражение не заглядываем
_ROUNDS = 8  # проходов по привязкам до неподвижной точки
_BUDGET = 50_000  # привязок и вычислений на тетрадку: обычной хватает нескольких сотен
UNKNOWN = "*"  # неизвестная часть строки
_EMPTY: frozenset[str] = frozenset()
_MARKS = ("def:", "getter:", "class:")


# --------------------------------------------------------------------------- значения
#
# Значение выражения — множество строк:
#   "sys._getframe", "feedback.flops"  — модуль или атрибут по полному пути
#                                       ("()" в конце части — результат вызова);
#   "?"                                — модуль, имя которого неизвестно;
#   "'текст"                           — строка (неизвестные части — "*");
#   "%папка/файл"                      — путь pathlib;
#   "[]…"                              — контейнер с таким элементом;
#   "def:N"                            — своя функция учащегося;
#   "class:N"                          — свой класс учащегося или его экземпляр;
#   "getter:имя"                       — operator.attrgetter("имя").


def is_dotted(value: str) -> bool:
    return bool(value) and value[0] not in "'%[?*" and not value.startswith(_MARKS)


def is_course(value: str) -> bool:
    return value == COURSE or value.startswith(COURSE + ".")


def top_module(value: str) -> str:
    return value.split(".", 1)[0]


@lru_cache(maxsize=4096)
def danger(value: str) -> str | None:
    """Причина, по которой обращение к этому значению — находка (:func:`rules.reason`)."""
    return reason(value) if is_dotted(value) else None


def is_sensitive(value: str) -> bool:
    return value == "?" or (is_dotted(value) and top_module(value) in SENSITIVE)


def _join(*choices: Iterable[str], sep: str = "") -> set[str]:
    """Все сочетания частей (не больше нескольких десятков)."""
    result = {""}
    for choice in choices:
        parts = list(choice) or [UNKNOWN]
        result = {(a + sep + b if a else b)[:300] for a in result for b in parts[:6]}
        if len(result) > _MAX_VALUES:
            result = set(sorted(result)[:_MAX_VALUES])
    return result


def _strings(values: Iterable[str]) -> list[str]:
    """Строки и пути среди значений (без пометки вида)."""
    return [value[1:] for value in values if value[:1] in ("'", "%")]


def _element(values: Iterable[str]) -> set[str]:
    """Что даёт перебор значения."""
    result = set()
    for value in values:
        if value.startswith("[]"):
            result.add(value[2:])
        elif value == "sys.modules" or value[:1] == "'":
            result.add("'" + UNKNOWN)
        elif is_dotted(value) and not is_course(value) and danger(value):
            result.add(value + "[]")
    return result


def _unpack(values: Iterable[str]) -> set[str]:
    """Что получает каждое имя при распаковке ``a, b = значение``."""
    return {value[2:] if value.startswith("[]") else value for value in values}


@lru_cache(maxsize=8192)
def _rank(value: str) -> int:
    """Что важнее помнить, если значений слишком много: модули курса и опасные пути — всегда.

    Иначе имя можно было бы «забить» десятками безобидных строк, чтобы ``flops`` в нём
    потерялся.
    """
    core = value
    while core.startswith("[]"):
        core = core[2:]
    if core[:1] in ("'", "%"):
        return 0 if CODE_FILE.search(core[1:]) else 2
    if is_course(core) or core == "?" or danger(core):
        return 0
    return 1


def _pack(values: Iterable[str]) -> set[str]:
    """Контейнер с такими элементами (вложенность — не глубже трёх уровней)."""
    return {"[]" + v for v in values if not v.startswith("[][][]")}


def _limit(values: set[str]) -> frozenset[str]:
    if len(values) > _MAX_VALUES:
        important = sorted(v for v in values if not _rank(v))[: 2 * _MAX_VALUES]
        rest = sorted(v for v in values if _rank(v))[: max(0, _MAX_VALUES - len(important))]
        values = set(important + rest)
    return frozenset(values)


class _Scope:
    """Область видимости: модуль (все ячейки тетрадки), функция, lambda или класс."""

    __slots__ = ("declared_global", "declared_nonlocal", "function", "key", "names", "parent")

    def __init__(self, key: int, parent: _Scope | None, function: ast.AST | None = None):
        self.key, self.parent, self.function = key, parent, function
        self.names: set[str] = set()
        self.declared_global: set[str] = set()
        self.declared_nonlocal: set[str] = set()


def _bound_names(function: ast.AST) -> tuple[set[str], set[str], set[str]]:
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


class Notebook:
    """Привязки имён всей тетрадки и вычисление значений выражений по ним."""

    def __init__(self, modules: set[str]) -> None:
        self.modules = modules
        self.module = _Scope(0, None)
        self.scopes: dict[int, _Scope] = {}
        self.env: dict[tuple[int, str], set[str]] = {}
        self.assigns: list[tuple[_Scope, ast.expr, ast.expr, bool]] = []  # …, перебор?
        self.calls: list[tuple[_Scope, ast.Call]] = []
        self.returns: dict[int, list[tuple[_Scope, ast.expr]]] = {}
        self.functions: dict[int, ast.AST] = {}
        self.memo: dict[tuple[int, int], frozenset[str]] = {}
        self.active: set[int] = set()
        self.spent = 0  # сколько привязок и вычислений уже сделано
        self.exhausted = False

    # ----------------------------------------------------------------- сбор привязок

    def scope_for(self, node: ast.AST, parent: _Scope) -> _Scope:
        scope = self.scopes.get(id(node))
        if scope is None:
            while isinstance(parent.function, ast.ClassDef):
                parent = parent.parent or self.module  # методы не видят имён тела класса
            scope = _Scope(id(node), parent, node)
            scope.names, scope.declared_global, scope.declared_nonlocal = _bound_names(node)
            self.scopes[id(node)] = scope
            if not isinstance(node, ast.ClassDef):
                self.functions[id(node)] = node
                self.returns.setdefault(id(node), [])
                if isinstance(node, ast.Lambda):
                    self.returns[id(node)].append((scope, node.body))
        return scope

    def add(self, tree: ast.Module) -> None:
        Collector(self).visit(tree)

    def target_scope(self, scope: _Scope, name: str) -> _Scope:
        if scope.function is None or name in scope.declared_global:
            return self.module
        if name in scope.declared_nonlocal:
            outer = scope.parent
            while outer is not None and outer.function is not None:
                if name in outer.names:
                    return outer
                outer = outer.parent
            return self.module
        return scope

    def bind_name(self, scope: _Scope, name: str, values: Iterable[str]) -> bool:
        self.spent += 1
        key = (self.target_scope(scope, name).key, name)
        known = self.env.setdefault(key, set())
        changed = False
        for value in [v for v in values if v not in known]:
            # Важным значениям (модули курса, опасные пути) место есть всегда: «забить»
            # имя безобидными строками, чтобы flops в нём потерялся, не выйдет.
            if len(known) < _MAX_VALUES or (len(known) < 2 * _MAX_VALUES and not _rank(value)):
                known.add(value)
                changed = True
        return changed

    def bind(self, scope: _Scope, target: ast.expr, values: Iterable[str], source=None) -> bool:
        if isinstance(target, ast.Name):
            return self.bind_name(scope, target.id, values)
        if isinstance(target, ast.Starred):
            return self.bind(scope, target.value, _pack(_unpack(values)))
        if isinstance(target, ast.Tuple | ast.List):
            pairwise = (
                isinstance(source, ast.Tuple | ast.List)
                and len(source.elts) == len(target.elts)
                and not any(isinstance(e, ast.Starred) for e in (*source.elts, *target.elts))
            )
            changed = False
            values = set(values)
            for index, element in enumerate(target.elts):
                if pairwise:
                    part = source.elts[index]
                    changed |= self.bind(scope, element, self.value(part, scope), part)
                else:
                    changed |= self.bind(scope, element, _unpack(values))
            return changed
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            return self.bind_name(scope, target.value.id, _pack(values))
        if isinstance(target, ast.Attribute):
            changed = False
            for owner in self.value(target.value, scope):
                inner = self.scopes.get(int(owner[6:])) if owner.startswith("class:") else None
                if inner is not None:
                    changed |= self.bind_name(inner, target.attr, values)
            return changed
        return False

    def solve(self) -> None:
        """Проходит по привязкам, пока значения имён не перестанут расти (или не кончится
        бюджет: тогда :attr:`exhausted`, и привязки могут быть неполными)."""
        for _ in range(_ROUNDS):
            self.memo.clear()
            changed = False
            for scope, target, expr, loop in self.assigns:
                values = self.value(expr, scope)
                if loop:
                    changed |= self.bind(scope, target, _element(values))
                else:
                    changed |= self.bind(scope, target, values, expr)
                if self.spent > _BUDGET:
                    break
            for scope, call in self.calls:
                if self.spent > _BUDGET:
                    break
                changed |= self.bind_call(scope, call)
            if self.spent > _BUDGET:
                self.exhausted = True
                break
            if not changed:
                break
        self.memo.clear()

    def bind_call(self, scope: _Scope, call: ast.Call) -> bool:
        """Параметры своих функций по их вызовам; ``список.append(x)`` — в элементы списка."""
        changed = False
        function = call.func
        if (
            isinstance(function, ast.Attribute)
            and isinstance(function.value, ast.Name)
            and function.attr in ("append", "add", "insert", "appendleft", "setdefault")
            and call.args
        ):
            values = _pack(self.value(call.args[-1], scope))
            changed |= self.bind_name(scope, function.value.id, values)
        if isinstance(function, ast.Attribute) and function.attr in ("extend", "update"):
            if isinstance(function.value, ast.Name) and call.args:
                values = self.value(call.args[0], scope)
                changed |= self.bind_name(scope, function.value.id, values)
        for value in self.value(function, scope):
            if not value.startswith("def:"):
                continue
            node = self.functions.get(int(value[4:]))
            if node is None or isinstance(node, ast.ClassDef):
                continue
            inner = self.scopes[id(node)]
            arguments = node.args  # type: ignore[attr-defined]
            positional = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
            every = positional + [a.arg for a in arguments.kwonlyargs]
            for index, argument in enumerate(call.args):
                if isinstance(argument, ast.Starred):
                    values = _element(self.value(argument.value, scope))
                    for name in every:
                        changed |= self.bind_name(inner, name, values)
                elif index < len(positional):
                    values = self.value(argument, scope)
                    changed |= self.bind_name(inner, positional[index], values)
                elif arguments.vararg is not None:
                    values = _pack(self.value(argument, scope))
                    changed |= self.bind_name(inner, arguments.vararg.arg, values)
            for keyword in call.keywords:
                values = self.value(keyword.value, scope)
                if keyword.arg is None:
                    for name in every:
                        changed |= self.bind_name(inner, name, _element(values))
                elif keyword.arg in every:
                    changed |= self.bind_name(inner, keyword.arg, values)
                elif arguments.kwarg is not None:
                    changed |= self.bind_name(inner, arguments.kwarg.arg, _pack(values))
        return changed

    # ----------------------------------------------------------------- значения

    def lookup(self, scope: _Scope, name: str) -> set[str]:
        current: _Scope | None = scope
        while current is not None and current.function is not None:
            if name in current.declared_global:
                break
            if name in current.names:
                return self.env.get((current.key, name), set())
            current = current.parent
        values = set(self.env.get((0, name), ()))
        if name in self.modules and not any(is_course(v) for v in values):
            values.add(COURSE if name == COURSE else f"{COURSE}.{name}")
        if not values:
            if name == "__builtins__":
                values.add("builtins")
            elif name in PRELOADED:
                values.add(name)
            elif name == "display":  # IPython кладёт display во встроенные имена ядра
                values.add("IPython.display.display")
            elif name in _BUILTINS:
                values.add(f"builtins.{name}")
        return values

    def value(self, node: ast.AST, scope: _Scope, depth: int = 0) -> frozenset[str]:
        key = (id(node), scope.key)
        known = self.memo.get(key)
        if known is not None:
            return known
        if depth > _MAX_DEPTH:
            return _EMPTY
        self.memo[key] = _EMPTY  # на случай зацикливания
        self.spent += 1
        result = _limit(self._value(node, scope, depth + 1))
        self.memo[key] = result
        return result

    def strings(self, node: ast.AST | None, scope: _Scope, depth: int = 0) -> list[str]:
        return _strings(self.value(node, scope, depth)) if node is not None else []

    def _value(self, node: ast.AST, scope: _Scope, depth: int) -> set[str]:
        value = self.value
        if isinstance(node, ast.Name):
            return self.lookup(scope, node.id)
        if isinstance(node, ast.Constant):
            return {"'" + node.value[:300]} if isinstance(node.value, str) else set()
        if isinstance(node, ast.Attribute):
            return self._attribute(value(node.value, scope, depth), node.attr)
        if isinstance(node, ast.Subscript):
            return self._subscript(node, scope, depth)
        if isinstance(node, ast.Call):
            return self._call(node, scope, depth)
        if isinstance(node, ast.JoinedStr):
            parts = []
            for part in node.values:
                if isinstance(part, ast.Constant):
                    parts.append([str(part.value)])
                else:
                    inner = part.value if isinstance(part, ast.FormattedValue) else part
                    parts.append(self.strings(inner, scope, depth) or [UNKNOWN])
            return {"'" + s for s in _join(*parts)}
        if isinstance(node, ast.BinOp):
            return self._binop(node, scope, depth)
        if isinstance(node, ast.Lambda):
            self.scope_for(node, scope)
            return {f"def:{id(node)}"}
        if isinstance(node, ast.IfExp):
            return set(value(node.body, scope, depth)) | value(node.orelse, scope, depth)
        if isinstance(node, ast.BoolOp):
            return set().union(*(value(v, scope, depth) for v in node.values))
        if isinstance(node, ast.NamedExpr | ast.Await | ast.Starred):
            return set(value(node.value, scope, depth))
        if isinstance(node, ast.List | ast.Tuple | ast.Set):
            result = set()
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    result |= value(element.value, scope, depth)
                else:
                    result |= _pack(value(element, scope, depth))
            return result
        if isinstance(node, ast.Dict):
            return _pack(v for item in node.values for v in value(item, scope, depth))
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return _pack(value(node.elt, scope, depth))
        if isinstance(node, ast.DictComp):
            return _pack(value(node.value, scope, depth))
        return set()

    def _attribute(self, owners: Iterable[str], attr: str) -> set[str]:
        result = {attr} if attr in REEXPORTED else set()
        for owner in owners:
            if owner.startswith("class:"):
                result |= self.env.get((int(owner[6:]), attr), set())
            elif owner.startswith("%"):
                if attr == "parent":
                    result.add("%" + (owner[1:].rsplit("/", 1)[0] if "/" in owner else "."))
            elif is_dotted(owner) or owner == "?":
                if attr == "__self__" and owner.startswith("builtins."):
                    result.add("builtins")  # print.__self__ — это сам модуль builtins
                elif attr == "__builtins__":
                    result.add("builtins")
                else:
                    result.add(f"{owner}.{attr}")
        return result

    def _subscript(self, node: ast.Subscript, scope: _Scope, depth: int) -> set[str]:
        keys = self.strings(node.slice, scope, depth) or [UNKNOWN]
        result = set()
        for owner in self.value(node.value, scope, depth):
            if owner.startswith("[]"):
                result.add(owner[2:])
            elif owner == "sys.modules":
                result.update("?" if UNKNOWN in key else key for key in keys)
            elif owner == "builtins" or owner.endswith(".__dict__"):
                base = owner.removesuffix(".__dict__")
                result.update(f"{base}.{key}" for key in keys)
            elif owner in ("builtins.globals()", "builtins.vars()", "builtins.locals()"):
                for key in keys:
                    result |= self.lookup(self.module, key) if UNKNOWN not in key else set()
            elif is_dotted(owner) and not is_course(owner) and danger(owner):
                result.add(owner + "[]")
        return result

    def _binop(self, node: ast.BinOp, scope: _Scope, depth: int) -> set[str]:
        left, right = self.value(node.left, scope, depth), self.value(node.right, scope, depth)
        result: set[str] = set()
        if isinstance(node.op, ast.Add):
            texts = [v[1:] for v in left if v[:1] == "'"], [v[1:] for v in right if v[:1] == "'"]
            if texts[0] or texts[1]:
                result |= {"'" + s for s in _join(*texts)}
            result |= {v for v in left | right if v.startswith("[]")}
        elif isinstance(node.op, ast.Div):
            paths = [v[1:] for v in left if v[:1] == "%"]
            if paths:
                result |= {"%" + s for s in _join(paths, _strings(right), sep="/")}
        elif isinstance(node.op, ast.Mod):
            result |= {re.sub(r"%[-+ #0-9.]*[a-zA-Z]", UNKNOWN, v) for v in left if v[:1] == "'"}
        return result

    def _call(self, node: ast.Call, scope: _Scope, depth: int) -> set[str]:
        args = node.args
        first = args[0] if args else None
        result: set[str] = set()
        function = node.func
        if isinstance(function, ast.Attribute):
            result |= self._method(node, function, scope, depth)
        for callee in self.value(function, scope, depth):
            if callee.startswith("def:"):
                result |= self._returns(int(callee[4:]), depth)
            elif callee.startswith("class:"):
                result.add(callee)
            elif callee.startswith("getter:"):
                if first is not None:
                    result |= self._attribute(self.value(first, scope, depth), callee[7:])
            elif callee in GETTERS and len(args) > 1:
                if GETTERS[callee] == "hasattr":
                    continue
                names = self.strings(args[1], scope, depth) or [UNKNOWN]
                owners = self.value(first, scope, depth)
                for name in names:
                    result |= self._attribute(owners, name)
            elif callee == "builtins.vars":
                if first is None:
                    result.add("builtins.vars()")
                else:
                    owners = self.value(first, scope, depth)
                    result |= {f"{o}.__dict__" for o in owners if is_dotted(o) or o == "?"}
            elif callee == "builtins.dir":
                result.add("[]'" + UNKNOWN)
            elif callee in ("builtins.globals", "builtins.locals"):
                result.add(callee + "()")
            elif callee in IMPORTERS:
                result |= self._imported(callee, node, scope, depth)
            elif callee in ("operator.attrgetter", "operator.methodcaller"):
                result |= {"getter:" + s for s in self.strings(first, scope, depth)}
            elif callee in PATH_TYPES:
                parts = [self.strings(a, scope, depth) or [UNKNOWN] for a in args] or [["."]]
                result |= {"%" + s for s in _join(*parts, sep="/")}
            elif callee in ("pathlib.Path.cwd", "os.getcwd"):
                result.add("%." if callee.startswith("pathlib") else "'.")
            elif callee == "os.path.join":
                parts = [self.strings(a, scope, depth) or [UNKNOWN] for a in args]
                result |= {"'" + s for s in _join(*parts, sep="/")}
            elif callee in ("builtins.str", "os.fspath", "os.fsdecode") or (
                callee.startswith("os.path.") and callee[8:] in ("abspath", "realpath", "normpath")
            ):
                result |= {"'" + s for s in self.strings(first, scope, depth)}
            elif callee in ("builtins.list", "builtins.tuple", "builtins.set", "builtins.sorted"):
                result |= self.value(first, scope, depth) if first is not None else set()
            elif callee in ("builtins.next", "builtins.iter", "builtins.reversed"):
                values = self.value(first, scope, depth) if first is not None else _EMPTY
                result |= _element(values) if callee == "builtins.next" else set(values)
            elif callee in ("sys.modules.get", "sys.modules.pop", "sys.modules.setdefault"):
                keys = self.strings(first, scope, depth) or [UNKNOWN]
                result.update("?" if UNKNOWN in key else key for key in keys)
            elif callee in ("sys.modules.values", "sys.modules.items"):
                result.add("[]?")
            elif is_dotted(callee) and not is_course(callee) and danger(callee):
                result.add(callee + "()")  # asyncio.get_event_loop() — тоже asyncio
        return result

    def _method(self, node: ast.Call, function: ast.Attribute, scope, depth) -> set[str]:
        """Методы строк, путей и контейнеров (у модулей методы — это атрибуты)."""
        name, args = function.attr, node.args
        owners = self.value(function.value, scope, depth)
        result = set()
        for owner in owners:
            kind, text = owner[:1], owner[1:]
            if kind == "'":
                if name == "format":
                    result.add("'" + re.sub(r"\{[^{}]*\}", UNKNOWN, text))
                elif name == "join" and args and isinstance(args[0], ast.List | ast.Tuple):
                    parts = [self.strings(e, scope, depth) or [UNKNOWN] for e in args[0].elts]
                    result |= {"'" + s for s in _join(*parts, sep=text)}
                elif name in ("lower", "upper", "strip", "lstrip", "rstrip", "casefold"):
                    result.add("'" + getattr(text, name)())
                elif name in ("replace", "removeprefix", "removesuffix"):
                    values = [self.strings(a, scope, depth) for a in args]
                    if all(len(v) == 1 and UNKNOWN not in v[0] for v in values) and values:
                        result.add("'" + getattr(text, name)(*(v[0] for v in values)))
                    else:
                        result.add("'" + UNKNOWN)
                elif name in ("encode", "decode", "swapcase", "title", "capitalize"):
                    result.add("'" + UNKNOWN)
            elif kind == "%":
                if name == "joinpath":
                    parts = [self.strings(a, scope, depth) or [UNKNOWN] for a in args]
                    result |= {"%" + s for s in _join([text], *parts, sep="/")}
                elif name in ("resolve", "absolute", "expanduser"):
                    result.add(owner)
                elif name in ("with_suffix", "with_name") and args:
                    for new in self.strings(args[0], scope, depth) or [UNKNOWN]:
                        head = text.rsplit("/", 1)[0] + "/" if "/" in text else ""
                        base = text.rsplit("/", 1)[-1]
                        if name == "with_suffix":
                            result.add("%" + head + base.rsplit(".", 1)[0] + new)
                        else:
                            result.add("%" + head + new)
            elif owner.startswith("[]"):
                if name in ("get", "pop", "setdefault"):
                    result.add(owner[2:])
                elif name in ("values", "items", "copy", "keys"):
                    result.add(owner)
            elif name in ("__getattribute__", "__getattr__") and args and is_dotted(owner):
                for attr in self.strings(args[0], scope, depth) or [UNKNOWN]:
                    result.add(f"{owner}.{attr}")
            elif owner.endswith(".__dict__") and is_dotted(owner):
                base = owner.removesuffix(".__dict__")
                if name in ("get", "pop", "setdefault") and args:
                    keys = self.strings(args[0], scope, depth) or [UNKNOWN]
                    result |= {f"{base}.{key}" for key in keys}
                elif name in ("values", "items"):
                    result.add(f"[]{base}.{UNKNOWN}")
        return result

    def _returns(self, key: int, depth: int) -> set[str]:
        if key in self.active:
            return set()
        self.active.add(key)
        try:
            result: set[str] = set()
            for scope, expr in self.returns.get(key, ()):
                result |= self.value(expr, scope, depth)
            return result
        finally:
            self.active.discard(key)

    def _imported(self, callee: str, node: ast.Call, scope: _Scope, depth: int) -> set[str]:
        first = node.args[0] if node.args else None
        if callee == "importlib.reload":
            return set(self.value(first, scope, depth)) if first is not None else set()
        names = self.strings(first, scope, depth)
        if not names:
            return {"?"}
        result = set()
        for name in names:
            if UNKNOWN in name:
                result.add("?")
                continue
            name = name.split(":")[0]
            fromlist = len(node.args) > 3 or any(k.arg == "fromlist" for k in node.keywords)
            if callee.endswith("__import__") and not fromlist:
                name = name.split(".")[0]
            result.add(name)
        return result


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

"""Привязки имён всей тетрадки: что может значить каждое имя и выражение.

:class:`Notebook` хранит привязки, которые собрал первый проход
(:mod:`~feedback.teacher.review.collector`): импорты, присваивания (и распаковку), циклы,
``with … as``, вызовы и возвращаемые значения своих функций. :meth:`Notebook.solve`
проходит по ним, пока значения имён не перестанут расти (параметры своих функций — по их
вызовам, элементы списков — по ``append``), а :meth:`Notebook.value` говорит, что может
значить выражение: модуль или атрибут по полному пути (``sys._getframe``), строка, путь к
файлу, своя функция или класс (словарь значений — :mod:`~feedback.teacher.review.values`).
Сверяет значения с таблицами уже отчёт (:mod:`~feedback.teacher.review.reporter`).

Пределы анализа ниже — внутренняя защита сканера (не настройка): запутанный код не должен
стоить больше секунды, а исчерпанный бюджет — сам находка.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable

from feedback.teacher.review.rules import (
    COURSE,
    GETTERS,
    IMPORTERS,
    PATH_TYPES,
    PRELOADED,
    REEXPORTED,
)
from feedback.teacher.review.scopes import Scope, bound_names
from feedback.teacher.review.values import (
    EMPTY,
    MAX_VALUES,
    UNKNOWN,
    danger,
    element,
    is_course,
    is_dotted,
    join,
    limit,
    pack,
    rank,
    strings,
    unpack,
)

_BUILTINS = frozenset(dir(builtins))
_MAX_DEPTH = 60  # глубже в выражение не заглядываем
_ROUNDS = 8  # проходов по привязкам до неподвижной точки
_BUDGET = 50_000  # привязок и вычислений на тетрадку: обычной хватает нескольких сотен


class Notebook:
    """Привязки имён всей тетрадки и вычисление значений выражений по ним."""

    def __init__(self, modules: set[str]) -> None:
        self.modules = modules
        self.module = Scope(0, None)
        self.scopes: dict[int, Scope] = {}
        self.env: dict[tuple[int, str], set[str]] = {}
        self.assigns: list[tuple[Scope, ast.expr, ast.expr, bool]] = []  # …, перебор?
        self.calls: list[tuple[Scope, ast.Call]] = []
        self.returns: dict[int, list[tuple[Scope, ast.expr]]] = {}
        self.functions: dict[int, ast.AST] = {}
        self.memo: dict[tuple[int, int], frozenset[str]] = {}
        self.active: set[int] = set()
        self.spent = 0  # сколько привязок и вычислений уже сделано
        self.exhausted = False

    # ----------------------------------------------------------------- сбор привязок

    def scope_for(self, node: ast.AST, parent: Scope) -> Scope:
        scope = self.scopes.get(id(node))
        if scope is None:
            while isinstance(parent.function, ast.ClassDef):
                parent = parent.parent or self.module  # методы не видят имён тела класса
            scope = Scope(id(node), parent, node)
            scope.names, scope.declared_global, scope.declared_nonlocal = bound_names(node)
            self.scopes[id(node)] = scope
            if not isinstance(node, ast.ClassDef):
                self.functions[id(node)] = node
                self.returns.setdefault(id(node), [])
                if isinstance(node, ast.Lambda):
                    self.returns[id(node)].append((scope, node.body))
        return scope

    def target_scope(self, scope: Scope, name: str) -> Scope:
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

    def bind_name(self, scope: Scope, name: str, values: Iterable[str]) -> bool:
        self.spent += 1
        key = (self.target_scope(scope, name).key, name)
        known = self.env.setdefault(key, set())
        changed = False
        for value in [v for v in values if v not in known]:
            # Важным значениям (модули курса, опасные пути) место есть всегда: «забить»
            # имя безобидными строками, чтобы flops в нём потерялся, не выйдет.
            if len(known) < MAX_VALUES or (len(known) < 2 * MAX_VALUES and not rank(value)):
                known.add(value)
                changed = True
        return changed

    def bind(self, scope: Scope, target: ast.expr, values: Iterable[str], source=None) -> bool:
        if isinstance(target, ast.Name):
            return self.bind_name(scope, target.id, values)
        if isinstance(target, ast.Starred):
            return self.bind(scope, target.value, pack(unpack(values)))
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
                    changed |= self.bind(scope, element, unpack(values))
            return changed
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            return self.bind_name(scope, target.value.id, pack(values))
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
                    changed |= self.bind(scope, target, element(values))
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

    def bind_call(self, scope: Scope, call: ast.Call) -> bool:
        """Параметры своих функций по их вызовам; ``список.append(x)`` — в элементы списка."""
        changed = False
        function = call.func
        if (
            isinstance(function, ast.Attribute)
            and isinstance(function.value, ast.Name)
            and function.attr in ("append", "add", "insert", "appendleft", "setdefault")
            and call.args
        ):
            values = pack(self.value(call.args[-1], scope))
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
                    values = element(self.value(argument.value, scope))
                    for name in every:
                        changed |= self.bind_name(inner, name, values)
                elif index < len(positional):
                    values = self.value(argument, scope)
                    changed |= self.bind_name(inner, positional[index], values)
                elif arguments.vararg is not None:
                    values = pack(self.value(argument, scope))
                    changed |= self.bind_name(inner, arguments.vararg.arg, values)
            for keyword in call.keywords:
                values = self.value(keyword.value, scope)
                if keyword.arg is None:
                    for name in every:
                        changed |= self.bind_name(inner, name, element(values))
                elif keyword.arg in every:
                    changed |= self.bind_name(inner, keyword.arg, values)
                elif arguments.kwarg is not None:
                    changed |= self.bind_name(inner, arguments.kwarg.arg, pack(values))
        return changed

    # ----------------------------------------------------------------- значения

    def lookup(self, scope: Scope, name: str) -> set[str]:
        current: Scope | None = scope
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

    def value(self, node: ast.AST, scope: Scope, depth: int = 0) -> frozenset[str]:
        key = (id(node), scope.key)
        known = self.memo.get(key)
        if known is not None:
            return known
        if depth > _MAX_DEPTH:
            return EMPTY
        self.memo[key] = EMPTY  # на случай зацикливания
        self.spent += 1
        result = limit(self._value(node, scope, depth + 1))
        self.memo[key] = result
        return result

    def strings(self, node: ast.AST | None, scope: Scope, depth: int = 0) -> list[str]:
        return strings(self.value(node, scope, depth)) if node is not None else []

    def _value(self, node: ast.AST, scope: Scope, depth: int) -> set[str]:
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
            return {"'" + s for s in join(*parts)}
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
                    result |= pack(value(element, scope, depth))
            return result
        if isinstance(node, ast.Dict):
            return pack(v for item in node.values for v in value(item, scope, depth))
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp):
            return pack(value(node.elt, scope, depth))
        if isinstance(node, ast.DictComp):
            return pack(value(node.value, scope, depth))
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

    def _subscript(self, node: ast.Subscript, scope: Scope, depth: int) -> set[str]:
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

    def _binop(self, node: ast.BinOp, scope: Scope, depth: int) -> set[str]:
        left, right = self.value(node.left, scope, depth), self.value(node.right, scope, depth)
        result: set[str] = set()
        if isinstance(node.op, ast.Add):
            texts = [v[1:] for v in left if v[:1] == "'"], [v[1:] for v in right if v[:1] == "'"]
            if texts[0] or texts[1]:
                result |= {"'" + s for s in join(*texts)}
            result |= {v for v in left | right if v.startswith("[]")}
        elif isinstance(node.op, ast.Div):
            paths = [v[1:] for v in left if v[:1] == "%"]
            if paths:
                result |= {"%" + s for s in join(paths, strings(right), sep="/")}
        elif isinstance(node.op, ast.Mod):
            result |= {re.sub(r"%[-+ #0-9.]*[a-zA-Z]", UNKNOWN, v) for v in left if v[:1] == "'"}
        return result

    def _call(self, node: ast.Call, scope: Scope, depth: int) -> set[str]:
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
                result |= {"%" + s for s in join(*parts, sep="/")}
            elif callee in ("pathlib.Path.cwd", "os.getcwd"):
                result.add("%." if callee.startswith("pathlib") else "'.")
            elif callee == "os.path.join":
                parts = [self.strings(a, scope, depth) or [UNKNOWN] for a in args]
                result |= {"'" + s for s in join(*parts, sep="/")}
            elif callee in ("builtins.str", "os.fspath", "os.fsdecode") or (
                callee.startswith("os.path.") and callee[8:] in ("abspath", "realpath", "normpath")
            ):
                result |= {"'" + s for s in self.strings(first, scope, depth)}
            elif callee in ("builtins.list", "builtins.tuple", "builtins.set", "builtins.sorted"):
                result |= self.value(first, scope, depth) if first is not None else set()
            elif callee in ("builtins.next", "builtins.iter", "builtins.reversed"):
                values = self.value(first, scope, depth) if first is not None else EMPTY
                result |= element(values) if callee == "builtins.next" else set(values)
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
                    result |= {"'" + s for s in join(*parts, sep=text)}
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
                    result |= {"%" + s for s in join([text], *parts, sep="/")}
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

    def _imported(self, callee: str, node: ast.Call, scope: Scope, depth: int) -> set[str]:
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

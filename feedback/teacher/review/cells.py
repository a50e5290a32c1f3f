"""Код ячейки так, как его видит ядро IPython: разбор, магии, код внутри строк, пределы.

Ячейка разбирается :func:`parse` — сначала как Python, а если не вышло, после тех же
преобразований, что делает IPython (``%магия`` и ``!команда`` становятся вызовами
``get_ipython()``). Код, который ядро выполнит, хотя он записан не в самой ячейке, тоже
достаётся отсюда: тело ``%%time`` и строка ``%timeit`` (:func:`embedded`), строки, которые
вызов выполнит как код (:func:`code_strings`, таблицы — в :mod:`~feedback.teacher.review.rules`),
примеры ``>>> …`` для doctest (:func:`doctest_examples`).

Пределы (:data:`MAX_CELL_CHARS`, :data:`MAX_LEARNER_CHARS`) — внутренняя защита сканера, а
не настройка преподавателя: сверх них разбор стоил бы секунд, и ячейка сразу идёт в находки.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from functools import lru_cache

from feedback.teacher.review.rules import CODE_MAGICS, STRING_METHODS, STRING_RUNNERS

#: Ячейка, в которой кода (без строковых литералов) больше, не разбирается (разбор стоил
#: бы секунд), а сразу идёт в находки. Длинные строки данных разбираются быстро и не в счёт.
MAX_CELL_CHARS = 50_000
#: Столько кода учащегося разбирается во всей тетрадке; ячейки сверх — тоже находки.
MAX_LEARNER_CHARS = 200_000
#: Методы ``get_ipython()``, в вызовы которых IPython превращает ``%магию``, ``%%магию``
#: и ``!команду``.
MAGIC_METHODS = {"run_line_magic", "run_cell_magic", "system", "getoutput"}
#: Строковые литералы Python: :func:`code_size` их не считает.
LITERALS = re.compile(
    r'"""[\s\S]*?"""|' + r"'''[\s\S]*?'''|"
    r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"|' + r"'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+'"
)


@lru_cache(maxsize=512)
def parse(source: str) -> ast.Module | None:
    """Дерево ячейки; ``%магии`` и ``!команды`` — так, как их видит IPython; ``None`` — не код."""
    try:
        return ast.parse(source)
    except SyntaxError:
        pass  # может быть, это синтаксис IPython: разберём после преобразования
    except (ValueError, RecursionError, MemoryError):
        return None  # ядро такую ячейку тоже не выполнит
    try:
        from IPython.core.inputtransformer2 import TransformerManager

        transformed = TransformerManager().transform_cell(source)
    except Exception:
        return None
    if transformed == source:
        return None
    try:
        return ast.parse(transformed)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def magic_call(node: ast.Call) -> tuple[str, str, list[ast.expr]] | None:
    """(вид, имя, аргументы), если это вызов, в который IPython превращает ``%магию`` или ``!``."""
    function = node.func
    if not (
        isinstance(function, ast.Attribute)
        and function.attr in MAGIC_METHODS
        and isinstance(function.value, ast.Call)
        and isinstance(function.value.func, ast.Name)
        and function.value.func.id == "get_ipython"
    ):
        return None
    if function.attr in ("system", "getoutput"):
        return "shell", "", node.args
    first = node.args[0] if node.args else None
    name = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else "?"
    return function.attr, name, node.args[1:]


def literal_text(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def embedded(node: ast.Call) -> Iterator[tuple[ast.Module, int]]:
    """Код внутри ``%time …`` и ``%%time`` (и похожих магий) и сдвиг его строк в ячейке."""
    magic = magic_call(node)
    if magic is None or magic[1] not in CODE_MAGICS:
        return
    kind, _, args = magic
    if kind == "run_cell_magic" and len(args) > 1:
        body = literal_text(args[1])
        tree = parse(body) if body else None
        if tree is not None:
            yield tree, node.lineno
    elif kind == "run_line_magic" and args:
        words = (literal_text(args[0]) or "").split()
        while words:  # ключи магии (``-n 10 -r1``) отбрасываем, пока остаток не станет кодом
            tree = parse(" ".join(words))
            if tree is not None:
                yield tree, node.lineno - 1
                return
            words = words[2:] if len(words) > 1 and words[1].isdigit() else words[1:]


def _string_arguments(node: ast.Call, places: Iterable[int | str]) -> list[ast.expr]:
    """Аргументы вызова на местах ``places`` (номера позиций и имена)."""
    found = []
    for place in places:
        if isinstance(place, int) and place < len(node.args):
            found.append(node.args[place])
        elif isinstance(place, str):
            found += [item.value for item in node.keywords if item.arg == place]
    return found


def code_strings(node: ast.Call, callees: Iterable[str]) -> list[ast.expr]:
    """Аргументы вызова, которые он выполнит как код (см. :data:`STRING_RUNNERS`)."""
    found = []
    for callee in callees:
        found += _string_arguments(node, STRING_RUNNERS.get(callee, ()))
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else None
    if name in STRING_METHODS:
        found += _string_arguments(node, (0, STRING_METHODS[name]))
    return found


def as_code(text: str) -> ast.Module | None:
    """Строка как код Python (ячейка IPython тоже), если она разбирается."""
    return parse(text) if text and len(text) <= MAX_CELL_CHARS else None


def doctest_examples(tree: ast.AST) -> Iterator[tuple[ast.Module, int]]:
    """Примеры ``>>> …`` из docstring функций и классов ячейки — их выполнит doctest."""
    import doctest

    parser = doctest.DocTestParser()
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            continue
        docstring = ast.get_docstring(node, clean=False)
        if not docstring or ">>>" not in docstring:
            continue
        try:
            examples = parser.get_examples(docstring)
        except ValueError:
            continue
        for example in examples:
            parsed = as_code(example.source)
            if parsed is not None:
                yield parsed, node.lineno + example.lineno


def code_size(source: str) -> int:
    """Примерный объём кода ячейки: строковые литералы (данные) не в счёт."""
    return len(LITERALS.sub("''", source))


def spelled_callees(node: ast.Call) -> set[str]:
    """Кого вызывает ``node``, как это написано (для первого прохода, до разбора привязок)."""
    if isinstance(node.func, ast.Name) and node.func.id in ("exec", "eval", "compile"):
        return {f"builtins.{node.func.id}"}
    return {spelling(node.func)}


def spelled_root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def spelling(node: ast.AST) -> str:
    """Обращение так, как оно записано (коротко)."""
    parts = []
    current = node
    while isinstance(current, ast.Attribute):
        parts.append(current.attr)
        current = current.value
    if isinstance(current, ast.Name):
        return ".".join([current.id, *reversed(parts)])
    try:
        text = ast.unparse(node)
    except Exception:
        return "…"
    return text if len(text) <= 80 else text[:77] + "…"

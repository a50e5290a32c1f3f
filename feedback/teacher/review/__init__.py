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

Как сканер следит за именами
----------------------------

Обход «в лоб» легко обмануть: ``f = flops``, ``getattr(sys, "_get" + "frame")``,
``importlib.import_module("feedback.flops")`` без единого ``import``. Поэтому сканер
сначала собирает привязки имён по всей тетрадке — ячейки подготовки (``setup``) и
ячейки учащегося: импорты, присваивания (и распаковку), циклы, ``with … as``,
параметры своих функций по их вызовам, возвращаемые значения, простые контейнеры и
строки, сложенные из констант. Каждому имени сопоставляется, что оно может значить:
модуль или атрибут по полному пути (``sys._getframe``, ``feedback.flops``), строка или
путь к файлу. Привязки собираются без учёта порядка ячеек и с запасом: имя, которое
хоть где-то значит модуль курса, считается модулем курса везде. Затем ячейки учащегося
обходятся ещё раз, и каждое обращение сверяется с таблицами ниже по полному пути, как
бы оно ни было записано.

Ячейка, которая не разбирается (синтаксическая ошибка), находкой не считается: ядро
разбирает её так же и тоже не выполнит. Слишком большая ячейка (больше
:data:`MAX_CELL_CHARS` символов кода без строковых литералов, или сверх
:data:`MAX_LEARNER_CHARS` на тетрадку) не разбирается вовсе, и это само по себе находка.
Работа анализа ограничена бюджетом (обычной тетрадке хватает сотой его части); если
запутанный код его исчерпал, об этом тоже говорит находка. Так сканер укладывается в
миллисекунды на обычную тетрадку и в секунду на самую злонамеренную, а исключений
наружу не бросает.

Чего сканер не видит
--------------------

Он читает текст, а не выполняет его, поэтому не видит:

- кода и имён, собранных во время выполнения из данных: строк из ``chr``, ``base64``,
  байтов, файлов, ответов сети; ``getattr`` с таким именем у обычного объекта (у модулей
  курса, ``sys``, ``os``, ``builtins``, ``importlib`` вычисляемое имя — уже находка);
- значений, которые прошли через то, что анализ не прослеживает: атрибуты чужих
  объектов (атрибуты своих классов и ``self.x`` прослеживаются), контейнеры (кроме
  литералов, ``append`` и ``d[k] = …`` у простого имени), ``*args``/``**kwargs``,
  декораторы, ``functools.partial``, ``map`` и ``filter``, методы сторонних библиотек;
- результатов функций курса: ``qa_data.load_qa()`` — уже данные, а не модуль курса
  (иначе находкой было бы каждое ``data["prompts"]``);
- того, что делают сторонние библиотеки и загруженные ими файлы (``np.load`` с
  ``allow_pickle``, расширения, ``sqlite3``, архивы), и записи файлов с путём, который
  известен только во время выполнения.

Порядок ячеек не учитывается, поэтому ошибается сканер в сторону лишней находки
(имя, переопределённое позже), а не пропуска.

Это закрывает запись аудита во время выполнения (``sys.addaudithook`` внутри песочницы):
она видит сами события — импорт, ``open``, ``exec`` и ``compile``, запуск процессов,
чтение кадров стека, — как бы ни был записан вызвавший их код.

Где что
-------

- :mod:`~feedback.teacher.review.rules` — таблицы: что считается обращением к механизму
  проверки и с какой причиной (их читают без анализатора);
- :mod:`~feedback.teacher.review.cells` — разбор ячейки как в IPython, код внутри магий и
  строк, пределы размера;
- :mod:`~feedback.teacher.review.values` — словарь значений выражений (что сканер помнит
  о выражении) и действия над ним;
- :mod:`~feedback.teacher.review.scopes` — области видимости и обход определений;
- :mod:`~feedback.teacher.review.collector` — первый проход: сбор привязок имён;
- :mod:`~feedback.teacher.review.bindings` — привязки имён и значения выражений;
- :mod:`~feedback.teacher.review.reporter` — сверка обращений с таблицами;
- здесь — :func:`scan`, который их соединяет; находка —
:class:`~feedback.teacher.core.results.Finding`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from feedback.teacher.core.results import Finding
from feedback.teacher.review.bindings import Notebook
from feedback.teacher.review.cells import (
    MAX_CELL_CHARS,
    MAX_LEARNER_CHARS,
    code_size,
    doctest_examples,
    parse,
)
from feedback.teacher.review.collector import Collector
from feedback.teacher.review.reporter import Reporter
from feedback.teacher.review.rules import (
    ATTRIBUTES,
    BACKGROUND,
    CODE_MAGICS,
    COURSE,
    DOCTEST,
    EXTRACTORS,
    GETTERS,
    IMPORTERS,
    INTERNALS,
    LISTERS,
    MAGICS,
    MODULE_ATTRIBUTES,
    MODULES,
    NAMES,
    OPENERS,
    PATCHED,
    PATH_TYPES,
    PATH_WRITERS,
    PRELOADED,
    REEXPORTED,
    SCRIPT_MAGICS,
    SENSITIVE,
    STRING_METHODS,
    STRING_RUNNERS,
    WRITERS,
)
from feedback.teacher.review.values import is_course

__all__ = [
    "ATTRIBUTES",
    "BACKGROUND",
    "CODE_MAGICS",
    "COURSE",
    "DOCTEST",
    "EXTRACTORS",
    "GETTERS",
    "IMPORTERS",
    "INTERNALS",
    "LISTERS",
    "MAGICS",
    "MAX_CELL_CHARS",
    "MAX_LEARNER_CHARS",
    "MODULES",
    "MODULE_ATTRIBUTES",
    "NAMES",
    "OPENERS",
    "PATCHED",
    "PATH_TYPES",
    "PATH_WRITERS",
    "PRELOADED",
    "REEXPORTED",
    "SCRIPT_MAGICS",
    "SENSITIVE",
    "STRING_METHODS",
    "STRING_RUNNERS",
    "WRITERS",
    "Finding",
    "allowed_helpers",
    "course_modules",
    "scan",
]


def course_modules(setup_sources: Iterable[str]) -> set[str]:
    """Имена, под которыми ячейки подготовки импортируют модули курса (``flops``, ``memory``)."""
    names = {COURSE}
    for source in setup_sources:
        tree = parse(source)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == COURSE:
                names.update(alias.asname or alias.name for alias in node.names)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.split(".")[0] == COURSE:
                        names.add(alias.asname or alias.name.split(".")[0])
    return names


def allowed_helpers(solution_sources: Iterable[str], modules: set[str]) -> set[str]:
    """``модуль.имя`` помощников курса, которыми пользуются эталонные решения."""
    allowed = set()
    for source in solution_sources:
        tree = parse(source)
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


def scan(
    cells: Iterable[tuple[str, str]],
    modules: set[str],
    allowed: set[str],
    *,
    setup: Iterable[str] = (),
) -> list[Finding]:
    """Находки в ячейках учащегося; ``cells`` — пары (подпись ячейки, код).

    ``setup`` — код неизменяемых ячеек той же тетрадки (подготовка, установка): из него
    берутся привязки имён (``from feedback import flops``, ``import importlib``), сам он
    не проверяется. Без него имена из ``modules`` считаются модулями курса, а
    ``importlib``, ``sys``, ``os`` и ``subprocess`` — модулями, которые импортирует ячейка
    установки.
    """
    cells = list(cells)
    try:
        return _scan(cells, set(modules), set(allowed), list(setup))
    except Exception as error:  # сканер не должен ронять оценивание работы
        reason = f"сканер не смог разобрать код ({type(error).__name__}) — посмотрите глазами"
        return [Finding(label, 1, "", reason) for label, _ in cells[:1]]


def _scan(
    cells: list[tuple[str, str]], modules: set[str], allowed: set[str], setup: list[str]
) -> list[Finding]:
    notebook = Notebook(modules)
    findings: list[Finding] = []
    for source in setup:
        tree = parse(source)
        if tree is not None:
            try:
                Collector(notebook).visit(tree)
            except RecursionError:
                continue
    learner: list[tuple[str, str, ast.Module]] = []
    total = 0
    for label, source in cells:
        size = code_size(source) if len(source) > MAX_CELL_CHARS else len(source)
        if size > MAX_CELL_CHARS or total + size > MAX_LEARNER_CHARS:
            reason = f"ячейка длиной {len(source)} символов: сканер её не разбирает — посмотрите"
            findings.append(Finding(label, 1, "", reason))
            continue
        total += size
        tree = parse(source)
        if tree is None:
            continue
        try:
            Collector(notebook).visit(tree)
        except RecursionError:
            findings.append(Finding(label, 1, "", "код вложен слишком глубоко для сканера"))
            continue
        learner.append((label, source, tree))
    if any(DOCTEST in source for _, source, _ in learner):
        # doctest выполнит примеры ``>>> …`` из docstring: они — тоже код учащегося.
        for label, _, tree in list(learner):
            for example, line in doctest_examples(tree):
                source = "\n" * (line - 1) + ast.unparse(example)
                parsed = parse(source)
                if parsed is not None:
                    Collector(notebook).visit(parsed)
                    learner.append((label, source, parsed))
    notebook.solve()
    if notebook.exhausted and learner:
        label = max(learner, key=lambda item: len(item[1]))[0]
        reason = "код слишком запутан для полного разбора: сканер мог что-то пропустить"
        findings.append(Finding(label, 1, "", reason))

    named = set()  # объекты курса, которые тетрадка сама дала учащемуся под именем
    for name in modules:
        named.update(v for v in notebook.lookup(notebook.module, name) if is_course(v))
    canonical = set(allowed)
    for helper in allowed:
        owner, _, attr = helper.partition(".")
        for value in notebook.lookup(notebook.module, owner):
            if is_course(value):
                canonical.add(f"{value}.{attr}")

    for label, source, tree in learner:
        reporter = Reporter(notebook, canonical, named)
        try:
            reporter.visit(tree)
        except RecursionError:
            findings.append(Finding(label, 1, "", "код вложен слишком глубоко для сканера"))
            continue
        lines = source.splitlines()
        seen = set()
        for line, reason in sorted(reporter.found, key=lambda item: item[0]):
            if (line, reason) in seen:
                continue
            seen.add((line, reason))
            code = lines[line - 1].strip() if 0 < line <= len(lines) else ""
            findings.append(Finding(label, line, code[:200], reason))
    order = {label: index for index, (label, _) in enumerate(cells)}
    findings.sort(key=lambda f: order.get(f.cell, 0))
    return findings

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
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

#: Ячейка, в которой кода (без строковых литералов) больше, не разбирается (разбор стоил
#: бы секунд), а сразу идёт в находки. Длинные строки данных разбираются быстро и не в счёт.
MAX_CELL_CHARS = 50_000
#: Столько кода учащегося разбирается во всей тетрадке; ячейки сверх — тоже находки.
MAX_LEARNER_CHARS = 200_000
#: Пакет проверок курса.
COURSE = "feedback"

#: Модули (и всё, что из них взято), обращение к которым — повод посмотреть.
MODULES = {
    "feedback": "импортирует пакет проверок курса",
    "importlib": "управляет импортом модулей (importlib)",
    "pkgutil": "импортирует модули по имени (pkgutil)",
    "zipimport": "импортирует модули в обход обычного import (zipimport)",
    "runpy": "выполняет модули и файлы как программы (runpy)",
    "site": "меняет пути импорта (site)",
    "inspect": "заглядывает во внутренности функций и стека (inspect)",
    "gc": "перебирает объекты в памяти (gc)",
    "ctypes": "работает с памятью интерпретатора напрямую (ctypes)",
    "_ctypes": "работает с памятью интерпретатора напрямую (ctypes)",
    "builtins": "меняет встроенные функции Python (builtins)",
    "IPython": "обращается к ядру IPython",
    "ipykernel": "обращается к ядру IPython (ipykernel)",
    "__main__": "обращается к пространству имён тетрадки (__main__)",
    "signal": "меняет обработку сигналов (это сломало бы лимиты времени проверки)",
    "threading": "запускает фоновые потоки",
    "_thread": "запускает фоновые потоки",
    "concurrent": "запускает пулы потоков или процессов (concurrent.futures)",
    "multiprocessing": "запускает фоновые процессы (multiprocessing)",
    "_multiprocessing": "запускает фоновые процессы (multiprocessing)",
    "asyncio": "запускает фоновые задачи и таймеры (asyncio)",
    "atexit": "ставит код на выход из ядра (atexit)",
    "faulthandler": "ставит фоновые таймеры интерпретатора (faulthandler)",
    "subprocess": "запускает сторонние процессы (subprocess)",
    "_posixsubprocess": "запускает сторонние процессы (subprocess)",
    "pty": "запускает сторонние процессы (pty)",
    "posix": "делает системные вызовы в обход os (posix)",
    "pdb": "ставит трассировку выполнения (отладчик pdb)",
    "bdb": "ставит трассировку выполнения (отладчик bdb)",
    "code": "выполняет код из строки (модуль code)",
    "codeop": "компилирует код из строки (codeop)",
    "marshal": "собирает код из байтов (marshal)",
    "_pickle": "выполняет код из данных (pickle)",
    "dill": "выполняет код из данных (dill)",
    "cloudpickle": "выполняет код из данных (cloudpickle)",
    "joblib": "запускает процессы или выполняет код из данных (joblib)",
    "sys": None,  # сам по себе безобиден; опасные атрибуты ниже
    "os": None,
}
_EXEC = "выполняет код из строки (exec)"
_EVAL = "вычисляет код из строки (eval)"
_COMPILE = "компилирует код из строки (compile)"
_IMPORT = "импортирует модули в обход обычного import (__import__)"
_SYS_PATH = "меняет пути импорта (sys.path)"
_PICKLE = "выполняет код из данных (pickle.load)"
_TYPES = "собирает функции и модули из кода напрямую (types)"
#: Атрибуты модулей по полному пути, обращение к которым — повод посмотреть.
MODULE_ATTRIBUTES = {
    "sys.modules": "подменяет или перебирает загруженные модули (sys.modules)",
    "sys._getframe": "читает кадры стека вызовов (sys._getframe)",
    "sys._current_frames": "читает кадры стека вызовов (sys._current_frames)",
    "sys.settrace": "ставит трассировку выполнения (sys.settrace)",
    "sys.setprofile": "ставит профилировщик (sys.setprofile)",
    "sys.addaudithook": "ставит перехватчик событий (sys.addaudithook)",
    "sys.monitoring": "ставит перехватчики выполнения (sys.monitoring)",
    "sys.meta_path": "меняет механизм импорта (sys.meta_path)",
    "sys.path_hooks": "меняет механизм импорта (sys.path_hooks)",
    "sys.path_importer_cache": "меняет механизм импорта (sys.path_importer_cache)",
    "sys.path.insert": _SYS_PATH,
    "sys.path.append": _SYS_PATH,
    "sys.path.extend": _SYS_PATH,
    "sys.path.__setitem__": _SYS_PATH,
    "sys.breakpointhook": "ставит перехватчик отладчика (sys.breakpointhook)",
    "sys.excepthook": "ставит перехватчик ошибок (sys.excepthook)",
    "os.environ": "меняет переменные окружения (os.environ)",
    "os.environb": "меняет переменные окружения (os.environb)",
    "os.putenv": "меняет переменные окружения (os.putenv)",
    "os.unsetenv": "меняет переменные окружения (os.unsetenv)",
    "os._exit": "завершает процесс ядра (os._exit)",
    "os.kill": "посылает сигналы процессам (os.kill)",
    "os.killpg": "посылает сигналы процессам (os.killpg)",
    "os.fork": "порождает процессы (os.fork)",
    "os.forkpty": "порождает процессы (os.forkpty)",
    "os.system": "запускает команды оболочки (os.system)",
    "os.popen": "запускает команды оболочки (os.popen)",
    "os.posix_spawn": "порождает процессы (os.posix_spawn)",
    "os.posix_spawnp": "порождает процессы (os.posix_spawnp)",
    "os.register_at_fork": "ставит код на порождение процессов (os.register_at_fork)",
    "os.setsid": "выводит процесс из-под контроля ядра (os.setsid)",
    "os.setpgid": "выводит процесс из-под контроля ядра (os.setpgid)",
    "os.setpgrp": "выводит процесс из-под контроля ядра (os.setpgrp)",
    "os.chdir": "меняет рабочую папку ядра (os.chdir)",
    "os.fchdir": "меняет рабочую папку ядра (os.fchdir)",
    "builtins.exec": _EXEC,
    "builtins.eval": _EVAL,
    "builtins.compile": _COMPILE,
    "builtins.__import__": _IMPORT,
    "importlib.__import__": _IMPORT,
    "builtins.globals": "меняет глобальные переменные тетрадки через globals()",
    "builtins.setattr": "меняет атрибуты объектов через setattr",
    "builtins.delattr": "удаляет атрибуты объектов через delattr",
    "builtins.breakpoint": "останавливает выполнение отладчиком (breakpoint)",
    "traceback.walk_stack": "читает кадры стека вызовов (traceback.walk_stack)",
    "traceback.walk_tb": "читает кадры стека из трассировки (traceback.walk_tb)",
    "weakref.finalize": "ставит код на сборку мусора и выход из ядра (weakref.finalize)",
    "pickle.load": _PICKLE,
    "pickle.loads": _PICKLE,
    "pickle.Unpickler": _PICKLE,
    "types.FunctionType": _TYPES,
    "types.LambdaType": _TYPES,
    "types.CodeType": _TYPES,
    "types.ModuleType": _TYPES,
}
#: Встроенные имена, вызов или упоминание которых — повод посмотреть.
NAMES = {
    "__builtins__": "меняет встроенные функции Python (__builtins__)",
    "__import__": _IMPORT,
    "get_ipython": "обращается к ядру IPython (get_ipython)",
    "exec": _EXEC,
    "eval": _EVAL,
    "compile": _COMPILE,
    "globals": "меняет глобальные переменные тетрадки через globals()",
    "setattr": "меняет атрибуты объектов через setattr",
    "delattr": "удаляет атрибуты объектов через delattr",
}
#: Атрибуты, через которые заглядывают в кадры стека и внутренности функций (у чего угодно).
ATTRIBUTES = {
    "f_back": "читает кадры стека вызовов",
    "f_locals": "читает переменные чужого кадра стека",
    "f_globals": "читает глобальные переменные чужого кадра стека",
    "f_builtins": "читает встроенные функции чужого кадра стека",
    "tb_frame": "читает кадры стека из трассировки",
    "gi_frame": "читает кадр генератора",
    "cr_frame": "читает кадр сопрограммы",
    "ag_frame": "читает кадр асинхронного генератора",
    "__globals__": "читает глобальные переменные функции",
    "__builtins__": "добирается до встроенных функций через __builtins__",
    "__code__": "меняет код функции",
    "__closure__": "читает замыкание функции",
    "__subclasses__": "перебирает классы интерпретатора",
    "__bases__": "меняет иерархию классов",
    "__base__": "перебирает иерархию классов",
    "__mro__": "перебирает иерархию классов",
}
#: Методы, которыми код ставят выполняться в фоне (у цикла событий, пула, таймера).
BACKGROUND = {
    name: f"запускает код в фоне ({name})"
    for name in (
        "run_in_executor",
        "call_later",
        "call_at",
        "call_soon",
        "call_soon_threadsafe",
        "create_task",
        "ensure_future",
        "add_signal_handler",
        "start_new_thread",
    )
}
#: Атрибуты проверок курса, за которыми лежат эталон, случаи и разбор ошибок.
INTERNALS = {"graded", "reference", "judge", "observe", "mistakes", "cases", "__wrapped__"}
#: Модули, у которых ``getattr`` с вычисляемым именем — уже находка.
SENSITIVE = {
    "sys",
    "os",
    "posix",
    "builtins",
    "importlib",
    "inspect",
    "gc",
    "ctypes",
    "types",
    "traceback",
    "IPython",
    "threading",
    "asyncio",
    "multiprocessing",
    "concurrent",
    "signal",
    "atexit",
    "subprocess",
    "__main__",
    COURSE,
}
#: Модули, запись в атрибуты которых меняет поведение всего ядра (``math.isclose = …``).
PATCHED = SENSITIVE | {"math", "json", "functools", "operator", "numpy", "random"}
#: Модули, которые ячейка установки есть в каждой лабораторной: учащемуся не нужно их
#: импортировать, чтобы ими пользоваться.
PRELOADED = ("importlib", "sys", "os", "subprocess")
#: Имена модулей, которые доступны как атрибут почти любого модуля (``os.sys``, ``x.builtins``).
REEXPORTED = {"sys", "os", "builtins", "importlib", "types", "subprocess", "threading"}

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
    "cd": "меняет рабочую папку ядра (%cd)",
    "save": "записывает код в файл .py (%save)",
}
#: Магии, которые выполняют код вне ядра.
SCRIPT_MAGICS = {"bash", "sh", "script", "python", "python2", "python3", "pypy", "perl", "ruby"}
#: Магии, которые выполняют свою строку или тело как код ядра: его тоже смотрим.
CODE_MAGICS = {"time", "timeit", "prun", "capture", "debug", "memit", "lprun"}
_MAGIC_METHODS = {"run_line_magic", "run_cell_magic", "system", "getoutput"}

#: Вызовы, которые выполняют строку как код Python: путь → какие аргументы — код (номер или
#: имя). Строки, которые туда попадают, разбираются как код ячейки: ``timeit.timeit("…")``
#: не прячет от разбора того, что сделано внутри строки.
STRING_RUNNERS: dict[str, tuple[int | str, ...]] = {
    "builtins.exec": (0, "source"),
    "builtins.eval": (0, "source"),
    "builtins.compile": (0, "source"),
    "timeit.timeit": (0, 1, "stmt", "setup"),
    "timeit.repeat": (0, 1, "stmt", "setup"),
    "timeit.Timer": (0, 1, "stmt", "setup"),
    "cProfile.run": (0, "statement"),
    "cProfile.runctx": (0, "statement"),
    "profile.run": (0, "statement"),
    "profile.runctx": (0, "statement"),
    "pdb.run": (0, "statement"),
    "pdb.runeval": (0, "expression"),
    "trace.Trace": (),
}
#: Методы, которые выполняют свой первый аргумент как код (у объектов IPython, code, profile,
#: trace, pdb): их строковый аргумент разбирается как код, у кого бы ни был вызван метод.
STRING_METHODS = {
    "run_cell": "raw_cell",
    "run_cell_async": "raw_cell",
    "runsource": "source",
    "runcode": "code",
    "runctx": "cmd",
    "runeval": "expr",
    "ex": "cmd",
    "ev": "expr",
}
#: Модуль, который выполняет примеры из docstring (``>>> …``) как код.
DOCTEST = "doctest"

#: Функции, которые возвращают атрибут по имени-строке.
GETTERS = {
    "builtins.getattr": "getattr",
    "builtins.hasattr": "hasattr",
    "builtins.object.__getattribute__": "object.__getattribute__",
    "builtins.type.__getattribute__": "type.__getattribute__",
    "inspect.getattr_static": "inspect.getattr_static",
}
#: Функции, которые выдают всё содержимое объекта.
LISTERS = {"builtins.vars": "vars", "builtins.dir": "dir"}
#: Функции, которые импортируют модуль по строке.
IMPORTERS = {
    "builtins.__import__": "__import__",
    "importlib.__import__": "importlib.__import__",
    "importlib.import_module": "importlib.import_module",
    "importlib.reload": "importlib.reload",
    "pkgutil.resolve_name": "pkgutil.resolve_name",
}
#: Функции, которые пишут в файлы или создают их (проверяются все их аргументы-пути).
WRITERS = {
    "os.open",
    "os.makedirs",
    "os.mkdir",
    "os.rename",
    "os.renames",
    "os.replace",
    "os.symlink",
    "os.link",
    "shutil.copy",
    "shutil.copy2",
    "shutil.copyfile",
    "shutil.copytree",
    "shutil.move",
    "shutil.unpack_archive",
    "urllib.request.urlretrieve",
}
#: Функции, которые пишут, только если открывают файл на запись (``mode``).
OPENERS = {"builtins.open", "io.open", "codecs.open", "io.FileIO", "_io.open"}
#: Методы путей ``pathlib``, которые пишут или создают файлы.
PATH_WRITERS = {
    "write_text",
    "write_bytes",
    "touch",
    "mkdir",
    "symlink_to",
    "hardlink_to",
    "rename",
    "replace",
}
#: Методы архивов, которые раскладывают файлы (аргументы — куда).
EXTRACTORS = {"extract", "extractall"}
PATH_TYPES = {
    "pathlib.Path",
    "pathlib.PurePath",
    "pathlib.PosixPath",
    "pathlib.PurePosixPath",
    "pathlib.WindowsPath",
}
_CODE_FILE = re.compile(
    r"feedback|__init__|__pycache__|sitecustomize|usercustomize|\.(py|pyc|pyw|pth)$", re.I
)
_SHELL_WRITE = re.compile(r">|\b(cp|mv|tee|mkdir|ln|touch|rsync|dd|wget|curl|unzip|tar|sed)\b")
_SHELL_PYTHON = re.compile(r"\bpython[0-9.]*\s+(-c\b|\S+\.py\b)")
_OBSERVATION = "vnd.course7"
_LITERALS = re.compile(
    r'"""[\s\S]*?"""|' + r"'''[\s\S]*?'''|"
    r'"[^"\\\n]*+(?:\\.[^"\\\n]*+)*+"|' + r"'[^'\\\n]*+(?:\\.[^'\\\n]*+)*+'"
)
#: Встроенные типы ответов: их наследник с подменёнными сравнениями или преобразованиями
#: выглядит для проверки одним числом, а на деле — другим.
_VALUE_TYPES = {
    f"builtins.{name}"
    for name in ("float", "int", "complex", "str", "bytes", "list", "tuple", "dict", "bool")
}
_SPOOFED = {
    "__eq__",
    "__ne__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__hash__",
    "__float__",
    "__int__",
    "__index__",
    "__complex__",
    "__abs__",
    "__round__",
    "__sub__",
    "__rsub__",
    "__truediv__",
    "__rtruediv__",
    "__format__",
    "__str__",
    "__repr__",
    "__getitem__",
    "__len__",
    "__iter__",
    "__contains__",
    "__bool__",
}
#: Вывод, который ничего не меняет в ядре: из него не берём находок «IPython».
_OUTPUT_ONLY = "IPython.display"
_BUILTINS = frozenset(dir(builtins))
_MAX_VALUES = 48  # столько значений имени помним, не больше (важные — в первую очередь)
_MAX_DEPTH = 60  # глубже в выражение не заглядываем
_ROUNDS = 8  # проходов по привязкам до неподвижной точки
_BUDGET = 50_000  # привязок и вычислений на тетрадку: обычной хватает нескольких сотен
_UNKNOWN = "*"  # неизвестная часть строки
_EMPTY: frozenset[str] = frozenset()
_MARKS = ("def:", "getter:", "class:")


@dataclass(frozen=True)
class Finding:
    """Место в коде учащегося, которое стоит посмотреть."""

    cell: str
    line: int
    code: str
    reason: str


def course_modules(setup_sources: Iterable[str]) -> set[str]:
    """Имена, под которыми ячейки подготовки импортируют модули курса (``flops``, ``memory``)."""
    names = {COURSE}
    for source in setup_sources:
        tree = _parse(source)
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


# --------------------------------------------------------------------------- разбор


@lru_cache(maxsize=512)
def _parse(source: str) -> ast.Module | None:
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


def _magic(node: ast.Call) -> tuple[str, str, list[ast.expr]] | None:
    """(вид, имя, аргументы), если это вызов, в который IPython превращает ``%магию`` или ``!``."""
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
        return "shell", "", node.args
    first = node.args[0] if node.args else None
    name = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else "?"
    return function.attr, name, node.args[1:]


def _text(node: ast.expr | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def _embedded(node: ast.Call) -> Iterator[tuple[ast.Module, int]]:
    """Код внутри ``%time …`` и ``%%time`` (и похожих магий) и сдвиг его строк в ячейке."""
    magic = _magic(node)
    if magic is None or magic[1] not in CODE_MAGICS:
        return
    kind, _, args = magic
    if kind == "run_cell_magic" and len(args) > 1:
        body = _text(args[1])
        tree = _parse(body) if body else None
        if tree is not None:
            yield tree, node.lineno
    elif kind == "run_line_magic" and args:
        words = (_text(args[0]) or "").split()
        while words:  # ключи магии (``-n 10 -r1``) отбрасываем, пока остаток не станет кодом
            tree = _parse(" ".join(words))
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


def _code_strings(node: ast.Call, callees: Iterable[str]) -> list[ast.expr]:
    """Аргументы вызова, которые он выполнит как код (см. :data:`STRING_RUNNERS`)."""
    found = []
    for callee in callees:
        found += _string_arguments(node, STRING_RUNNERS.get(callee, ()))
    function = node.func
    name = function.attr if isinstance(function, ast.Attribute) else None
    if name in STRING_METHODS:
        found += _string_arguments(node, (0, STRING_METHODS[name]))
    return found


def _as_code(text: str) -> ast.Module | None:
    """Строка как код Python (ячейка IPython тоже), если она разбирается."""
    return _parse(text) if text and len(text) <= MAX_CELL_CHARS else None


def _doctest_examples(tree: ast.AST) -> Iterator[tuple[ast.Module, int]]:
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
            parsed = _as_code(example.source)
            if parsed is not None:
                yield parsed, node.lineno + example.lineno


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


def _dotted(value: str) -> bool:
    return bool(value) and value[0] not in "'%[?*" and not value.startswith(_MARKS)


def _is_course(value: str) -> bool:
    return value == COURSE or value.startswith(COURSE + ".")


def _root(value: str) -> str:
    return value.split(".", 1)[0]


def _clean(part: str) -> str:
    return re.sub(r"(\(\)|\[\])+$", "", part)


def _code_size(source: str) -> int:
    """Примерный объём кода ячейки: строковые литералы (данные) не в счёт."""
    return len(_LITERALS.sub("''", source))


@lru_cache(maxsize=4096)
def _danger(value: str) -> str | None:
    """Причина, по которой обращение к этому пути — находка (модули курса — отдельно)."""
    if not _dotted(value) or value.startswith(_OUTPUT_ONLY):
        return None
    parts = [_clean(part) for part in value.split(".")]
    root = parts[0]
    if root == COURSE:
        return None
    for end in range(len(parts), 0, -1):
        reason = MODULE_ATTRIBUTES.get(".".join(parts[:end]))
        if reason:
            return reason
    if root == "builtins":
        return MODULES["builtins"] if len(parts) == 1 else None
    if len(parts) > 1:
        name = parts[1]
        if root == "sys" and name.startswith("_") and not name.startswith("__"):
            return f"обращается к внутренностям интерпретатора (sys.{name})"
        if root in ("os", "posix") and name.startswith(("exec", "spawn")):
            return f"запускает другую программу ({root}.{name})"
    return MODULES.get(root)


def _sensitive(value: str) -> bool:
    return value == "?" or (_dotted(value) and _root(value) in SENSITIVE)


def _join(*choices: Iterable[str], sep: str = "") -> set[str]:
    """Все сочетания частей (не больше нескольких десятков)."""
    result = {""}
    for choice in choices:
        parts = list(choice) or [_UNKNOWN]
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
            result.add("'" + _UNKNOWN)
        elif _dotted(value) and not _is_course(value) and _danger(value):
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
        return 0 if _CODE_FILE.search(core[1:]) else 2
    if _is_course(core) or core == "?" or _danger(core):
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


class _Notebook:
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
        _Collector(self).visit(tree)

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
        if name in self.modules and not any(_is_course(v) for v in values):
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
                    parts.append(self.strings(inner, scope, depth) or [_UNKNOWN])
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
            elif _dotted(owner) or owner == "?":
                if attr == "__self__" and owner.startswith("builtins."):
                    result.add("builtins")  # print.__self__ — это сам модуль builtins
                elif attr == "__builtins__":
                    result.add("builtins")
                else:
                    result.add(f"{owner}.{attr}")
        return result

    def _subscript(self, node: ast.Subscript, scope: _Scope, depth: int) -> set[str]:
        keys = self.strings(node.slice, scope, depth) or [_UNKNOWN]
        result = set()
        for owner in self.value(node.value, scope, depth):
            if owner.startswith("[]"):
                result.add(owner[2:])
            elif owner == "sys.modules":
                result.update("?" if _UNKNOWN in key else key for key in keys)
            elif owner == "builtins" or owner.endswith(".__dict__"):
                base = owner.removesuffix(".__dict__")
                result.update(f"{base}.{key}" for key in keys)
            elif owner in ("builtins.globals()", "builtins.vars()", "builtins.locals()"):
                for key in keys:
                    result |= self.lookup(self.module, key) if _UNKNOWN not in key else set()
            elif _dotted(owner) and not _is_course(owner) and _danger(owner):
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
            result |= {re.sub(r"%[-+ #0-9.]*[a-zA-Z]", _UNKNOWN, v) for v in left if v[:1] == "'"}
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
                names = self.strings(args[1], scope, depth) or [_UNKNOWN]
                owners = self.value(first, scope, depth)
                for name in names:
                    result |= self._attribute(owners, name)
            elif callee == "builtins.vars":
                if first is None:
                    result.add("builtins.vars()")
                else:
                    owners = self.value(first, scope, depth)
                    result |= {f"{o}.__dict__" for o in owners if _dotted(o) or o == "?"}
            elif callee == "builtins.dir":
                result.add("[]'" + _UNKNOWN)
            elif callee in ("builtins.globals", "builtins.locals"):
                result.add(callee + "()")
            elif callee in IMPORTERS:
                result |= self._imported(callee, node, scope, depth)
            elif callee in ("operator.attrgetter", "operator.methodcaller"):
                result |= {"getter:" + s for s in self.strings(first, scope, depth)}
            elif callee in PATH_TYPES:
                parts = [self.strings(a, scope, depth) or [_UNKNOWN] for a in args] or [["."]]
                result |= {"%" + s for s in _join(*parts, sep="/")}
            elif callee in ("pathlib.Path.cwd", "os.getcwd"):
                result.add("%." if callee.startswith("pathlib") else "'.")
            elif callee == "os.path.join":
                parts = [self.strings(a, scope, depth) or [_UNKNOWN] for a in args]
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
                keys = self.strings(first, scope, depth) or [_UNKNOWN]
                result.update("?" if _UNKNOWN in key else key for key in keys)
            elif callee in ("sys.modules.values", "sys.modules.items"):
                result.add("[]?")
            elif _dotted(callee) and not _is_course(callee) and _danger(callee):
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
                    result.add("'" + re.sub(r"\{[^{}]*\}", _UNKNOWN, text))
                elif name == "join" and args and isinstance(args[0], ast.List | ast.Tuple):
                    parts = [self.strings(e, scope, depth) or [_UNKNOWN] for e in args[0].elts]
                    result |= {"'" + s for s in _join(*parts, sep=text)}
                elif name in ("lower", "upper", "strip", "lstrip", "rstrip", "casefold"):
                    result.add("'" + getattr(text, name)())
                elif name in ("replace", "removeprefix", "removesuffix"):
                    values = [self.strings(a, scope, depth) for a in args]
                    if all(len(v) == 1 and _UNKNOWN not in v[0] for v in values) and values:
                        result.add("'" + getattr(text, name)(*(v[0] for v in values)))
                    else:
                        result.add("'" + _UNKNOWN)
                elif name in ("encode", "decode", "swapcase", "title", "capitalize"):
                    result.add("'" + _UNKNOWN)
            elif kind == "%":
                if name == "joinpath":
                    parts = [self.strings(a, scope, depth) or [_UNKNOWN] for a in args]
                    result |= {"%" + s for s in _join([text], *parts, sep="/")}
                elif name in ("resolve", "absolute", "expanduser"):
                    result.add(owner)
                elif name in ("with_suffix", "with_name") and args:
                    for new in self.strings(args[0], scope, depth) or [_UNKNOWN]:
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
            elif name in ("__getattribute__", "__getattr__") and args and _dotted(owner):
                for attr in self.strings(args[0], scope, depth) or [_UNKNOWN]:
                    result.add(f"{owner}.{attr}")
            elif owner.endswith(".__dict__") and _dotted(owner):
                base = owner.removesuffix(".__dict__")
                if name in ("get", "pop", "setdefault") and args:
                    keys = self.strings(args[0], scope, depth) or [_UNKNOWN]
                    result |= {f"{base}.{key}" for key in keys}
                elif name in ("values", "items"):
                    result.add(f"[]{base}.{_UNKNOWN}")
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
            if _UNKNOWN in name:
                result.add("?")
                continue
            name = name.split(":")[0]
            fromlist = len(node.args) > 3 or any(k.arg == "fromlist" for k in node.keywords)
            if callee.endswith("__import__") and not fromlist:
                name = name.split(".")[0]
            result.add(name)
        return result


class _Collector(ast.NodeVisitor):
    """Первый проход: привязки имён, области видимости, вызовы и возвраты."""

    def __init__(self, notebook: _Notebook) -> None:
        self.nb = notebook
        self.scope = notebook.module

    def _inside(self, node: ast.AST) -> None:
        _visit_scope(self, node)

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
        for tree, _ in _embedded(node):
            self.visit(tree)
        # Привязки внутри кода из строки (``exec("import feedback as f")``) — тоже привязки.
        for argument in _code_strings(node, _spelled_callees(node)):
            if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
                tree = _as_code(argument.value)
                if tree is not None:
                    self.visit(tree)
        self.generic_visit(node)


# --------------------------------------------------------------------------- находки


class _Reporter(ast.NodeVisitor):
    """Второй проход по ячейке учащегося: сверяет каждое обращение с таблицами."""

    def __init__(self, notebook: _Notebook, allowed: set[str], named: set[str]) -> None:
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
        _visit_scope(self, node)

    def _check_value(self, node: ast.AST) -> None:
        for value in self.value(node):
            # Результат вызова (``frame = sys._getframe()``) — находка там, где вызов, а
            # не на каждой строке, где им пользуются.
            derived = "()" in value or "[]" in value
            reason = None if derived else _danger(value)
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
        spelled = _spelled(node)
        path = f"{owner}.{attr}"
        root = _spelled_root(node)
        if root is not None and root not in self.modules and not spelled.startswith(COURSE):
            spelled = f"{spelled} (это {path})"
        if isinstance(ctx, ast.Store | ast.Del):
            self.flag(node, f"меняет модуль курса: {spelled}")
        elif attr in INTERNALS:
            self.flag(node, f"достаёт внутренности проверки курса (эталон, случаи): {spelled}")
        elif attr == "__dict__":
            self.flag(node, f"перебирает содержимое модуля курса: {spelled}")
        elif path not in self.allowed and path not in self.named:
            local = _spelled(node)
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
            reason = _danger(module)
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
        if bases & _VALUE_TYPES:
            methods = {
                item.name
                for item in node.body
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            }
            spoofed = sorted(methods & _SPOOFED)
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
        if isinstance(node.value, str) and _OBSERVATION in node.value:
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
            if _is_course(owner) and owner.endswith(".__dict__"):
                continue  # vars(flops).items(): находка уже у vars(flops)
            if _is_course(owner):
                self._course(node, owner, attr, node.ctx)
            elif owner == "?":
                self.flag(node, f"пользуется модулем, имя которого вычисляется: {_spelled(node)}")
            elif not _dotted(owner):
                continue
            elif attr == "__dict__" and _sensitive(owner):
                self.flag(node, f"перебирает содержимое модуля {_clean(owner)} (__dict__)")
            elif store and _root(owner) in PATCHED and not owner.endswith(("()", "[]")):
                self.flag(node, f"меняет модуль {_root(owner)}: {_spelled(node)}")
        self._check_value(node)
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        keys = self.strings(node.slice) or [_UNKNOWN]
        for owner in self.value(node.value):
            if owner == "sys.modules":
                verb = "подменяет" if isinstance(node.ctx, ast.Store | ast.Del) else "берёт"
                for key in keys:
                    if _is_course(key):
                        self.flag(node, f"{verb} модуль курса «{key}» в sys.modules")
            elif owner.endswith(".__dict__") and _is_course(owner):
                base = owner.removesuffix(".__dict__")
                for key in keys:
                    self._course(node, base, key, node.ctx)
        self._check_value(node)
        self.generic_visit(node)

    # ----------------------------------------------------------------- вызовы

    def visit_Call(self, node: ast.Call) -> None:
        magic = _magic(node)
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
        literal = name is not None or _text(name_node) is not None
        names = [name] if name is not None else self.strings(name_node)
        names = [n for n in names if _UNKNOWN not in n]
        for owner in owners:
            if _is_course(owner):
                self.flag(node, f"обращается к модулю курса через {how}: {_spelled(node)}")
                for attr in names:
                    self._course(node, owner, attr, ast.Load())
            if not literal and _sensitive(owner):
                where = "модуля курса" if _is_course(owner) else f"модуля {_clean(_root(owner))}"
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
            if _is_course(owner):
                self.flag(node, f"перебирает содержимое модуля курса: {_spelled(node)}")
            elif _sensitive(owner):
                self.flag(node, f"перебирает содержимое модуля {_clean(_root(owner))} ({how})")

    def _dynamic_import(self, node: ast.Call, how: str) -> None:
        if how == "importlib.reload":
            return  # importlib уже находка, а модуль — аргумент
        first = node.args[0] if node.args else None
        names = self.strings(first)
        for name in names:
            if _is_course(name.split(":")[0]):
                self.flag(node, f"импортирует модуль курса «{name}» в обход import ({how})")
        if _text(first) is None:
            self.flag(node, f"импортирует модуль по вычисляемому имени ({how})")

    def _open(self, node: ast.Call, callee: str) -> None:
        args = list(node.args)
        keywords = {k.arg: k.value for k in node.keywords if k.arg}
        target = args[0] if args else keywords.get("file")
        mode = args[1] if len(args) > 1 else keywords.get("mode")
        if mode is None:
            return  # по умолчанию — на чтение
        modes = self.strings(mode)
        if modes and all(_UNKNOWN not in m and not set(m) & set("wax+") for m in modes):
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
                    if modes and all(_UNKNOWN not in m and not set(m) & set("wax+") for m in modes):
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
            if _CODE_FILE.search(target):
                shown = target if len(target) <= 80 else target[:77] + "…"
                self.flag(
                    node,
                    f"пишет файл «{shown}»: файлы .py и папка feedback рядом с тетрадкой "
                    "подменяют модули курса",
                )

    def _code_in_strings(self, node: ast.Call, callees: Iterable[str]) -> None:
        """Строки, которые вызов выполнит как код, разбираются как код этой же строки ячейки."""
        for argument in _code_strings(node, callees):
            texts = (
                [argument.value]
                if isinstance(argument, ast.Constant) and isinstance(argument.value, str)
                else self.strings(argument)
            )
            for text in texts:
                tree = _as_code(text)
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
            command = _text(args[0]) if args else None
            if command is None:
                return
            if COURSE in command.lower() or (".py" in command and _SHELL_WRITE.search(command)):
                self.flag(node, f"команда оболочки трогает пакет курса или файлы .py: {command}")
            elif _SHELL_PYTHON.search(command):
                self.flag(node, f"выполняет код Python в отдельном процессе: {command}")
            return
        if name in MAGICS:
            self.flag(node, MAGICS[name])
        elif name == "?":
            self.flag(node, "вызывает магию IPython по вычисляемому имени")
        elif name in ("writefile", "file") and args:
            line = (_text(args[0]) or "").split()
            self._report_paths(node, [word for word in line if not word.startswith("-")] or [""])
        elif kind == "run_cell_magic" and name in SCRIPT_MAGICS:
            self.flag(node, f"выполняет код вне ядра (%%{name})")
        for tree, offset in _embedded(node):
            outer = self.offset
            self.offset = offset
            try:
                self.visit(tree)
            finally:
                self.offset = outer


def _spelled_callees(node: ast.Call) -> set[str]:
    """Кого вызывает ``node``, как это написано (для первого прохода, до разбора привязок)."""
    if isinstance(node.func, ast.Name) and node.func.id in ("exec", "eval", "compile"):
        return {f"builtins.{node.func.id}"}
    return {_spelled(node.func)}


def _visit_scope(visitor: _Collector | _Reporter, node: ast.AST) -> None:
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


def _false(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and not node.value


def _is_display(callee: str) -> bool:
    """Функции вывода IPython: ``display`` и ``publish_display_data`` откуда угодно."""
    name = callee.rsplit(".", 1)[-1]
    return callee.startswith(("IPython.", "ipykernel.")) and name in (
        "display",
        "publish_display_data",
    )


def _spelled_root(node: ast.AST) -> str | None:
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _spelled(node: ast.AST) -> str:
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


def _scan(
    cells: list[tuple[str, str]], modules: set[str], allowed: set[str], setup: list[str]
) -> list[Finding]:
    notebook = _Notebook(modules)
    findings: list[Finding] = []
    for source in setup:
        tree = _parse(source)
        if tree is not None:
            try:
                notebook.add(tree)
            except RecursionError:
                continue
    learner: list[tuple[str, str, ast.Module]] = []
    total = 0
    for label, source in cells:
        size = _code_size(source) if len(source) > MAX_CELL_CHARS else len(source)
        if size > MAX_CELL_CHARS or total + size > MAX_LEARNER_CHARS:
            reason = f"ячейка длиной {len(source)} символов: сканер её не разбирает — посмотрите"
            findings.append(Finding(label, 1, "", reason))
            continue
        total += size
        tree = _parse(source)
        if tree is None:
            continue
        try:
            notebook.add(tree)
        except RecursionError:
            findings.append(Finding(label, 1, "", "код вложен слишком глубоко для сканера"))
            continue
        learner.append((label, source, tree))
    if any(DOCTEST in source for _, source, _ in learner):
        # doctest выполнит примеры ``>>> …`` из docstring: они — тоже код учащегося.
        for label, _, tree in list(learner):
            for example, line in _doctest_examples(tree):
                source = "\n" * (line - 1) + ast.unparse(example)
                parsed = _parse(source)
                if parsed is not None:
                    notebook.add(parsed)
                    learner.append((label, source, parsed))
    notebook.solve()
    if notebook.exhausted and learner:
        label = max(learner, key=lambda item: len(item[1]))[0]
        reason = "код слишком запутан для полного разбора: сканер мог что-то пропустить"
        findings.append(Finding(label, 1, "", reason))

    named = set()  # объекты курса, которые тетрадка сама дала учащемуся под именем
    for name in modules:
        named.update(v for v in notebook.lookup(notebook.module, name) if _is_course(v))
    canonical = set(allowed)
    for helper in allowed:
        owner, _, attr = helper.partition(".")
        for value in notebook.lookup(notebook.module, owner):
            if _is_course(value):
                canonical.add(f"{value}.{attr}")

    for label, source, tree in learner:
        reporter = _Reporter(notebook, canonical, named)
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

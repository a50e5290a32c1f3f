"""Что в коде учащегося — повод посмотреть глазами: таблицы обзора, без анализатора.

Каждая запись — полный путь к модулю, атрибуту или встроенному имени и причина по-русски,
которую преподаватель увидит в ``needs_review.csv``. Полный путь — не то, как обращение
записано: анализ привязок (:mod:`feedback.teacher.review.bindings`) приводит к нему и
``from os import environ``, и ``e = os; e.environ``, и ``getattr(os, "envi" + "ron")``,
поэтому таблицы читаются и меняются, не заглядывая в анализатор. Как сверяются обращения
с модулями самого курса (:data:`COURSE`), решает отчёт
(:mod:`feedback.teacher.review.reporter`): помощники из эталонных решений там разрешены.

Новая запрещённая вещь — одна строка здесь: атрибут модуля по полному пути — в
:data:`MODULE_ATTRIBUTES`, модуль целиком — в :data:`MODULES`, атрибут у чего угодно
(``f_back``) — в :data:`ATTRIBUTES`, встроенное имя — в :data:`NAMES`, магия IPython — в
:data:`MAGICS`. Тест — в ``tests/teacher/review/test_review.py``.
"""

from __future__ import annotations

import re

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
#: Конструкторы путей ``pathlib``: их аргументы складываются в путь, который потом сверяется
#: с :data:`CODE_FILE`.
PATH_TYPES = {
    "pathlib.Path",
    "pathlib.PurePath",
    "pathlib.PosixPath",
    "pathlib.PurePosixPath",
    "pathlib.WindowsPath",
}
#: Файлы, запись которых подменяет код курса: модуль или пакет ``feedback`` рядом с тетрадкой,
#: файлы ``.py``/``.pyc``/``.pth``, ``sitecustomize`` — Python импортирует их вместо настоящих.
CODE_FILE = re.compile(
    r"feedback|__init__|__pycache__|sitecustomize|usercustomize|\.(py|pyc|pyw|pth)$", re.I
)
#: Команды оболочки (``!…``, ``%%bash``), которые пишут файлы: вместе с ``.py`` в строке — находка.
SHELL_WRITE = re.compile(r">|\b(cp|mv|tee|mkdir|ln|touch|rsync|dd|wget|curl|unzip|tar|sed)\b")
#: Команда оболочки, которая выполняет код Python в отдельном процессе.
SHELL_PYTHON = re.compile(r"\bpython[0-9.]*\s+(-c\b|\S+\.py\b)")
#: Тип данных, которым проверка курса выводит наблюдение: строка с ним в коде учащегося —
#: попытка подделать вывод проверки.
OBSERVATION = "vnd.course7"
#: Встроенные типы ответов: их наследник с подменёнными сравнениями или преобразованиями
#: выглядит для проверки одним числом, а на деле — другим.
VALUE_TYPES = {
    f"builtins.{name}"
    for name in ("float", "int", "complex", "str", "bytes", "list", "tuple", "dict", "bool")
}
#: Методы, подмена которых у такого наследника — находка (:data:`VALUE_TYPES`).
SPOOFED = {
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
OUTPUT_ONLY = "IPython.display"


def bare(part: str) -> str:
    """Часть пути без пометок анализа: ``()`` — результат вызова, ``[]`` — элемент."""
    return re.sub(r"(\(\)|\[\])+$", "", part)


def reason(path: str) -> str | None:
    """Почему обращение к ``path`` — находка (``None`` — не находка).

    ``path`` — полный путь через точку (``sys._getframe``, ``os.execv``, ``asyncio()``): части
    могут нести пометки анализа :func:`bare`. Модули курса здесь не находка: их правила — у
    отчёта.
    """
    if path.startswith(OUTPUT_ONLY):
        return None
    parts = [bare(part) for part in path.split(".")]
    root = parts[0]
    if root == COURSE:
        return None
    for end in range(len(parts), 0, -1):
        found = MODULE_ATTRIBUTES.get(".".join(parts[:end]))
        if found:
            return found
    if root == "builtins":
        return MODULES["builtins"] if len(parts) == 1 else None
    if len(parts) > 1:
        name = parts[1]
        if root == "sys" and name.startswith("_") and not name.startswith("__"):
            return f"обращается к внутренностям интерпретатора (sys.{name})"
        if root in ("os", "posix") and name.startswith(("exec", "spawn")):
            return f"запускает другую программу ({root}.{name})"
    return MODULES.get(root)

"""Ядро оценивания под присмотром: запись событий, которые выдают обход проверки.

При оценивании ядро с кодом учащегося запускается не ``ipykernel_launcher``, а этим
модулем (``python -P -m feedback.kernel_guard -f …``). До первой строки учащегося он
ставит перехватчик событий аудита Python (PEP 578, :func:`sys.addaudithook`): снять
его нельзя. Перехватчик

- записывает, что код учащегося читает кадры стека (``sys._getframe``), перебирает
  объекты (``gc``), работает с памятью (``ctypes``), выполняет код из строки
  (``exec``, ``eval``, ``compile``), трогает внутренности функций (``__code__``,
  ``__globals__``, ``tb_frame``), ставит трассировку, запускает процессы и потоки;
- не даёт подложить свой пакет ``feedback`` (записать или прочитать его файлы вне
  настоящего пакета) и поставить свой перехватчик;
- не даёт испортить саму запись.

Запись уходит в файл, которого в песочнице нет: программа оценивания открывает его
на дописывание и передаёт ядру только дескриптор (``COURSE7_RECORD_FD``). Код
учащегося может дописать в него лишнее — это лишь добавит поводов для проверки, — но
не стереть написанное: перемотка, обрезка, снятие ``O_APPEND`` и ``mmap`` этого файла
запрещены. Событие записывается, только если его вызвала ячейка тетрадки напрямую
(событие библиотеки, которую вызвала ячейка, — не повод). Какая это ячейка,
программа оценивания узнаёт по имени файла ячейки (хэш её текста, как у ipykernel).

Запись — помощь преподавателю, а не защита баллов: всё в процессе учащегося он может
подделать. Баллы защищает то, что вердикт выносится вне песочницы (см.
:mod:`feedback.engine.graded`).
"""

from __future__ import annotations

import _thread
import json
import os
import sys

from feedback.settings import RECORD_FD

RECORD_FD_ENV = RECORD_FD.name
#: Системные вызовы записи — свои, взятые до кода учащегося: подмена ``os.write`` или
#: ``os.fstat`` в тетрадке не перехватит запись оценивания.
_write, _fstat = os.write, os.fstat
#: Где лежит настоящий пакет курса: его файлы читать можно, остальные «feedback» — нет.
PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
_STDLIB = os.path.dirname(os.__file__)


def _package_dir(name: str) -> str:
    import importlib.util

    spec = importlib.util.find_spec(name)
    origin = spec.origin if spec and spec.origin else ""
    return os.path.dirname(origin) + os.sep if origin else _STDLIB


#: Код, через который ячейка вызывает событие косвенно: стандартная библиотека, сам
#: пакет курса и IPython (его ``open`` в тетрадке — обёртка над встроенным).
_PASS_THROUGH = (_STDLIB, PACKAGE_DIR, _package_dir("IPython"))

#: События аудита, которые записываются, если их вызвала ячейка напрямую.
DIRECT_EVENTS = {
    "sys._getframe": "читает кадры стека вызовов (sys._getframe)",
    "sys._current_frames": "читает кадры стека всех потоков (sys._current_frames)",
    "gc.get_objects": "перебирает объекты в памяти (gc.get_objects)",
    "gc.get_referrers": "ищет, кто ссылается на объект (gc.get_referrers)",
    "gc.get_referents": "перебирает ссылки объекта (gc.get_referents)",
    "exec": "выполняет код из строки или объекта кода (exec/eval)",
    "compile": "компилирует код из строки (compile)",
    "sys.settrace": "ставит трассировку выполнения (sys.settrace)",
    "sys.setprofile": "ставит профилировщик (sys.setprofile)",
    "function.__new__": "собирает функцию из объекта кода",
    "code.__new__": "собирает объект кода",
}
#: Атрибуты (событие ``object.__getattr__``), чтение которых ячейкой — повод посмотреть.
ATTRIBUTES = {
    "__code__": "читает код функции (__code__)",
    "__globals__": "читает глобальные переменные функции (__globals__)",
    "f_back": "читает кадры стека вызовов (f_back)",
    "f_locals": "читает переменные чужого кадра (f_locals)",
    "f_globals": "читает глобальные переменные кадра (f_globals)",
    "tb_frame": "читает кадры стека из трассировки (tb_frame)",
    "gi_frame": "читает кадр генератора (gi_frame)",
    "cr_frame": "читает кадр сопрограммы (cr_frame)",
}
#: События, которые записываются, если выше них в стеке (не считая стандартной
#: библиотеки) стоит ячейка: пул потоков вызывает поток через concurrent.futures.
INDIRECT_EVENTS = {
    "course7.thread": "запускает фоновый поток",
    "subprocess.Popen": "запускает процесс (subprocess)",
    "os.system": "запускает команду оболочки (os.system)",
    "os.fork": "порождает процесс (os.fork)",
    "os.forkpty": "порождает процесс (os.forkpty)",
    "os.posix_spawn": "запускает процесс (os.posix_spawn)",
    "os.exec": "заменяет процесс ядра (os.exec*)",
    "os.kill": "посылает сигнал процессу (os.kill)",
    "os.killpg": "посылает сигнал группе процессов (os.killpg)",
}
DENIED = "запрещено при оценивании"
#: Первая строка записи: перехватчик стоит. Отметка настоящего зонда.
STARTED = "course7.start"
PROBE = "course7.probe"


class _Record:
    """Дескриптор записи и всё, что нужно, чтобы его не подменили и не обрезали."""

    def __init__(self, fd: int | None) -> None:
        self.fd = fd
        self.inode = None
        if fd is not None:
            try:
                stat = _fstat(fd)
                self.inode = (stat.st_dev, stat.st_ino)
            except OSError:
                self.fd = None

    def is_record(self, fd: object) -> bool:
        if self.inode is None or type(fd) is not int or fd < 0:
            return False
        try:
            stat = _fstat(fd)
        except OSError:
            return False
        return (stat.st_dev, stat.st_ino) == self.inode

    def write(self, entry: dict) -> None:
        if self.fd is None:
            return
        line = (json.dumps(entry, ensure_ascii=False, default=str)[:2000] + "\n").encode()
        try:
            if not self.is_record(self.fd):
                # Дескриптор закрыт или подменён: дальше писать некуда. Программа
                # оценивания заметит это по отметкам зонда, которых не окажется.
                self.fd = None
                return
            _write(self.fd, line)
        except OSError:
            self.fd = None


_record = _Record(None)
_busy: set[int] = set()
_cell_prefix = ""
#: Код, который ячейка выполнила из строки (``exec``, ``eval``, ``timeit``, ``doctest``,
#: ``cProfile.run``…): id объекта кода → (объект кода, ячейка и строка, откуда его выполнили).
#: События такого кода записываются как события этой ячейки.
_from_strings: dict[int, tuple[object, tuple[str, int]]] = {}


def _cell_of(frame) -> tuple[str, int] | None:
    """Ячейка тетрадки (имя её файла и строка), если ``frame`` — код ячейки или код,
    который ячейка выполнила из строки."""
    code = frame.f_code
    filename = code.co_filename
    if _cell_prefix and filename.startswith(_cell_prefix):
        return os.path.basename(filename), frame.f_lineno
    known = _from_strings.get(id(code))
    if known is not None and known[0] is code:
        return known[1]
    return None


def _any_cell_above(frame) -> tuple[str, int] | None:
    """Ближайшая ячейка где угодно выше в стеке (через любые библиотеки)."""
    while frame is not None:
        cell = _cell_of(frame)
        if cell:
            return cell
        frame = frame.f_back
    return None


def _remember_code(code: object, origin: tuple[str, int]) -> None:
    """Запоминает код из строки и все вложенные в него функции и классы."""
    pending = [code]
    while pending and len(_from_strings) < 100_000:
        current = pending.pop()
        if not hasattr(current, "co_consts") or id(current) in _from_strings:
            continue
        _from_strings[id(current)] = (current, origin)
        pending.extend(const for const in current.co_consts if hasattr(const, "co_consts"))


def _code_from_string(event: str, args: tuple) -> None:
    """``exec``/``function.__new__`` кода, который выполняет ячейка (прямо или через библиотеку).

    Импорт модулей тоже выполняет их код через ``exec`` — он не в счёт: события импортируемой
    библиотеки — не поступки учащегося.
    """
    if not args or not hasattr(args[0], "co_consts"):
        return
    caller = sys._getframe(3)
    if caller.f_code.co_filename.startswith("<frozen importlib"):
        return
    origin = _any_cell_above(caller)
    if origin:
        _remember_code(args[0], origin)


def _caller_cell(depth: int, indirect: bool):
    frame = sys._getframe(depth)
    while frame is not None:
        cell = _cell_of(frame)
        if cell or not indirect:
            return cell
        if not frame.f_code.co_filename.startswith(_PASS_THROUGH):
            return None
        frame = frame.f_back
    return None


def _path(value: object) -> str:
    try:
        return os.path.abspath(os.fsdecode(value))
    except (TypeError, ValueError):
        return ""


def _shadow_package(path: str) -> bool:
    """Файл пакета ``feedback`` (или ``.pth``) не там, где лежит настоящий пакет."""
    if path.startswith(PACKAGE_DIR + os.sep) or path == PACKAGE_DIR:
        return False
    named = any(part == "feedback" or part.startswith("feedback.") for part in path.split(os.sep))
    return named or path.endswith(".pth")


def _deny(event: str, reason: str, cell) -> None:
    _note(event, reason, cell)
    raise PermissionError(f"{reason}: {DENIED}")


def _note(event: str, reason: str, cell) -> None:
    entry = {"event": event, "reason": reason}
    if cell:
        entry["file"], entry["line"] = cell
    _record.write(entry)


def _hook(event: str, args: tuple) -> None:
    ident = _thread.get_ident()
    if ident in _busy:
        return
    _busy.add(ident)
    try:
        _check(event, args)
    finally:
        _busy.discard(ident)


def _check(event: str, args: tuple) -> None:
    if event == "open":
        path = _path(args[0]) if args and not isinstance(args[0], int) else ""
        if path and _shadow_package(path):
            _deny(event, f"подкладывает свой пакет курса ({path})", _caller_cell(3, True))
        return
    if event == "sys.addaudithook":
        # RuntimeError — так перехватчик отказывает в новом перехватчике (PEP 578).
        _note(event, "ставит свой перехватчик событий", _caller_cell(3, True))
        raise RuntimeError(f"sys.addaudithook {DENIED}")
    if event in ("os.truncate", "mmap.__new__") and args and _record.is_record(args[0]):
        _deny(event, "пытается стереть запись оценивания", _caller_cell(3, True))
    if event == "fcntl.fcntl" and args and _record.is_record(args[0]):
        _deny(event, "пытается изменить запись оценивания", _caller_cell(3, True))
    if event in ("exec", "function.__new__"):
        _code_from_string(event, args)
    if event in DIRECT_EVENTS:
        cell = _caller_cell(3, False)
        if cell:
            _note(event, DIRECT_EVENTS[event], cell)
    elif event == "object.__getattr__" and len(args) > 1 and args[1] in ATTRIBUTES:
        cell = _caller_cell(3, False)
        if cell:
            _note(event, ATTRIBUTES[args[1]], cell)
    elif event.startswith("ctypes."):
        cell = _caller_cell(3, True)
        if cell:
            _note(event, f"работает с памятью интерпретатора напрямую ({event})", cell)
    elif event in INDIRECT_EVENTS:
        cell = _caller_cell(3, True)
        if cell:
            _note(event, INDIRECT_EVENTS[event], cell)


def _watch_threads() -> None:
    """Запуск потока — тоже событие записи (в Python 3.11 у него нет события аудита)."""
    import threading

    start = _thread.start_new_thread

    def start_new_thread(function, args, kwargs=None):
        sys.audit("course7.thread")
        return start(function, args, *(() if kwargs is None else (kwargs,)))

    _thread.start_new_thread = start_new_thread
    threading._start_new_thread = start_new_thread  # type: ignore[attr-defined]


#: Единственный код, чья отметка зонда в счёт: ``emit`` настоящего пакета (только для чтения).
_PROBE_FILE = os.path.join(PACKAGE_DIR, "engine", "probe.py")
#: Событие записи: отметку зонда пытался поставить не зонд.
FORGED_MARK = "course7.forged_mark"


def probe_ran(grade_id: str, token: str, digest: str = "") -> None:
    """Отметка настоящего зонда: наблюдение ``grade_id`` снято (:mod:`feedback.engine.probe`).

    ``digest`` — отпечаток наблюдения: программа оценивания сверяет с ним наблюдение из вывода
    ячейки, поэтому подмена вывода (``display``, публикатор, сессия IPython) видна. Отметку
    ставит только ``emit`` из файла пакета; вызов из другого кода — не отметка, а событие
    записи с ячейкой, откуда он пришёл.
    """
    caller = sys._getframe(1).f_code
    if caller.co_filename != _PROBE_FILE or caller.co_name != "emit":
        _note(FORGED_MARK, "ставит отметку зонда в обход зонда", _any_cell_above(sys._getframe(1)))
        return
    _record.write({"event": PROBE, "grade_id": grade_id, "token": token, "digest": digest})


def install(record_fd: int | None) -> None:
    """Ставит перехватчик и открывает запись; вызывается до кода учащегося."""
    global _record, _cell_prefix
    _record = _Record(record_fd)
    import tempfile

    _cell_prefix = os.path.join(tempfile.gettempdir(), "ipykernel_") + str(os.getpid()) + os.sep
    _watch_threads()
    sys.addaudithook(_hook)
    _record.write({"event": STARTED})


def main() -> None:
    os.umask(0o077)
    raw = os.environ.pop(RECORD_FD_ENV, "")
    # Модуль выполняется как __main__, а IPython подменит __main__ своим: зонд найдёт
    # эту же копию (с открытой записью) под обычным именем.
    sys.modules["feedback.kernel_guard"] = sys.modules[__name__]
    install(int(raw) if raw.isdigit() else None)
    from ipykernel import kernelapp

    kernelapp.launch_new_instance()


if __name__ == "__main__":
    main()

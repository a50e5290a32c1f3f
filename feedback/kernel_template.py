"""Прогретая заготовка ядер оценивания: тяжёлые библиотеки импортируются один раз за запуск.

Ядро GPU-лабораторной тратит на ``import keras, keras_hub`` (с TensorFlow) больше десяти
секунд процессора, а сами проверяемые ячейки — доли секунды; ядро CPU-лабораторной — полсекунды
на IPython и pandas. Поэтому ``make grade`` запускает на время оценивания по заготовке на вид
лабораторных (:data:`PROFILES`): процесс, который импортирует эти библиотеки *до того, как
появился код хоть одного учащегося*, и дальше только порождает копии себя.

Изоляцию каждой работы по-прежнему строит bubblewrap: для работы запускается её собственная
песочница (:mod:`feedback.teacher.unit.warm`), а копия заготовки входит в её пространства имён
(пользователи, файлы, процессы, сеть, IPC, имя машины, cgroup — ``setns``), теряет все
возможности (capabilities) и только после этого становится ядром Jupyter. Поэтому копия видит
ровно то же, что видело бы ядро, запущенное в этой песочнице заново: свою папку работы, систему
и Python только для чтения, свой ``/proc``, никакой сети; создавать пространства имён ей нельзя
(``--disable-userns`` песочницы). Общего с заготовкой и с другими работами у неё только память,
скопированная при ``fork`` (своя у каждого процесса), — ни файлов, ни дескрипторов, ни процессов:
заготовки в пространстве процессов песочницы нет.

Сама заготовка работает вне песочниц с правами преподавателя, поэтому она никогда не выполняет
код учащихся, не держит ничего, что помогло бы списать: эталонов (``feedback.answers``) и
программы оценивания (``feedback.teacher``) она не импортирует (их импорт в ней запрещён), её
окружение — окружение ядра, без переменных преподавателя, а в запросе на ядро — только пути
папки работы и окружение ядра. Если войти в песочницу нельзя (другая система, запрет
AppArmor), копия сообщает причину, и ядро запускается как раньше — заново в песочнице.

Протокол (сокет Unix в папке, доступной только преподавателю): запрос — одна строка JSON
(:class:`Request`) и дескрипторы пространств имён песочницы, записи ядра и канала ответа;
ответ приходит от копии по каналу ответа: ``{"kernel": pid}`` или ``{"error": "…"}``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import fcntl
import importlib
import json
import os
import resource
import signal
import socket
import sys
from dataclasses import dataclass, field
from typing import Any

#: Что импортирует заготовка: всё тяжёлое, что импортируют ячейки курса лабораторных.
COMMON = (
    "numpy",
    "pandas",
    "matplotlib",
    "matplotlib.pyplot",
    "IPython",
    "IPython.display",
    "ipykernel.kernelapp",
    "ipykernel.ipkernel",
    # Что ядро импортирует, когда запускается (отладчик debugpy, история на sqlite3, psutil,
    # pdb): без этого каждое ядро из заготовки тратило на эти импорты ~0,1 с.
    "ipykernel.debugger",
    "sqlite3",
    "psutil",
    "pdb",
    "tornado.queues",
    "tornado.locks",
    "IPython.extensions",
    "ipywidgets",
    "feedback.kernel_guard",
    "feedback.engine.probe",
    "feedback.flops",
    "feedback.explore",
    "feedback.memory",
    "feedback.plots",
    "feedback.formatting",
)
PROFILES: dict[str, tuple[str, ...]] = {
    "cpu": COMMON,
    "gpu": (
        *COMMON,
        "jax",
        "jax.numpy",
        "keras",
        "tensorflow",
        "keras_hub",
        "sentencepiece",
        "feedback.quiet",
        "feedback.runtime",
        "feedback.qa_data",
        "feedback.wall",
        "feedback.precision",
        "feedback.accumulation",
        "feedback.monitor",
        "feedback.generation",
    ),
}
#: Части пакета, которых в песочнице нет: заготовка их не импортирует ни при каких условиях.
FORBIDDEN = ("feedback.answers", "feedback.teacher")

#: Порядок дескрипторов в запросе (SCM_RIGHTS): пространства имён песочницы, затем запись ядра
#: и канал ответа. ``owner`` — пространство пользователей, которому принадлежат остальные,
#: ``user`` — то, в котором живёт процесс песочницы (bwrap создаёт их два, чтобы запретить
#: новые; они совпадают, если bwrap запущен от root).
NAMESPACES = ("owner", "mnt", "pid", "net", "ipc", "uts", "cgroup", "user")
FDS = (*NAMESPACES, "record", "status")
_CLONE = {
    "owner": 0x10000000,
    "user": 0x10000000,
    "mnt": 0x00020000,
    "pid": 0x20000000,
    "net": 0x40000000,
    "ipc": 0x08000000,
    "uts": 0x04000000,
    "cgroup": 0x02000000,
}
#: ioctl пространств имён (linux/nsfs.h): владелец-пространство пользователей.
NS_GET_USERNS = 0xB701
_PR_SET_PDEATHSIG = 1
_PR_CAPBSET_DROP = 24
_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_CHILD_SUBREAPER = 36
_CAP_VERSION_3 = 0x20080522
MAX_REQUEST = 1 << 20


@dataclass
class Request:
    """Что нужно копии, чтобы стать ядром одной работы (всё, кроме дескрипторов)."""

    home: str  # папка работы: рабочая папка ядра
    connection_file: str  # файл подключения Jupyter (в папке сокетов работы)
    env: dict[str, str]  # окружение ядра целиком (feedback.teacher.unit.sandbox.kernel_env)
    rlimits: dict[str, int] = field(default_factory=dict)  # RLIMIT_* → предел
    cpus: list[int] = field(default_factory=list)

    def to_json(self) -> bytes:
        return json.dumps(self.__dict__).encode() + b"\n"

    @classmethod
    def from_json(cls, data: bytes) -> Request:
        return cls(**json.loads(data))


# --------------------------------------------------------------------------- заготовка


class _Forbidden:
    """Искатель модулей, который не даёт заготовке импортировать эталоны и оценивание."""

    @staticmethod
    def find_spec(name: str, path: Any = None, target: Any = None) -> None:
        if any(name == part or name.startswith(part + ".") for part in FORBIDDEN):
            raise ImportError(f"{name}: в заготовке ядра не импортируется")
        return None


def preload(profile: str) -> list[str]:
    """Импортирует библиотеки вида лабораторных; возвращает то, что не импортировалось."""
    sys.meta_path.insert(0, _Forbidden())
    failed = []
    for name in PROFILES[profile]:
        try:
            importlib.import_module(name)
        except Exception as error:  # заготовка без модуля — лишь медленнее, не хуже
            failed.append(f"{name}: {type(error).__name__}")
    leaked = [name for name in sys.modules if name.startswith(FORBIDDEN)]
    if leaked:
        raise RuntimeError(f"в заготовке оказались модули оценивания: {', '.join(leaked)}")
    return failed


def serve(profile: str, path: str) -> None:
    """Слушает сокет ``path`` и на каждый запрос порождает ядро (в этом процессе кода нет)."""
    libc = _libc()
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # уйдёт вместе с оцениванием
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)  # ядра, чьи родители вышли, — к нам
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # завершённые копии убираются сами
    # Сокет слушает сразу: запрос, пришедший во время импорта, подождёт в очереди.
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    preload(profile)
    while True:
        connection, _ = listener.accept()
        try:
            _handle(connection, listener)
        except Exception:  # испорченный запрос не останавливает заготовку
            pass
        finally:
            connection.close()


def _handle(connection: socket.socket, listener: socket.socket) -> None:
    fds: list[int] = []
    try:
        message, fds, _, _ = socket.recv_fds(connection, MAX_REQUEST, len(FDS))
        if len(fds) != len(FDS):
            return
        pid = os.fork()
        if pid == 0:
            listener.close()
            connection.close()
            _become_kernel(message, dict(zip(FDS, fds, strict=True)))
    finally:
        for fd in fds:
            os.close(fd)


# --------------------------------------------------------------------------- копия


def _become_kernel(message: bytes, fds: dict[str, int]) -> None:
    """Первая копия: входит в песочницу и порождает ядро (вторую копию) уже внутри неё."""
    status = fds["status"]
    try:
        # Как у нового процесса: иначе завершённые дети ядра убирались бы сами, и subprocess
        # учащегося видел бы у любой команды код выхода 0.
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        request = Request.from_json(message.strip())
        enter_sandbox(fds)
        kernel = os.fork()  # только дети входят в пространство процессов песочницы
        if kernel == 0:
            os.close(status)
            _run_kernel(request, fds["record"])
        os.write(status, json.dumps({"kernel": kernel}).encode())
        os._exit(0)  # ядро достанется заготовке (subreaper), а живёт оно, пока жива песочница
    except BaseException as error:
        try:
            os.write(status, json.dumps({"error": f"{type(error).__name__}: {error}"}).encode())
        finally:
            os._exit(1)


def enter_sandbox(fds: dict[str, int]) -> None:
    """Входит в пространства имён песочницы bubblewrap по их дескрипторам.

    Порядок задан ядром Linux: сначала пространство пользователей, которому принадлежат
    остальные (в нём у нас, как у создателя песочницы, есть права), затем файлы, процессы и
    прочие, и последним — пространство пользователей самого процесса песочницы, вложенное (в
    нём новые пространства создавать нельзя).
    """
    libc = _libc()
    _setns(libc, fds["owner"], "owner")
    for kind in ("mnt", "pid", "net", "ipc", "uts", "cgroup"):
        _setns(libc, fds[kind], kind)
    if os.fstat(fds["user"]).st_ino != os.fstat(fds["owner"]).st_ino:
        _setns(libc, fds["user"], "user")


def _run_kernel(request: Request, record: int) -> None:
    """Вторая копия, уже в песочнице: без прав, с окружением работы — и ядро Jupyter."""
    try:
        os.setsid()
        os.chdir(request.home)
        for name, value in request.rlimits.items():
            limit = getattr(resource, name)
            resource.setrlimit(limit, (value, value))
        if request.cpus:
            os.sched_setaffinity(0, request.cpus)
        drop_privileges()
        os.umask(0o077)
        _only_fds(record)
        os.environ.clear()
        os.environ.update(request.env)
        _fresh_state(request.env)
        from ipykernel import kernelapp

        from feedback import kernel_guard

        sys.argv = [kernel_guard.__file__, "-f", request.connection_file]
        kernel_guard.install(record)
        kernelapp.launch_new_instance(argv=["-f", request.connection_file])
    finally:
        os._exit(0)


def drop_privileges() -> None:
    """Ни одной возможности (capability) и запрет их получить: как ``--cap-drop ALL`` у bwrap."""
    libc = _libc()
    cap = 0
    while libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1

    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]

    class Data(ctypes.Structure):
        _fields_ = [
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        ]

    if libc.capset(ctypes.byref(Header(_CAP_VERSION_3, 0)), (Data * 2)()) != 0:
        raise OSError(ctypes.get_errno(), "capset")
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")


def _only_fds(keep: int) -> None:
    """Стандартные потоки — в /dev/null, из остальных дескрипторов остаётся только запись."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)
    os.closerange(3, keep)
    os.closerange(keep + 1, 1 << 16)


def _fresh_state(env: dict[str, str]) -> None:
    """То, что процесс с нуля получил бы иначе, чем копия: зёрна случайных чисел, кэш JAX."""
    import random

    random.seed()
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        numpy.random.seed()
    jax = sys.modules.get("jax")
    if jax is not None and env.get("JAX_COMPILATION_CACHE_DIR"):
        jax.config.update("jax_compilation_cache_dir", env["JAX_COMPILATION_CACHE_DIR"])
    for name in [name for name, module in sys.modules.items() if module is None]:
        if name.startswith(FORBIDDEN):
            del sys.modules[name]
    sys.meta_path[:] = [finder for finder in sys.meta_path if not isinstance(finder, _Forbidden)]


# --------------------------------------------------------------------------- libc


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _setns(libc: ctypes.CDLL, fd: int, kind: str) -> None:
    if libc.setns(fd, _CLONE[kind]) != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"setns({kind}): {os.strerror(error)}")


def owner_namespace(fd: int) -> int:
    """Дескриптор пространства пользователей, которому принадлежит пространство ``fd``."""
    return fcntl.ioctl(fd, NS_GET_USERNS)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in PROFILES:
        print(f"использование: python -P -m feedback.kernel_template {'|'.join(PROFILES)} СОКЕТ")
        return 2
    serve(args[0], args[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())

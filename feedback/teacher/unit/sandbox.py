"""Песочница для ядра с кодом учащегося: bubblewrap, лимиты и сторож.

Код учащегося выполняется в ядре Jupyter, запущенном через ``bwrap`` (пакет Debian
``bubblewrap``): система и Python — только для чтения, своё пространство процессов
(ничто не переживёт ядро), нет сети, чистое окружение без переменных преподавателя,
а из файлов преподавателя видны только сам пакет курса и своя папка работы. Ни
базы оценок, ни чужих работ, ни solutions/.

С ядром программа оценивания говорит через сокеты ZeroMQ в своей короткой папке в /tmp
(транспорт ``ipc``): ей не нужна общая сеть. Прерывание по тайм-ауту идёт сообщением,
а не сигналом, — сигнал получил бы сам bwrap.

Бюджеты держит ядро Linux. Всё, куда работа может писать, — файловые системы в памяти
(tmpfs) с пределом размера: папка работы (её начальное содержимое копируется внутрь при
запуске, а наружу из неё ничего не нужно), /tmp и /dev/shm; корень песочницы и /dev — только
для чтения. Память всех процессов работы вместе с этими tmpfs, буферами ``memfd_create`` и
разделяемой памятью ограничивает контрольная группа (:mod:`feedback.teacher.unit.cgroup`), если
система её даёт; иначе — ``prlimit`` (util-linux): предел адресного пространства и размера
файла. :class:`Watchdog` раз в долю секунды и после каждой ячейки смотрит на память всех
процессов ядра, их число, занятое место (и в удалённых, но ещё открытых файлах) и число
файлов, и при превышении убивает песочницу: так у работы появляется причина остановки. Без
bubblewrap (macOS, Windows или явно ``COURSE7_SANDBOX=none``) ядро запускается как
обычный процесс с теми же бюджетами, а :func:`sandbox_warning` говорит об этом
преподавателю по-русски.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import site
import stat
import subprocess
import sys
import tempfile
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jupyter_client import AsyncKernelManager
from jupyter_client.kernelspec import KernelSpec
from jupyter_client.provisioning import LocalProvisioner

from feedback.kernel_template import Request
from feedback.settings import (
    GIB,
    JAX_ON_CPU,
    KERAS_ON_JAX,
    MIB,
    QUIET_TENSORFLOW,
    RECORD_FD,
    SANDBOX,
)
from feedback.settings import parse_size as parse_size  # для тех, кто импортирует её отсюда
from feedback.teacher.core.settings import Limits
from feedback.teacher.unit.caches import JAX_COMPILATION_CACHE_ENV
from feedback.teacher.unit.cgroup import MemoryCage
from feedback.teacher.unit.warm import NotStarted, start_kernel

SANDBOX_ENV = SANDBOX.name
#: Файл записи событий ядра в папке работы и сколько из него читать.
RECORD_FILE = "kernel-record.jsonl"
RECORD_BYTES = 1024**2

#: Части /etc, без которых не работают Python и библиотеки; остальное не видно.
ETC_FILES = (
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "localtime",
    "alternatives",
    "fonts",
    "passwd",
    "group",
    "nsswitch.conf",
    "hosts",
    "mime.types",
)
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt/conda")
#: Где в песочнице видно начальное содержимое папки работы (только чтение), пока его копируют.
SEED = "/run/course7-seed"
#: Запас tmpfs сверх бюджета диска: заполнив его, работа *превысила* бюджет, и сторож это видит
#: (в tmpfs ровно по бюджету запись упёрлась бы в предел, не превысив его).
TMPFS_SLACK = MIB


class SandboxUnavailable(RuntimeError):
    """Песочницу нельзя запустить, а без неё оценивать не велено (ошибка настройки)."""


# --------------------------------------------------------------------------- выбор режима


def sandbox_mode(
    env: dict[str, str] | None = None, platform: str = sys.platform, wanted: str | None = None
) -> str:
    """``"bwrap"`` или ``"none"``; на Linux без bubblewrap — :class:`SandboxUnavailable`.

    ``COURSE7_SANDBOX=none`` явно разрешает оценивать без песочницы (например, свои
    собственные тетрадки); ``bwrap`` требует её и на других системах. ``wanted`` — то же
    значение из настроек оценивания (:attr:`feedback.teacher.core.settings.Settings.sandbox`).
    """
    wanted = (wanted if wanted is not None else SANDBOX.read(env)).strip().lower() or "auto"
    if wanted in ("none", "off", "0", "no"):
        return "none"
    if wanted == "auto" and not platform.startswith("linux"):
        return "none"
    if shutil.which("bwrap") is None:
        raise SandboxUnavailable(
            "Не найден bubblewrap (bwrap): без него код учащихся выполнялся бы с правами "
            "преподавателя. Поставьте его: sudo apt-get install bubblewrap (Debian, "
            "Ubuntu) или sudo dnf install bubblewrap (Fedora). Оценить без песочницы — "
            f"только для своих тетрадок — можно с {SANDBOX_ENV}=none."
        )
    problem = _bwrap_problem()
    if problem:
        raise SandboxUnavailable(
            "bubblewrap установлен, но не может создать песочницу: "
            f"{problem}. Обычно это значит, что в системе запрещены "
            "непривилегированные пространства имён пользователей (sysctl "
            "kernel.unprivileged_userns_clone=1 или профиль AppArmor для bwrap в "
            "Ubuntu 24.04)."
        )
    return "bwrap"


def _bwrap_problem() -> str | None:
    command = ["bwrap", *_namespaces(), *_system_binds(), "--", "/bin/true"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as error:
        return str(error)
    return None if result.returncode == 0 else (result.stderr.strip() or "неизвестная ошибка")


def sandbox_warning(mode: str) -> str | None:
    """Русское предупреждение для преподавателя, если песочницы нет."""
    if mode == "bwrap":
        return None
    return (
        "ВНИМАНИЕ: работы оцениваются без песочницы. Код учащихся выполняется с вашими "
        "правами и видит ваши файлы; бюджеты времени и памяти действуют, но изоляции нет. "
        "На Linux поставьте bubblewrap (sudo apt-get install bubblewrap)."
    )


# --------------------------------------------------------------------------- команда


def _namespaces() -> list[str]:
    args = ["--unshare-all", "--unshare-user", "--disable-userns"]
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    return args


def _system_binds() -> list[str]:
    args: list[str] = []
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    for name in ETC_FILES:
        path = f"/etc/{name}"
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    return args


def python_paths() -> list[str]:
    """Что нужно ядру из Python: установка, окружение и сам пакет курса (только чтение)."""
    import feedback

    paths = {sys.base_prefix, sys.prefix, sys.exec_prefix}
    paths.add(str(Path(feedback.__file__).resolve().parent))
    user_site = site.getusersitepackages()
    if user_site in sys.path and os.path.isdir(user_site):
        paths.add(user_site)
    # Интерпретатор окружения может быть ссылкой наружу (pyenv, conda): открываем и её цель.
    paths.add(str(Path(sys.executable).resolve().parent.parent))
    return sorted(path for path in paths if os.path.isdir(path))


def hidden_paths() -> list[str]:
    """Папки пакета курса, которых в песочнице нет: эталоны ответов и программа оценивания.

    Пакет виден ядру целиком (его импортирует тетрадка), но верные формулы
    (:mod:`feedback.answers`) нужны только вердикту, а он выносится вне песочницы.
    Вместо этих папок ядро видит пустые, только для чтения: ни исходников, ни ``.pyc``.
    """
    import feedback

    package = Path(feedback.__file__).resolve().parent
    return [str(package / name) for name in ("answers", "teacher") if (package / name).is_dir()]


def _covered(path: str, others: list[str]) -> bool:
    return any(path != other and path.startswith(other.rstrip("/") + "/") for other in others)


def bwrap_command(
    home: Path,
    ipc: Path,
    readonly: list[str],
    env: dict[str, str],
    limits: Limits,
    writable: list[str] = (),
    seed: bool = False,
) -> list[str]:
    """Команда запуска под bwrap (без самой команды ядра).

    Порядок важен: bwrap монтирует по очереди, и позднее монтирование закрывает раннее.
    Поэтому сначала пустые /tmp и /dev, а уже поверх них — папки, которые ядро должно
    видеть (окружение или кэш могут лежать и в /tmp). Папка работы — tmpfs с пределом
    бюджета диска, как /tmp и /dev/shm; ``seed`` — её начальное содержимое с диска видно по
    пути :data:`SEED` (его копирует внутрь :func:`seed_command`). Последними корень и /dev
    становятся только для чтения: запись туда легла бы в память без предела.
    """
    size = str(limits.disk_bytes + TMPFS_SLACK)
    args = ["bwrap", *_namespaces(), "--proc", "/proc", "--dev", "/dev"]
    args += ["--size", size, "--tmpfs", "/tmp"]
    args += ["--size", size, "--tmpfs", "/dev/shm"]
    args += _system_binds()
    readonly = sorted(set(readonly))
    for path in readonly:
        if not _covered(path, readonly):
            args += ["--ro-bind", path, path]
    for path in hidden_paths():
        args += ["--tmpfs", path, "--remount-ro", path]
    args += ["--size", size, "--tmpfs", str(home), "--bind", str(ipc), str(ipc)]
    if seed:
        args += ["--ro-bind", str(home), SEED]
    for path in writable:
        args += ["--bind", path, path]
    args += ["--remount-ro", "/dev", "--remount-ro", "/"]
    args += ["--chdir", str(home), "--clearenv"]
    for name, value in sorted(env.items()):
        args += ["--setenv", name, value]
    return [*args, "--"]


def needs_seed(home: Path) -> bool:
    """Есть ли в папке работы на диске что-то, что ядро должно застать (кэш компиляции JAX)."""
    try:
        return any(home.iterdir())
    except OSError:
        return False


def seed_command(home: Path) -> list[str]:
    """Приставка команды в песочнице: копирует :data:`SEED` в папку работы (tmpfs), затем ``exec``.

    Копия ложится в tmpfs папки работы и считается в её бюджете; не поместилась — ядро не
    запускается (а не работает с половиной кэша).
    """
    script = 'cp -Rp -- "$0"/. "$1" && shift && exec "$@"'
    return ["/bin/sh", "-c", script, SEED, str(home)]


def rlimits(limits: Limits) -> dict[str, int]:
    """Пределы для всех процессов ядра: адресное пространство, размер файла, core, дескрипторы."""
    return {
        "RLIMIT_AS": max(4 * limits.memory_bytes, 8 * GIB),  # запас: JAX резервирует адреса
        "RLIMIT_FSIZE": limits.disk_bytes + TMPFS_SLACK,  # файл больше бюджета — его превышение
        "RLIMIT_CORE": 0,
        "RLIMIT_NOFILE": 1024,
    }


#: Ключ ``prlimit`` для каждого предела :func:`rlimits`.
_PRLIMIT_KEYS = {
    "RLIMIT_AS": "as",
    "RLIMIT_FSIZE": "fsize",
    "RLIMIT_CORE": "core",
    "RLIMIT_NOFILE": "nofile",
}


def prlimit_command(limits: Limits) -> list[str]:
    """``prlimit`` с пределами :func:`rlimits` (если он есть)."""
    if shutil.which("prlimit") is None:
        return []
    keys = [f"--{_PRLIMIT_KEYS[name]}={value}" for name, value in rlimits(limits).items()]
    return ["prlimit", *keys, "--"]


def kernel_env(home: Path, extra: dict[str, str]) -> dict[str, str]:
    """Окружение ядра с нуля: ничего из окружения преподавателя (ключей, токенов)."""
    env = {
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin"]),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "MPLBACKEND": "Agg",
        "MPLCONFIGDIR": str(home / ".matplotlib"),
        "IPYTHONDIR": str(home / ".ipython"),
        "KERAS_HOME": str(home / ".keras"),
        "PYTHONDONTWRITEBYTECODE": "1",
        # Рабочая папка ядра не попадает в sys.path: свой «feedback» в ней не подложить.
        "PYTHONSAFEPATH": "1",
        "PYTHONNOUSERSITE": "" if site.getusersitepackages() in sys.path else "1",
        "MALLOC_ARENA_MAX": "2",
        **QUIET_TENSORFLOW,
        **JAX_ON_CPU,
        # Ядро не следит за родителем: родитель в песочнице — init пространства процессов.
        "JPY_PARENT_PID": "1",
    }
    if sys.prefix != sys.base_prefix:
        env["VIRTUAL_ENV"] = sys.prefix
    env.update(extra)
    return {name: value for name, value in env.items() if value != ""}


def template_env(home: Path) -> dict[str, str]:
    """Окружение заготовки: то же, что у ядра в песочнице, без переменных преподавателя.

    Переменные, которые библиотеки читают при импорте, задаются здесь: копии получают уже
    импортированные библиотеки. Один поток OpenBLAS: иначе процесс заготовки многопоточен, а
    после ``fork`` многопоточного процесса потоков в копии нет, и вычисления ждали бы их вечно.
    """
    extra = {**KERAS_ON_JAX, "OPENBLAS_NUM_THREADS": "1", **JAX_COMPILATION_CACHE_ENV}
    return kernel_env(home, extra)


# --------------------------------------------------------------------------- ядро


class SandboxedKernelManager(AsyncKernelManager):
    """Менеджер ядра, который запускает ``ipykernel`` командой ``argv_prefix`` + ядро.

    Запуск ничего не наследует от процесса преподавателя, кроме того, что ядру нужно:
    ни его окружения (jupyter_client по умолчанию передаёт всё ``os.environ``, и его
    получил бы сам ``bwrap`` — процесс 1 песочницы, чьё ``/proc/1/environ`` ядро может
    прочитать), ни рабочей папки, ни его stdout и stderr (терминал преподавателя), ни
    прочих дескрипторов (``close_fds`` у ``Popen``), ни umask.
    """

    def __init__(
        self,
        argv_prefix: list[str],
        kernel_environment: dict[str, str],
        home: Path | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self._argv_prefix = argv_prefix
        self._kernel_environment = kernel_environment
        self._home = home
        self.socket_dir: Path | None = None  # папка сокетов; её тоже видит ядро
        self.record_fd: int | None = None  # запись событий ядра (feedback.kernel_guard)
        self.warm: WarmLaunch | None = None  # ядро из заготовки (feedback.teacher.unit.warm)

    async def _async_pre_start_kernel(self, **kw: Any):  # type: ignore[override]
        if self.warm is not None and self.provisioner is None:
            self.kernel_id = self.kernel_id or str(uuid.uuid4())
            self.provisioner = WarmProvisioner(
                kernel_id=self.kernel_id, kernel_spec=self.kernel_spec, parent=self
            )
        # Пустое окружение: поверх него jupyter_client кладёт только окружение из
        # kernel_spec (kernel_env — без ключей и токенов) и свой JPY_PARENT_PID.
        kw["env"] = {}
        if self._home is not None:
            kw["cwd"] = str(self._home)
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.DEVNULL)
        kw["close_fds"] = True
        kw["pass_fds"] = () if self.record_fd is None else (self.record_fd,)
        # umask ставит сам Popen между fork и exec: никакого кода Python в дочернем процессе
        # (preexec_fn в процессе с потоками, например с загруженным JAX, может зависнуть).
        kw["umask"] = 0o077
        return await super()._async_pre_start_kernel(**kw)

    @property
    def kernel_spec(self) -> KernelSpec:  # type: ignore[override]
        # Ядро под присмотром (feedback.kernel_guard), с безопасным sys.path (-P).
        argv = [sys.executable, "-P", "-m", "feedback.kernel_guard", "-f", "{connection_file}"]
        return KernelSpec(
            argv=[*self._argv_prefix, *argv],
            display_name="course7 (песочница)",
            language="python",
            interrupt_mode="message",
            env=self._kernel_environment,
        )


@dataclass
class WarmLaunch:
    """Как запустить ядро из заготовки: её сокет, песочница работы и запрос копии.

    ``setup`` — что выполнить в песочнице до ожидания (копия начального содержимого папки
    работы); ``cage`` — контрольная группа памяти работы, куда перевести ядро-копию.
    """

    template: str
    sandbox: list[str]  # bwrap … -- (feedback.teacher.unit.warm.holder_command допишет ожидание)
    request: Request
    timeout: float
    setup: list[str] = field(default_factory=list)
    cage: MemoryCage | None = None


class WarmProvisioner(LocalProvisioner):
    """Запуск ядра из заготовки; не вышло — обычный запуск той же командой в песочнице.

    ``problem`` — почему ядро запущено обычным способом (``None`` — из заготовки).
    """

    problem: str | None = None

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> Any:
        km = self.parent
        warm: WarmLaunch = km.warm
        try:
            process = await asyncio.to_thread(
                start_kernel,
                warm.template,
                warm.sandbox,
                warm.request,
                km.record_fd,
                warm.timeout,
                warm.setup,
            )
        except NotStarted as error:
            self.problem = str(error)
            return await super().launch_kernel(cmd, **kwargs)
        if warm.cage is not None:
            # Копия заготовки родилась вне группы работы: переводим её туда до первой ячейки.
            try:
                warm.cage.add(process.pid)
            except OSError as error:
                process.kill()
                self.problem = f"ядро не переведено в группу памяти работы: {error}"
                return await super().launch_kernel(cmd, **kwargs)
        self.process = process
        self.pid = process.pid
        self.pgid = None  # группа ядра — внутри песочницы; убивается сама песочница
        self.cwd = kwargs.get("cwd")
        return self.connection_info


def watched_pids(km: Any) -> list[int]:
    """Процессы, за которыми следит сторож: ядро и, у ядра из заготовки, его песочница."""
    process = getattr(km.provisioner, "process", None)
    holder = getattr(process, "holder", None)
    return [pid for pid in (getattr(holder, "pid", None), km.provisioner.pid) if pid]


def pin_command(cpus: list[int] | tuple[int, ...] = ()) -> list[str]:
    """``taskset`` на эти ядра процессора (util-linux), если они заданы и taskset есть."""
    if not cpus or shutil.which("taskset") is None:
        return []
    return ["taskset", "--cpu-list", ",".join(str(cpu) for cpu in cpus)]


def kernel_manager(
    unit_dir: Path,
    mode: str,
    limits: Limits,
    extra_env: dict[str, str],
    readonly: list[str],
    writable: list[str] = (),
    cpus: list[int] | tuple[int, ...] = (),
    template: str | None = None,
    startup_seconds: float = 60.0,
    cage: MemoryCage | None = None,
) -> SandboxedKernelManager:
    """Ядро для одной работы: в песочнице (``mode="bwrap"``) или просто с лимитами.

    ``template`` — сокет заготовки (:mod:`feedback.teacher.unit.warm`): в песочнице ядро станет её
    копией, а не запустится с нуля (``startup_seconds`` — сколько ждать этого). ``cage`` —
    контрольная группа памяти работы (:func:`feedback.teacher.unit.cgroup.memory_cage`): в неё
    попадают песочница и ядро.
    """
    home = unit_dir / "home"
    home.mkdir(parents=True, exist_ok=True)
    ipc = socket_dir()
    # Запись событий ядра — вне всего, что видит ядро: ему достаётся только дескриптор.
    record_fd = os.open(
        unit_dir / RECORD_FILE, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_TRUNC, 0o600
    )
    env = kernel_env(home, {**extra_env, RECORD_FD.name: str(record_fd)})
    caged = cage.wrapper() if cage is not None else []
    prefix = prlimit_command(limits) + pin_command(cpus)
    sandbox: list[str] = []
    setup: list[str] = []
    if mode == "bwrap":
        seed = needs_seed(home)
        setup = seed_command(home) if seed else []
        sandbox = bwrap_command(
            home, ipc, [*python_paths(), *readonly], env, limits, writable, seed=seed
        )
        prefix += caged + sandbox + setup
    else:
        prefix += caged
    km = SandboxedKernelManager(
        prefix,
        env,
        home,
        transport="ipc" if os.name == "posix" else "tcp",
        ip=str(ipc / "kernel") if os.name == "posix" else "127.0.0.1",
        connection_file=str(ipc / "connection.json"),
    )
    km.socket_dir = ipc
    km.record_fd = record_fd
    if sandbox and template:
        request = Request(
            home=str(home),
            connection_file=km.connection_file,
            env=kernel_env(home, extra_env),
            rlimits=rlimits(limits),
            cpus=list(cpus),
        )
        km.warm = WarmLaunch(template, caged + sandbox, request, startup_seconds, setup, cage)
    return km


def read_record(unit_dir: Path, limit: int = RECORD_BYTES) -> list[dict[str, Any]]:
    """События из записи ядра (:mod:`feedback.kernel_guard`): не больше ``limit`` байт.

    Запись пишет и код учащегося, поэтому всё, что не похоже на событие, пропускается.
    """
    try:
        with open(unit_dir / RECORD_FILE, "rb") as fh:
            raw = fh.read(limit)
    except OSError:
        return []
    events = []
    for line in raw.decode("utf-8", "replace").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and isinstance(entry.get("event"), str):
            events.append(entry)
    return events


#: Где создавать папку сокетов ядра: первая существующая и доступная для записи.
SOCKET_BASES = ("/dev/shm", "/tmp")


def socket_dir(bases: tuple[str, ...] = SOCKET_BASES) -> Path:
    """Короткая папка для сокетов ядра: путь сокета Unix не длиннее ~100 байт.

    Эту папку ядро видит с правом записи (в ней оно создаёт сокеты), поэтому она — в /dev/shm
    (tmpfs), если он есть: всё, что ядро запишет туда, даже удалённое, но открытое, — память
    его контрольной группы (:mod:`feedback.teacher.unit.cgroup`), а не место на диске.
    """
    base = next((b for b in bases if os.path.isdir(b) and os.access(b, os.W_OK | os.X_OK)), None)
    return Path(tempfile.mkdtemp(prefix="c7-", dir=base))


# --------------------------------------------------------------------------- сторож


def memory_exceeded(limits: Limits) -> str:
    """Причина остановки за превышение бюджета памяти (сторож или ядро Linux — текст один)."""
    from feedback.formatting import format_gib

    return (
        f"превышен бюджет памяти: ядро заняло больше "
        f"{format_gib(limits.memory_bytes / GIB)} (COURSE7_MEMORY_LIMIT)"
    )


def disk_exceeded(limits: Limits) -> str:
    """Причина остановки за превышение бюджета диска."""
    return f"в папку работы записано больше {limits.disk_bytes // MIB} МиБ файлов"


class Watchdog(threading.Thread):
    """Следит за процессами ядра и его папками; при превышении бюджета убивает ядро.

    Причина остановки (по-русски) остаётся в :attr:`reason`. Раз в ``interval`` секунд (и когда
    попросят: :meth:`poll`) сторож считает память процессов, их число, место, занятое в папках
    работы и tmpfs песочницы (``sandbox_tmp``: папка работы, /tmp и /dev/shm — по занятому в
    них месту, так что удалённые, но открытые файлы тоже в счёте), и файлы, которые процессы
    держат открытыми уже удалёнными с диска. ``cage`` — контрольная группа памяти: если ядро
    Linux убило в ней процесс, причина — бюджет памяти; без неё в память идут и буферы
    ``memfd_create``, которые держат процессы.
    """

    def __init__(
        self,
        pids: int | list[int],
        folders: list[Path],
        limits: Limits,
        interval: float = 0.2,
        sandbox_tmp: bool = False,
        home: Path | None = None,
        cage: MemoryCage | None = None,
    ):
        pids = [pids] if isinstance(pids, int) else list(pids)
        super().__init__(daemon=True, name=f"course7-watchdog-{pids[-1]}")
        self.pids, self.folders, self.limits, self.interval = pids, folders, limits, interval
        self.home, self.cage = home, cage
        self.reason: str | None = None
        self.peak_memory = 0
        self._kernel_pid: int | None = None  # процесс внутри песочницы (его /tmp — свой)
        self._sandbox_tmp_watched = sandbox_tmp  # только под bwrap: иначе /tmp — общий
        self._roots: list[Any] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def stop(self) -> None:
        self._stop.set()

    def run(self) -> None:
        while not self._stop.wait(self.interval):
            if self.poll() or not self._roots:
                return

    def poll(self) -> str | None:
        """Одна проверка бюджетов сейчас; превышен — ядро убито, причина — в :attr:`reason`."""
        import psutil

        with self._lock:
            if self.reason:
                return self.reason
            if self._roots is None:
                self._roots = []
                for pid in self.pids:
                    try:
                        self._roots.append(psutil.Process(pid))
                    except psutil.Error:
                        pass
            processes = []
            for root in self._roots:
                try:
                    processes += [root, *root.children(recursive=True)]
                except psutil.Error:
                    pass
            if not processes:
                self._roots = []
                self.reason = self.final_reason()
                return self.reason
            memory = 0
            for process in processes:
                try:
                    memory += process.memory_info().rss
                except psutil.Error:
                    pass
            self.peak_memory = max(self.peak_memory, memory)
            self._kernel_pid = processes[-1].pid if len(processes) > 1 else None
            reason = self._exceeded(memory, processes)
            if reason:
                self.reason = reason
                self._kill(processes)
            return reason

    def final_reason(self) -> str | None:
        """Причина после смерти ядра: его убило ядро Linux за превышение бюджета памяти."""
        if self.reason:
            return self.reason
        if self.cage is not None and self.cage.oom_kills():
            return memory_exceeded(self.limits)
        return None

    def _exceeded(self, memory: int, processes: list[Any]) -> str | None:
        if self.cage is not None and self.cage.oom_kills():
            return memory_exceeded(self.limits)
        places = self._sandbox_places()
        devices = {device for _, device in places}
        held_disk, held_memory = held_files([process.pid for process in processes], devices)
        if self.cage is None:
            memory += held_memory  # с группой памяти их считает ядро Linux
        if memory > self.limits.memory_bytes:
            return memory_exceeded(self.limits)
        if len(processes) > self.limits.processes:
            return f"запущено слишком много процессов (больше {self.limits.processes})"
        size, files = held_disk, 0
        for folder in self.folders:
            used = folder_usage(folder, self.limits.files - files)
            size, files = size + used[0], files + used[1]
        for folder, _ in places:
            # Свой tmpfs песочницы: занятое в нём место (с удалёнными, но открытыми файлами) и
            # файлы на нём; смонтированные в него папки (окружение, кэши) — другие файловые
            # системы, и их считать не нужно.
            size += tmpfs_used(folder)
            files += folder_usage(folder, self.limits.files - files, same_device=True)[1]
        if size > self.limits.disk_bytes:
            return disk_exceeded(self.limits)
        if files > self.limits.files:
            return f"создано больше {self.limits.files} файлов и папок"
        return None

    def _sandbox_places(self) -> list[tuple[Path, int]]:
        """Папка работы, /tmp и /dev/shm песочницы (tmpfs) — через /proc/<ядро>/root — и их
        устройства; одна файловая система считается один раз."""
        if self._kernel_pid is None or not self._sandbox_tmp_watched:
            return []
        root = Path(f"/proc/{self._kernel_pid}/root")
        inside = [root / "tmp", root / "dev" / "shm"]
        if self.home is not None:
            inside.insert(0, root / str(self.home).lstrip("/"))
        places: list[tuple[Path, int]] = []
        for folder in inside:
            try:
                device = os.stat(folder).st_dev
            except OSError:
                continue
            if device not in {seen for _, seen in places}:
                places.append((folder, device))
        return places

    @staticmethod
    def _kill(processes: list[Any]) -> None:
        import psutil

        for process in reversed(processes):
            try:
                process.kill()
            except psutil.Error:
                pass


def tmpfs_used(folder: Path) -> int:
    """Сколько байт занято в файловой системе папки (tmpfs песочницы)."""
    try:
        fs = os.statvfs(folder)
    except OSError:
        return 0
    return (fs.f_blocks - fs.f_bfree) * fs.f_frsize


def held_files(pids: list[int], skip_devices: set[int] = frozenset()) -> tuple[int, int]:
    """Байты файлов, которые процессы держат открытыми уже удалёнными, и байты их ``memfd``.

    Удалённый файл не виден ни в одной папке, но место на диске занимает, пока открыт.
    Файлы на устройствах ``skip_devices`` (tmpfs песочницы) уже в счёте их занятого места.
    """
    disk = memory = 0
    seen: set[tuple[int, int]] = set()
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            path = f"/proc/{pid}/fd/{fd}"
            try:
                target = os.readlink(path)
                info = os.stat(path)
            except OSError:
                continue
            key = (info.st_dev, info.st_ino)
            if key in seen or not stat.S_ISREG(info.st_mode) or info.st_nlink:
                continue
            seen.add(key)
            if target.startswith("/memfd:"):
                memory += info.st_blocks * 512
            elif info.st_dev not in skip_devices:
                disk += info.st_blocks * 512
    return disk, memory


def folder_usage(
    folder: Path, max_entries: int | None = None, same_device: bool = False
) -> tuple[int, int]:
    """Байты файлов в папке и число файлов и папок (ссылки не разыменовываются).

    Дойдя до ``max_entries`` записей, считать перестаёт: бюджет уже превышен, а обход
    сотен тысяч пустых файлов сам стоил бы секунд. ``same_device`` — не заходить в
    папки других файловых систем (точки монтирования).
    """
    total = entries = 0
    try:
        device = os.lstat(folder).st_dev
    except OSError:
        return 0, 0
    for root, dirs, files in os.walk(folder):
        if same_device:
            dirs[:] = [name for name in dirs if _on_device(os.path.join(root, name), device)]
        entries += len(dirs) + len(files)
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                pass
        if max_entries is not None and entries > max_entries:
            break
    return total, entries


def _on_device(path: str, device: int) -> bool:
    try:
        return os.lstat(path).st_dev == device
    except OSError:
        return False


def folder_size(folder: Path) -> int:
    """Сколько байт занимают файлы в папке (ссылки не разыменовываются)."""
    return folder_usage(folder)[0]

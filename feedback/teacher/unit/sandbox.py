"""Песочница для ядра с кодом учащегося: режим, лимиты, окружение и запуск ядра.

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
файла. Сторож (:mod:`feedback.teacher.unit.watchdog`) раз в долю секунды и после каждой ячейки
смотрит на память всех процессов ядра, их число, занятое место и число файлов и при превышении
убивает песочницу: так у работы появляется причина остановки. Без bubblewrap (macOS, Windows
или явно ``COURSE7_SANDBOX=none``) ядро запускается как обычный процесс с теми же бюджетами, а
:func:`sandbox_warning` говорит об этом преподавателю по-русски.

Здесь — выбор режима, пределы процессов, окружение ядра и его запуск; командная строка bwrap
с монтированиями — в :mod:`feedback.teacher.unit.bwrap`.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import site
import subprocess
import sys
import tempfile
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
    QUIET_TENSORFLOW,
    RECORD_FD,
    SANDBOX,
)
from feedback.settings import parse_size as parse_size  # для тех, кто импортирует её отсюда
from feedback.teacher.core.settings import Limits
from feedback.teacher.unit.bwrap import (
    TMPFS_SLACK,
    bwrap_command,
    bwrap_problem,
    needs_seed,
    python_paths,
    seed_command,
)
from feedback.teacher.unit.caches import JAX_COMPILATION_CACHE_ENV
from feedback.teacher.unit.cgroup import MemoryCage
from feedback.teacher.unit.warm import NotStarted, start_kernel

SANDBOX_ENV = SANDBOX.name
#: Файл записи событий ядра в папке работы и сколько из него читать.
RECORD_FILE = "kernel-record.jsonl"
RECORD_BYTES = 1024**2


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
    problem = bwrap_problem()
    if problem:
        raise SandboxUnavailable(
            "bubblewrap установлен, но не может создать песочницу: "
            f"{problem}. Обычно это значит, что в системе запрещены "
            "непривилегированные пространства имён пользователей (sysctl "
            "kernel.unprivileged_userns_clone=1 или профиль AppArmor для bwrap в "
            "Ubuntu 24.04)."
        )
    return "bwrap"


def sandbox_warning(mode: str) -> str | None:
    """Русское предупреждение для преподавателя, если песочницы нет."""
    if mode == "bwrap":
        return None
    return (
        "ВНИМАНИЕ: работы оцениваются без песочницы. Код учащихся выполняется с вашими "
        "правами и видит ваши файлы; бюджеты времени и памяти действуют, но изоляции нет. "
        "На Linux поставьте bubblewrap (sudo apt-get install bubblewrap)."
    )


# --------------------------------------------------------------------------- пределы и окружение


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

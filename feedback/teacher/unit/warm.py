"""Ядра из прогретых заготовок: песочница — своя у каждой работы, импорт — один на запуск.

Заготовки (:mod:`feedback.kernel_template`) запускает родительский процесс оценивания на время
запуска (:func:`kernel_templates`), по одной на вид лабораторных — CPU и GPU. Единица, которой
досталась заготовка, запускает песочницу bubblewrap своей работы как обычно, но вместо ядра в
ней ждёт ``sleep`` (:func:`holder_command`); заготовка порождает копию, копия входит в
пространства имён этой песочницы и становится ядром (:func:`start_kernel`). Снаружи такое ядро
выглядит для jupyter_client как процесс (:class:`WarmKernel`): его можно опросить, дождаться и
убить, а убить — значит убить всю песочницу.

Если что-то не вышло (заготовки нет, она ещё не готова дольше срока запуска ядра, система не
позволяет войти в песочницу), единица запускает ядро заново в той же песочнице, как без
заготовок, — баллы от этого не зависят, только время.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from feedback.kernel_template import NAMESPACES, PROFILES, Request, owner_namespace

#: Сколько ждать, пока bwrap соберёт песочницу (её процесс выполнит ``sleep``).
SANDBOX_SECONDS = 30.0


def profile_of(gpu: bool) -> str:
    """Заготовка для лабораторной: GPU-лабораторным — с keras, keras-hub и TensorFlow."""
    return "gpu" if gpu else "cpu"


#: С какого числа ядер одного вида за запуск заготовка окупается. Заготовка сама стоит
#: импорта один раз: для GPU — столько же, сколько одно ядро с нуля (keras и TensorFlow), и
#: уже второе ядро из неё почти даром; для CPU — около трёх ядер с нуля (IPython, pandas,
#: matplotlib против ядра, которое импортирует только нужное одной лабораторной).
PAYS_OFF_FROM = {"gpu": 2, "cpu": 4}


def pays_off(profile: str, kernels: int) -> bool:
    """Стоит ли запускать заготовку вида ``profile`` ради ``kernels`` ядер."""
    return kernels >= PAYS_OFF_FROM[profile]


# --------------------------------------------------------------------------- заготовки


@dataclass
class Template:
    """Запущенная заготовка: её процесс и сокет для запросов."""

    profile: str
    socket: str
    process: subprocess.Popen


#: Окружение процесса заготовки по её папке.
EnvFor = Callable[[Path], dict[str, str]]


def start_template(profile: str, folder: Path, env_for: EnvFor) -> Template:
    """Запускает заготовку в своей папке; импорт идёт в фоне, запросы ждут его в очереди.

    ``env_for(папка)`` — окружение процесса заготовки
    (:func:`feedback.teacher.unit.sandbox.template_env`).
    """
    if profile not in PROFILES:
        raise ValueError(profile)
    home = folder / profile
    home.mkdir(mode=0o700)
    path = str(home / "socket")
    log = open(home / "log", "wb")
    try:
        process = subprocess.Popen(
            [sys.executable, "-P", "-m", "feedback.kernel_template", profile, path],
            env=env_for(home),
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            close_fds=True,
            umask=0o077,
        )
    finally:
        log.close()
    return Template(profile, path, process)


#: Папка заготовок запуска в /tmp (путь сокета Unix короткий): «c7-tpl-<pid запуска>-…».
TEMPLATE_PREFIX = "c7-tpl-"


def remove_stale(base: Path) -> list[Path]:
    """Убирает папки заготовок запусков, которых больше нет (``kill -9``: finally не дошёл).

    Чья папка — видно по pid в имени: папка живого процесса (другой запуск make grade или
    тест рядом) и чужая (другой пользователь) остаются. Возвращает убранные.
    """
    removed = []
    for folder in base.glob(f"{TEMPLATE_PREFIX}*-*"):
        pid = folder.name[len(TEMPLATE_PREFIX) :].split("-", 1)[0]
        try:
            if not pid.isdigit() or folder.is_symlink() or folder.stat().st_uid != os.getuid():
                continue
            os.kill(int(pid), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        except OSError:  # PermissionError: процесс жив, но чужой; папки уже нет
            continue
    return removed


@contextlib.contextmanager
def kernel_templates(
    profiles: Iterable[str],
    env_for: EnvFor,
    enabled: bool = True,
) -> Iterator[dict[str, str]]:
    """Заготовки на время запуска: вид лабораторных → сокет (пусто, если их нет).

    Заготовки нужны только под bubblewrap на Linux (``enabled``): без песочницы входить некуда.
    По выходе они убиваются, а их папка удаляется.
    """
    wanted = sorted(set(profiles)) if enabled and sys.platform.startswith("linux") else []
    if not wanted:
        yield {}
        return
    base = Path("/tmp" if os.path.isdir("/tmp") else tempfile.gettempdir())
    remove_stale(base)
    folder = Path(tempfile.mkdtemp(prefix=f"{TEMPLATE_PREFIX}{os.getpid()}-", dir=base))
    templates: list[Template] = []
    try:
        for profile in wanted:
            templates.append(start_template(profile, folder, env_for))
        yield {template.profile: template.socket for template in templates}
    finally:
        for template in templates:
            template.process.kill()
            template.process.wait()
        shutil.rmtree(folder, ignore_errors=True)


# --------------------------------------------------------------------------- ядро работы


def holder_command(sandbox: list[str], info_fd: int, setup: Sequence[str] = ()) -> list[str]:
    """Команда песочницы работы (``bwrap … --``), в которой вместо ядра ждёт ``sleep``.

    ``setup`` — приставка, которая выполнится в песочнице до ``sleep`` и сделает ему ``exec``
    (копия начального содержимого папки работы): ядро войдёт в уже готовую песочницу.
    """
    if not sandbox or sandbox[-1] != "--":
        raise ValueError("ожидалась команда bwrap, которая кончается на «--»")
    sleep = shutil.which("sleep", path="/usr/bin:/bin") or "/bin/sleep"
    return [*sandbox[:-1], "--info-fd", str(info_fd), "--", *setup, sleep, "infinity"]


class WarmKernel:
    """Ядро из заготовки в песочнице работы — с тем же поведением, что у ``subprocess.Popen``.

    ``pid`` — само ядро; ``holder`` — процесс bwrap песочницы; ``sandbox_init`` — первый процесс
    её пространства процессов: когда он умирает, ядро Linux убивает всё, что в песочнице.
    """

    stdin = stdout = stderr = None

    def __init__(self, holder: subprocess.Popen, sandbox_init: int, pid: int):
        self.holder, self.sandbox_init, self.pid = holder, sandbox_init, pid
        self.pidfd = os.pidfd_open(pid)
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None and select.select([self.pidfd], [], [], 0)[0]:
            self._finished()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            if not select.select([self.pidfd], [], [], timeout)[0]:
                raise subprocess.TimeoutExpired("ядро из заготовки", timeout or 0)
            self._finished()
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, signum: int) -> None:
        if signum == signal.SIGKILL:
            self.kill()
        elif self.returncode is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        for pid in (self.sandbox_init, self.pid):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        self._stop_holder()

    terminate = kill

    def _finished(self) -> None:
        # Кода выхода не узнать (ядро — не наш дочерний процесс): важно лишь, что оно вышло.
        self.returncode = 1
        self._stop_holder()
        with contextlib.suppress(OSError):
            os.close(self.pidfd)

    def _stop_holder(self) -> None:
        with contextlib.suppress(OSError):
            self.holder.kill()
        with contextlib.suppress(subprocess.SubprocessError, OSError):
            self.holder.wait(5)


class NotStarted(RuntimeError):
    """Ядро из заготовки не запустилось; текст — почему (ядро запустится как обычно)."""


def start_kernel(
    template: str,
    sandbox: list[str],
    request: Request,
    record_fd: int,
    timeout: float,
    setup: Sequence[str] = (),
) -> WarmKernel:
    """Песочница работы, вход копии заготовки в неё и ядро Jupyter; иначе :class:`NotStarted`."""
    info_read, info_write = os.pipe()
    try:
        holder = subprocess.Popen(
            holder_command(sandbox, info_write, setup),
            env={},
            cwd=request.home,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            pass_fds=(info_write,),
            umask=0o077,
        )
    finally:
        os.close(info_write)
    try:
        deadline = time.monotonic() + min(timeout, SANDBOX_SECONDS)
        init = _sandbox_init(info_read, deadline)
        inside = _sandbox_process(init, deadline)
        kernel = _ask(template, inside, request, record_fd, time.monotonic() + timeout)
    except BaseException:
        holder.kill()
        holder.wait()
        raise
    finally:
        os.close(info_read)
    return WarmKernel(holder, init, kernel)


def _read_until_eof(fd: int, deadline: float) -> bytes:
    data = b""
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise NotStarted("песочница не ответила вовремя")
        chunk = os.read(fd, 65536)
        if not chunk:
            return data
        data += chunk


def _sandbox_init(info_fd: int, deadline: float) -> int:
    """Первый процесс песочницы — из ``--info-fd`` bwrap."""
    try:
        return int(json.loads(_read_until_eof(info_fd, deadline))["child-pid"])
    except (ValueError, KeyError, TypeError) as error:
        raise NotStarted(f"bwrap не сообщил о песочнице: {error}") from None


def _sandbox_process(init: int, deadline: float) -> int:
    """Процесс песочницы, уже выполнивший ``sleep``: значит, bwrap её достроил."""
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{init}/task/{init}/children").read_text().split()
        except OSError:
            raise NotStarted("песочница завершилась, не запустившись") from None
        for child in children:
            with contextlib.suppress(OSError):
                if Path(f"/proc/{child}/comm").read_text().strip() == "sleep":
                    return int(child)
        time.sleep(0.002)
    raise NotStarted("песочница не достроилась вовремя")


def _ask(template: str, inside: int, request: Request, record_fd: int, deadline: float) -> int:
    """Запрос заготовке; ответ — pid ядра, уже вошедшего в песочницу."""
    fds = {kind: os.open(f"/proc/{inside}/ns/{_ns_file(kind)}", os.O_RDONLY) for kind in NAMESPACES}
    status_read, status_write = os.pipe()
    try:
        os.close(fds.pop("owner"))
        fds = {"owner": owner_namespace(fds["mnt"]), **fds}
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
            connection.settimeout(max(0.1, deadline - time.monotonic()))
            try:
                _connect(connection, template)
                socket.send_fds(
                    connection,
                    [request.to_json()],
                    [*(fds[kind] for kind in NAMESPACES), record_fd, status_write],
                )
            except OSError as error:
                raise NotStarted(f"заготовка недоступна: {error}") from None
            os.close(status_write)
            status_write = -1
            answer = _read_until_eof(status_read, deadline)
    finally:
        for fd in fds.values():
            os.close(fd)
        os.close(status_read)
        if status_write != -1:
            os.close(status_write)
    try:
        reply = json.loads(answer)
    except ValueError:
        raise NotStarted("заготовка не ответила") from None
    if "kernel" not in reply:
        raise NotStarted(f"заготовка не вошла в песочницу: {reply.get('error', reply)}")
    return int(reply["kernel"])


#: Сколько ждать сокета только что запущенной заготовки (он появляется до импорта библиотек).
SOCKET_SECONDS = 5.0


def _connect(connection: socket.socket, path: str) -> None:
    deadline = time.monotonic() + SOCKET_SECONDS
    while True:
        try:
            connection.connect(path)
            return
        except FileNotFoundError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def _ns_file(kind: str) -> str:
    return "user" if kind == "owner" else kind

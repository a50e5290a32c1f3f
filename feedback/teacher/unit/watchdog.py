"""Сторож бюджетов работы: память, процессы, место на диске и число файлов её ядра.

Ядро Linux держит не все бюджеты: без контрольной группы памяти
(:mod:`feedback.teacher.unit.cgroup`) память считается по процессам, а место — и в папке
работы, и в tmpfs песочницы, и в файлах, удалённых, но ещё открытых (:func:`held_files`), и в
буферах ``memfd_create``. :class:`Watchdog` смотрит на всё это раз в долю секунды и после
каждой ячейки и при превышении убивает ядро: так у работы появляется русская причина
остановки, а файлы не заполняют диск преподавателя. Отдельно от запуска ядра
(:mod:`feedback.teacher.unit.sandbox`): сторож знает только номера процессов, папки и бюджеты.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any

from feedback.settings import GIB, MIB
from feedback.teacher.core.settings import Limits
from feedback.teacher.unit.cgroup import MemoryCage


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

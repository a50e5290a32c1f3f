"""Клетка памяти одной работы: своя контрольная группа (cgroup) с пределом памяти.

Предел адресного пространства (``RLIMIT_AS``) не считает страниц tmpfs (файлы в /tmp,
/dev/shm и в папке работы песочницы), буферов ``memfd_create`` и разделяемой памяти System V:
их память занята, пока жив их дескриптор или файловая система, а адресов процесса они не
занимают. Контрольная группа памяти считает всё это вместе с обычной памятью процессов, и при
превышении предела ядро Linux само останавливает работу (убивает процесс в группе), а не сторож
раз в долю секунды.

Группа — дочерняя у той, в которой работает процесс оценивания: cgroup v1 (контроллер
``memory``, пределы ``memory.limit_in_bytes`` и ``memory.memsw.limit_in_bytes``) или cgroup v2
(``memory.max``, ``memory.swap.max = 0``; нужен контроллер памяти в ``cgroup.subtree_control``
своей группы — так бывает в делегированной группе systemd или контейнере). Если создать её
нельзя (нет прав, нет контроллера, не Linux), :func:`memory_cage` возвращает ``None``, и
память ограничивают, как раньше, ``RLIMIT_AS`` и сторож
(:class:`feedback.teacher.unit.watchdog.Watchdog`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

#: Сколько ждать, пока процессы убитой группы выйдут и её можно будет удалить (секунды).
RELEASE_SECONDS = 2.0


@dataclass
class MemoryCage:
    """Контрольная группа работы: папка в cgroupfs, версия (1 или 2) и предел в байтах."""

    path: Path
    version: int
    limit: int

    @property
    def procs(self) -> Path:
        return self.path / "cgroup.procs"

    def wrapper(self) -> list[str]:
        """Приставка команды: процесс входит в группу и становится командой (``exec``).

        Всё, что он породит (bwrap, ядро, процессы учащегося), — тоже в группе. Не вышло войти —
        команда не запускается вовсе (ядро «не запустилось»), а не работает без предела.
        """
        return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(self.procs)]

    def add(self, pid: int) -> None:
        """Переводит процесс (ядро из заготовки) в группу; ``OSError`` — не вышло."""
        self.procs.write_text(f"{pid}\n")

    def oom_kills(self) -> int:
        """Сколько раз ядро Linux убивало процесс группы за превышение предела."""
        name = "memory.oom_control" if self.version == 1 else "memory.events"
        try:
            lines = (self.path / name).read_text().splitlines()
        except OSError:
            return 0
        for line in lines:
            key, _, value = line.partition(" ")
            if key == "oom_kill":
                return int(value)
        return 0

    def close(self) -> None:
        """Убивает всё, что осталось в группе, и удаляет её (память возвращается системе)."""
        deadline = time.monotonic() + RELEASE_SECONDS
        while True:
            for pid in self._pids():
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return  # пустую папку группы уберёт система, когда выйдут процессы
                time.sleep(0.01)

    def _pids(self) -> list[int]:
        try:
            return [int(line) for line in self.procs.read_text().split()]
        except (OSError, ValueError):
            return []


def _own_groups(proc: Path) -> tuple[str | None, str | None]:
    """Своя группа контроллера памяти cgroup v1 и своя группа cgroup v2 (``/proc/self/cgroup``)."""
    v1 = v2 = None
    try:
        lines = (proc / "cgroup").read_text().splitlines()
    except OSError:
        return None, None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":
            v2 = path
        elif "memory" in controllers.split(","):
            v1 = path
    return v1, v2


def _mounts(proc: Path) -> list[tuple[str, str, str, str]]:
    """Точки монтирования cgroupfs: (корень внутри иерархии, точка, тип, параметры)."""
    found = []
    try:
        lines = (proc / "mountinfo").read_text().splitlines()
    except OSError:
        return []
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) >= 5 and len(tail) >= 3 and tail[0] in ("cgroup", "cgroup2"):
            found.append((fields[3], fields[4], tail[0], tail[2]))
    return found


def _folder(root: str, point: str, own: str) -> Path | None:
    """Папка своей группы в точке монтирования (в контейнере корень иерархии — не «/»)."""
    if root != "/" and not (own == root or own.startswith(root.rstrip("/") + "/")):
        return None
    inside = own[len(root) :] if root != "/" else own
    return Path(point) / inside.lstrip("/")


def own_memory_group(proc: Path = Path("/proc/self")) -> tuple[Path, int] | None:
    """Папка своей группы с контроллером памяти и версия cgroup; ``None`` — такой нет."""
    v1, v2 = _own_groups(proc)
    mounts = _mounts(proc)
    if v1 is not None:
        for root, point, kind, options in mounts:
            if kind == "cgroup" and "memory" in options.split(","):
                folder = _folder(root, point, v1)
                if folder is not None and folder.is_dir():
                    return folder, 1
    if v2 is not None:
        for root, point, kind, _ in mounts:
            if kind == "cgroup2":
                folder = _folder(root, point, v2)
                if folder is not None and (folder / "cgroup.controllers").is_file():
                    return folder, 2
    return None


def memory_cage(limit: int, proc: Path = Path("/proc/self")) -> MemoryCage | None:
    """Новая группа работы с пределом ``limit`` байт (без подкачки); ``None`` — нельзя."""
    found = own_memory_group(proc)
    if found is None:
        return None
    parent, version = found
    path = parent / f"course7-{uuid.uuid4().hex[:12]}"
    try:
        if version == 2 and "memory" not in (parent / "cgroup.subtree_control").read_text().split():
            return None  # своя группа не раздаёт контроллер памяти дочерним
        path.mkdir()
    except OSError:
        return None
    cage = MemoryCage(path, version, limit)
    try:
        if version == 1:
            (path / "memory.limit_in_bytes").write_text(str(limit))
            swap = path / "memory.memsw.limit_in_bytes"
            if swap.exists():
                swap.write_text(str(limit))
        else:
            (path / "memory.max").write_text(str(limit))
            for name, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                if (path / name).exists():
                    (path / name).write_text(value)
    except OSError:
        cage.close()
        return None
    return cage

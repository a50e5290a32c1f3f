"""Командная строка bubblewrap: пространства имён, монтирования и начальное содержимое папки работы.

Отдельно от запуска ядра (:mod:`feedback.teacher.unit.sandbox`), потому что это граница
безопасности в одном месте: что из системы видно ядру (только для чтения), какие папки пакета
курса от него спрятаны (:func:`hidden_paths`: эталоны ответов и программа оценивания), где оно
может писать (tmpfs с пределом бюджета диска) и в каком порядке bwrap всё это монтирует.
Здесь же — пробный запуск bwrap (:func:`bwrap_problem`): работает ли песочница в этой системе.
"""

from __future__ import annotations

import os
import site
import subprocess
import sys
from pathlib import Path

from feedback.settings import MIB
from feedback.teacher.core.settings import Limits

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


def bwrap_problem() -> str | None:
    """Почему bwrap не создаёт песочницу в этой системе (текст его ошибки) или ``None``."""
    command = ["bwrap", *_namespaces(), *_system_binds(), "--", "/bin/true"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as error:
        return str(error)
    return None if result.returncode == 0 else (result.stderr.strip() or "неизвестная ошибка")


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

"""``make gpu-check``: видеокарта, её память и «держатель» остальной карты.

Опыт проверки должен видеть память одной T4 (≈ 15 ГиБ), даже на H200 со 141 ГиБ. Два способа:

* **пул XLA** размером с T4 (доля памяти карты, занятая заранее) — так можно запустить
  несколько опытов сразу, каждому свой пул: :func:`plan_slots` считает, сколько их поместится;
* **держатель**: отдельный процесс занимает всю карту, кроме памяти T4, — тогда любой
  распределитель (BFC без предвыделения, ``platform``, ``cuda_async``) видит только её. Такой
  опыт идёт на карте один.

С видеокартой модуль говорит напрямую через драйвер CUDA (``libcuda`` через :mod:`ctypes`):
он есть везде, где работает jax с CUDA, и других пакетов не нужно. Сам модуль импортирует
только стандартную библиотеку, чтобы проверка без видеокарты и тесты его читали бесплатно.
Зонд памяти (:data:`Probe`) и держатель (:class:`Holder`) подменяются в тестах поддельными.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

MIB = 1024**2
GIB = 1024**3
#: Кусок, которым держатель занимает память: крупно (1 ГиБ), а к цели — шагами по 64 МиБ.
HOLD_CHUNK = GIB
HOLD_STEP = 64 * MIB
#: Запас на процесс сверх его пула XLA: контекст CUDA (на T4 ≈ 0,3 ГиБ, на H200 больше),
#: рабочие буферы cuBLAS и cuDNN — они берутся мимо пула. С запасом в 1 ГиБ на H200
#: (143 771 МиБ) помещается 8 пулов по 15 060 МиБ, как и ожидалось.
SLOT_OVERHEAD = GIB
#: Сколько держатель ждёт, пока займёт память и ответит, что готов (секунд).
HOLD_READY_TIMEOUT = 60


@dataclass(frozen=True)
class Card:
    """Видеокарта, какой её видит драйвер CUDA: имя, вся память и свободная сейчас."""

    name: str
    total_bytes: int
    free_bytes: int
    driver: str

    @property
    def total_mib(self) -> int:
        return self.total_bytes // MIB


#: Зонд памяти: возвращает видеокарту или ``None``, если её нет.
Probe = Callable[[], "Card | None"]


def plan_slots(card: Card, pool_bytes: int, overhead: int = SLOT_OVERHEAD) -> int:
    """Сколько опытов с пулом ``pool_bytes`` поместится на карте сразу (не меньше одного).

    На карте с 15–16 ГиБ — один (опыты идут по очереди), на H200 — восемь.
    """
    return max(1, (card.free_bytes - overhead) // (pool_bytes + overhead))


def pool_fraction(card: Card, pool_bytes: int) -> str:
    """Доля памяти карты для пула XLA: JAX умножает её на *всю* память карты."""
    return f"{min(pool_bytes / card.total_bytes, 1.0):.6f}"


# --------------------------------------------------------------------------- драйвер CUDA


class CudaError(RuntimeError):
    """Вызов драйвера CUDA вернул ошибку."""


class _Driver:
    """Несколько функций драйвера CUDA через ctypes: устройство 0, его память и имя."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        self._call("cuInit", ctypes.c_uint(0))
        self.device = ctypes.c_int()
        self._call("cuDeviceGet", ctypes.byref(self.device), ctypes.c_int(0))
        self.context = ctypes.c_void_p()
        self._call("cuDevicePrimaryCtxRetain", ctypes.byref(self.context), self.device)
        self._call("cuCtxSetCurrent", self.context)

    def _call(self, name: str, *args) -> None:
        code = getattr(self.lib, name)(*args)
        if code != 0:
            raise CudaError(f"{name}: ошибка CUDA {code}")

    def memory(self) -> tuple[int, int]:
        """Свободная и вся память устройства, байты."""
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        self._call("cuMemGetInfo_v2", ctypes.byref(free), ctypes.byref(total))
        return free.value, total.value

    def name(self) -> str:
        buffer = ctypes.create_string_buffer(256)
        self._call("cuDeviceGetName", buffer, ctypes.c_int(256), self.device)
        return buffer.value.decode("utf-8", errors="replace")

    def allocate(self, size: int) -> int:
        pointer = ctypes.c_uint64()
        self._call("cuMemAlloc_v2", ctypes.byref(pointer), ctypes.c_size_t(size))
        return pointer.value

    def release(self) -> None:
        """Отпускает основной контекст: память контекста вернётся карте."""
        self.lib.cuDevicePrimaryCtxRelease_v2(self.device)


def _version_word(text: str) -> str:
    for word in text.split():
        parts = word.split(".")
        if len(parts) >= 2 and all(part.isdigit() for part in parts):
            return word
    return ""


def driver_version() -> str:
    """Версия драйвера NVIDIA (``580.159.04``): из ``/proc``, иначе из NVML (``libnvidia-ml``,
    он ставится с драйвером; в песочницах вроде gVisor ``/proc/driver`` бывает пуст)."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    if version := _version_word(text):
        return version
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        buffer = ctypes.create_string_buffer(96)
        if nvml.nvmlInit_v2() != 0:
            return ""
        try:
            if nvml.nvmlSystemGetDriverVersion(buffer, ctypes.c_uint(96)) != 0:
                return ""
        finally:
            nvml.nvmlShutdown()
    except (OSError, AttributeError):
        return ""
    return _version_word(buffer.value.decode("ascii", errors="replace"))


def cuda_card() -> Card | None:
    """Зонд настоящей карты: устройство 0 через драйвер CUDA; ``None`` — видеокарты нет."""
    try:
        driver = _Driver()
    except (OSError, CudaError, AttributeError):
        return None
    try:
        free, total = driver.memory()
        return Card(driver.name(), total, free, driver_version())
    finally:
        driver.release()


def free_bytes_now() -> int | None:
    """Свободная память карты, как её видит процесс сейчас (для опыта: что ему досталось)."""
    try:
        driver = _Driver()
    except (OSError, CudaError, AttributeError):
        return None
    try:
        return driver.memory()[0]
    except CudaError:
        return None
    finally:
        driver.release()


def hold(leave_free: int, driver=None) -> dict:
    """Занимает память карты, пока свободной не останется ``leave_free`` байт (+ до 64 МиБ).

    ``driver`` — драйвер CUDA (по умолчанию настоящий; тесты дают поддельный с ``memory()`` и
    ``allocate()``). Занятое держится, пока жив процесс.
    """
    driver = _Driver() if driver is None else driver
    held = 0
    for chunk in (HOLD_CHUNK, HOLD_STEP):
        while True:
            free = driver.memory()[0]
            if free - chunk < leave_free:
                break
            driver.allocate(chunk)
            held += chunk
    free, total = driver.memory()
    return {"held_bytes": held, "free_bytes": free, "total_bytes": total}


# --------------------------------------------------------------------------- держатель


@dataclass(frozen=True)
class Held:
    """Что занял держатель и сколько свободной памяти осталось опыту."""

    held_bytes: int
    free_bytes: int


class Holder:
    """Держатель остальной карты: процесс ``python -m feedback.gpu.check_card hold БАЙТЫ``.

    Пока открыт контекст :meth:`hold`, процесс держит память; закрыли стандартный ввод —
    процесс выходит, и драйвер возвращает память карте.
    """

    @contextmanager
    def hold(self, leave_free: int):
        process = subprocess.Popen(
            [sys.executable, "-m", "feedback.gpu.check_card", "hold", str(leave_free)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            line = _read_line(process, HOLD_READY_TIMEOUT)
            try:
                data = json.loads(line)
            except ValueError:
                raise RuntimeError(
                    f"держатель памяти не ответил за {HOLD_READY_TIMEOUT} с: {line[:200]!r}"
                ) from None
            yield Held(int(data["held_bytes"]), int(data["free_bytes"]))
        finally:
            if process.stdin:
                process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _read_line(process: subprocess.Popen, timeout: float) -> str:
    """Первая строка вывода процесса или пустая строка, если её нет за ``timeout`` секунд."""
    import selectors

    selector = selectors.DefaultSelector()
    selector.register(process.stdout, selectors.EVENT_READ)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if selector.select(timeout=0.5):
            return process.stdout.readline()
        if process.poll() is not None:
            return ""
    return ""


class NoHolder:
    """Без видеокарты держать нечего: опыт получает «всю» память (тесты, ``--config tiny``)."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    @contextmanager
    def hold(self, leave_free: int):
        self.calls.append(leave_free)
        yield Held(0, leave_free)


def main(argv: list[str] | None = None) -> int:
    """``hold БАЙТЫ``: занять карту, напечатать JSON и ждать, пока закроют стандартный ввод."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "hold":
        print("использование: python -m feedback.gpu.check_card hold БАЙТЫ", file=sys.stderr)
        return 2
    print(json.dumps(hold(int(argv[1]))), flush=True)
    sys.stdin.read()
    return 0


if __name__ == "__main__":
    sys.exit(main())

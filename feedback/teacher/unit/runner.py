"""Где выполняются единицы оценивания: здесь (до ``JOBS`` сразу) или на кластере Dask.

Каждая единица — свой процесс: он порождается от заранее прогретого процесса-шаблона
(``multiprocessing`` со стартом ``forkserver``), в котором уже импортированы nbclient и
nbformat, поэтому запуск стоит миллисекунды, а не секунду импорта. Процесс получает
задание и возвращает результат через файлы в своей временной папке; если он упал, завис
или убит, вместо результата будет «работа не оценена» с причиной — остальные единицы
это не задевает.

С Dask (``make grade SCHEDULER=tls://host:8786``) та же функция :func:`run_isolated`
выполняется на рабочих машинах: каждой нужен только установленный пакет курса, bubblewrap и
сертификат курса, а решения, база оценок и отчёты остаются у преподавателя. Подключение —
только по TLS со взаимной проверкой (:mod:`feedback.teacher.unit.dask_tls`): рабочий выполняет
всё, что ему пришлют, и открытый планировщик отдал бы его любому.
"""

from __future__ import annotations

import concurrent.futures
import json
import multiprocessing
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from feedback.settings import UNITS_DIR
from feedback.teacher.core.results import Job, UnitResult
from feedback.teacher.unit.dask_tls import Cluster
from feedback.teacher.unit.pipeline import failed_result

#: Что процесс-шаблон импортирует заранее из этой комнаты и ниже: процесс единицы первым
#: (запрет грамматик IRI до nbformat, :mod:`feedback.teacher.unit.lean`) и саму единицу.
#: Модули выше (запуск оценивания со всем, что он импортирует) добавляет тот, кто запускает
#: единицы, — :func:`preload`: комната ``unit`` их не знает.
PRELOAD = [
    "feedback.teacher.unit.process",
    "feedback.teacher.unit.pipeline",
    "feedback.teacher.intake.uploads",
]


def _context() -> multiprocessing.context.BaseContext:
    method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    if method == "forkserver":
        context.set_forkserver_preload(PRELOAD)
    return context


def preload(*modules: str) -> None:
    """Ещё модули для процесса-шаблона — до первой единицы.

    Под ``python -m feedback.teacher.commands.grade`` (``make grade``) multiprocessing в каждом
    процессе единицы заново выполняет главный модуль родителя под именем ``__mp_main__``: всё,
    что он импортирует, уже должно быть в шаблоне — тогда это стоит миллисекунды. Сам главный
    модуль сюда не передают: runpy напечатал бы английское RuntimeWarning на каждую работу.
    """
    if _CONTEXT.get_start_method() == "forkserver":
        _CONTEXT.set_forkserver_preload([*PRELOAD, *modules])


_CONTEXT = _context()


def _unit_entry(job_file: str, result_file: str, log_file: str) -> None:
    """Тело процесса единицы: свой сеанс (чтобы убить всю группу), вывод — в журнал."""
    os.setsid()
    log = os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    from feedback.teacher.unit.process import main

    raise SystemExit(main([job_file, result_file]))


def run_isolated(job: Job, units: Path | None = None) -> UnitResult:
    """Выполняет одну единицу в своём процессе; что бы с ней ни случилось — вернёт результат.

    Папка единицы (в ней задание: работа учащегося и критерии) — в ``COURSE7_UNITS_DIR``, в
    ``units`` (у ``make grade`` — ``units/`` рабочей папки, её чистит следующий запуск, если
    этот оборвался) или, на рабочем Dask, в его временной папке; по окончании она удаляется.
    """
    base = UNITS_DIR.read() or units
    if base is not None:
        Path(base).mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="course7-unit-", dir=base))
    job = replace(job, unit_dir=str(folder / "unit"))
    job_file, result_file, log_file = folder / "job.json", folder / "result.json", folder / "log"
    job_file.write_text(json.dumps(job.to_json(), ensure_ascii=False), encoding="utf-8")
    timeout = job.limits.notebook_seconds + job.limits.unit_grace_seconds
    started = time.monotonic()
    try:
        if not _finished(job_file, result_file, log_file, timeout):
            return failed_result(job, f"оценивание работы не завершилось за {int(timeout)} с")
        try:
            result = UnitResult.from_json(json.loads(result_file.read_text(encoding="utf-8")))
        except (OSError, ValueError, KeyError, TypeError):
            return failed_result(job, "сбой оценивания этой работы" + _log_tail(log_file))
        return replace(result, wall_seconds=round(time.monotonic() - started, 3))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _finished(job_file: Path, result_file: Path, log_file: Path, timeout: float) -> bool:
    """Запускает процесс единицы и ждёт; ``False`` — не успел, и вся его группа убита.

    Обычно процесс порождается от прогретого шаблона. Внутри процесса-демона (так
    работают рабочие Dask) порождать процессы через multiprocessing нельзя — тогда
    запускается обычный ``python -m feedback.teacher.unit.process``.
    """
    arguments = (str(job_file), str(result_file), str(log_file))
    if not multiprocessing.current_process().daemon:
        process = _CONTEXT.Process(target=_unit_entry, args=arguments)
        process.start()
        process.join(timeout)
        if process.is_alive():
            _kill_group(process.pid)
            process.join(5)
            return False
        return True
    with open(log_file, "wb") as log:
        command = [sys.executable, "-m", "feedback.teacher.unit.process", *arguments[:2]]
        child = subprocess.Popen(command, stdout=log, stderr=log, start_new_session=True)
        try:
            child.wait(timeout)
        except subprocess.TimeoutExpired:
            _kill_group(child.pid)
            child.wait()
            return False
    return True


def _kill_group(pid: int | None) -> None:
    if pid is None:
        return
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _log_tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    tail = [line.strip() for line in lines[-3:] if line.strip()]
    return f": {' / '.join(tail)}" if tail else ""


def run_local(
    jobs: Iterable[Job],
    workers: int,
    on_result: Callable[[UnitResult], None],
    units: Path | None = None,
) -> None:
    """Выполняет единицы здесь, до ``workers`` одновременно; результаты — по мере готовности.

    ``units`` — где создавать папки единиц (:func:`run_isolated`).

    Каждому из ``workers`` мест достаются свои ядра процессора: ядро Jupyter работы
    закрепляется за ними (``taskset``), и библиотеки не делят одно ядро на несколько потоков.
    """
    slots: queue.SimpleQueue[list[int]] = queue.SimpleQueue()
    for cpus in cpu_slots(workers):
        slots.put(cpus)

    def run_on_slot(job: Job) -> UnitResult:
        cpus = slots.get()
        try:
            return run_isolated(replace(job, cpus=cpus), units)
        finally:
            slots.put(cpus)

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {pool.submit(run_on_slot, job): job for job in jobs}
        for future in concurrent.futures.as_completed(futures):
            on_result(_result_of(future, futures[future]))


def cpu_slots(workers: int) -> list[list[int]]:
    """Ядра процессора для каждого из ``workers`` мест (пустой список — без закрепления)."""
    if workers <= 1 or not hasattr(os, "sched_getaffinity"):
        return [[] for _ in range(max(workers, 1))]
    cpus = sorted(os.sched_getaffinity(0))
    if workers > len(cpus):
        return [[cpus[slot % len(cpus)]] for slot in range(workers)]
    share = len(cpus) // workers
    return [cpus[slot * share : (slot + 1) * share] for slot in range(workers)]


def run_dask(
    jobs: Iterable[Job], cluster: Cluster, on_result: Callable[[UnitResult], None]
) -> None:
    """Выполняет единицы на рабочих Dask (``dask scheduler`` / ``dask worker`` на машинах).

    ``cluster`` — адрес планировщика и защита подключения (:func:`dask_tls.cluster_for`).
    """
    try:
        from distributed import Client, as_completed
    except ImportError:
        raise RuntimeError(
            "Для SCHEDULER нужен Dask: pip install 'course7-feedback[cluster]'."
        ) from None
    with Client(cluster.address, security=cluster.security) as client:
        futures = {}
        for job in jobs:
            # pure=False: у двух одинаковых работ разные учащиеся — результаты не делятся.
            futures[client.submit(run_isolated, job, pure=False, retries=0)] = job
        for future in as_completed(futures):
            on_result(_result_of(future, futures[future]))


def _result_of(future: Any, job: Job) -> UnitResult:
    try:
        return future.result()
    except Exception as error:  # сбой нашей стороны или рабочего — строка, не остановка
        return failed_result(job, f"внутренняя ошибка оценивания: {type(error).__name__}: {error}")

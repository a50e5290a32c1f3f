"""Выполнение одной тетрадки в песочнице с бюджетами времени, памяти и вывода.

Ячейки выполняет nbclient, но по одной: перед каждой ячейкой лимит времени
пересчитывается из остатка бюджета всей тетрадки, а если ядро не откликнулось и на
прерывание (цикл, который игнорирует SIGINT), ядро убивается и остальные ячейки не
выполняются. Вывод ячейки сверх бюджета обрезается с пометкой, а поток вывода
размером с флуд останавливает работу.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import shutil
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from queue import Empty
from typing import Any

import nbformat
from jupyter_client.asynchronous import AsyncKernelClient
from nbclient import NotebookClient
from nbclient.exceptions import DeadKernelError

from feedback.teacher.unit.cgroup import memory_cage
from feedback.teacher.unit.sandbox import (
    Limits,
    WarmProvisioner,
    kernel_manager,
    read_record,
    watched_pids,
)
from feedback.teacher.unit.watchdog import Watchdog, memory_exceeded

TOO_DEEP_OUTPUT = "\n…вывод не показан: слишком глубокая вложенность JSON.\n"
TRUNCATED = "\n…дальше вывод обрезан: он больше, чем помещается в отчёт.\n"


@dataclass
class Execution:
    """Итог выполнения: тетрадка с выводами и что с каждой ячейкой."""

    notebook: nbformat.NotebookNode
    status: list[str]  # по ячейкам: ok, error, timeout, not-run, skipped
    stopped: str | None = None  # почему выполнение остановилось раньше (по-русски)
    seconds: float = 0.0
    peak_memory: int = 0
    details: list[str] = field(default_factory=list)
    #: события из записи ядра (feedback.kernel_guard): что код учащегося делал при выполнении
    record: list[dict[str, Any]] = field(default_factory=list)
    #: ядро — копия прогретой заготовки (feedback.teacher.unit.warm), а не запущено с нуля
    warm: bool = False


def _output_size(output: Any) -> int:
    if output.get("output_type") == "stream":
        return len(output.get("text", ""))
    if output.get("output_type") == "error":
        return sum(len(line) for line in output.get("traceback", [])) + len(
            output.get("evalue", "")
        )
    data = output.get("data", {})
    return sum(
        len(value if isinstance(value, str) else json.dumps(value)) for value in data.values()
    )


#: Сообщение IOPub, которым ipykernel 7 встречает новую подписку (JEP 65).
WELCOME = "iopub_welcome"


class Idle(Enum):
    """Чем кончилось чтение IOPub после ответа на ``kernel_info``."""

    READY = "дошёл статус «idle» запроса: ядро готово"
    WELCOME = "подписка IOPub только что установилась: спросить заново сразу"
    SILENT = "за 0,2 с статуса не было: спросить заново"


class PromptKernelClient(AsyncKernelClient):
    """Клиент ядра, который не выжидает 0,2 с тишины после того, как ядро готово.

    ``wait_for_ready`` в jupyter_client, получив ответ на ``kernel_info``, читает IOPub,
    пока тот не замолчит на 0,2 с: пятая часть времени, за которое оценивается работа
    CPU-лабораторной, уходила на ожидание. Здесь чтение заканчивается на статусе «idle»
    для запроса, на который пришёл ответ: раз он дошёл, IOPub подключён и всё, что ядро
    опубликовало раньше, прочитано, а без новых запросов ядро молчит. Не дошёл за 0,2 с
    (подписка IOPub ещё не установилась) — запрос повторяется, как в jupyter_client.

    Ядро ipykernel 7 само говорит, когда подписка установилась: присылает по IOPub
    :data:`WELCOME`. Всё, что оно опубликовало раньше, до клиента не дошло, поэтому после
    приветствия запрос повторяется сразу, а не через 0,2 с тишины.
    """

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (math.inf if timeout is None else timeout)
        sent: set[str] = set()
        while True:
            sent.add(self.kernel_info())
            reply = await self._reply(sent, timeout=1)
            if reply is not None:
                outcome = await self._idle_after(reply["parent_header"]["msg_id"])
                if outcome is Idle.READY:
                    self._handle_kernel_info_reply(reply)
                    return
                if outcome is Idle.WELCOME:
                    sent.clear()  # ответы на прежние запросы уже не в счёт: их «idle» потерян
            if not await self.is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout} seconds")

    async def _reply(self, sent: set[str], timeout: float) -> dict | None:
        """Ответ ``kernel_info`` на один из запросов ``sent``; ответы на прежние пропускаются."""
        end = time.monotonic() + timeout
        while (left := end - time.monotonic()) > 0:
            try:
                reply = await self.shell_channel.get_msg(timeout=left)
            except Empty:
                return None
            if (
                reply["msg_type"] == "kernel_info_reply"
                and reply["parent_header"].get("msg_id") in sent
            ):
                return reply
        return None

    async def _idle_after(self, request: str) -> Idle:
        """Читает IOPub до статуса «idle» запроса ``request`` (или приветствия, или тишины)."""
        while True:
            try:
                message = await self.iopub_channel.get_msg(timeout=0.2)
            except Empty:
                return Idle.SILENT
            if message["msg_type"] == WELCOME:
                return Idle.WELCOME
            if (
                message["msg_type"] == "status"
                and message["content"].get("execution_state") == "idle"
                and message["parent_header"].get("msg_id") == request
            ):
                return Idle.READY


class BudgetedClient(NotebookClient):
    """NotebookClient, который не даёт выводу раздуть отчёт или память."""

    def __init__(self, nb: nbformat.NotebookNode, km: Any, limits: Limits, **kwargs: Any):
        super().__init__(nb, km=km, **kwargs)
        self.limits = limits
        self.received = 0
        self.kept = 0
        self.cell_kept: dict[int, int] = {}
        self.truncated: set[int] = set()
        self.flooded = False

    def output(self, outs, msg, display_id, cell_index):
        content = msg.get("content", {})
        try:
            size = _output_size({"output_type": msg.get("msg_type"), **content})
        except RecursionError:
            outs.append(nbformat.v4.new_output("stream", name="stdout", text=TOO_DEEP_OUTPUT))
            return None
        self.received += size
        if self.received > self.limits.flood_bytes:
            if not self.flooded:
                self.flooded = True
                _kill(self.km)  # флуд не ждёт конца ячейки: ядро останавливается сразу
            return None
        kept = self.cell_kept.get(cell_index, 0)
        if (
            kept + size > self.limits.output_bytes
            or self.kept + size > self.limits.total_output_bytes
        ):
            if cell_index not in self.truncated:
                self.truncated.add(cell_index)
                outs.append(nbformat.v4.new_output("stream", name="stdout", text=TRUNCATED))
            return None
        self.cell_kept[cell_index] = kept + size
        self.kept += size
        try:
            return super().output(outs, msg, display_id, cell_index)
        except RecursionError:  # nbformat разбирает вывод рекурсивно
            outs.append(nbformat.v4.new_output("stream", name="stdout", text=TOO_DEEP_OUTPUT))
            return None


async def _run(
    nb: nbformat.NotebookNode,
    unit_dir: Path,
    mode: str,
    limits: Limits,
    extra_env: dict[str, str],
    readonly: list[str],
    writable: list[str],
    cpus: list[int],
    template: str | None,
) -> Execution:
    started = time.monotonic()
    deadline = started + limits.notebook_seconds
    status = ["skipped" if cell.cell_type != "code" else "not-run" for cell in nb.cells]
    startup = int(max(30, min(120, limits.notebook_seconds)))
    cage = memory_cage(limits.memory_bytes)
    try:
        km = kernel_manager(
            unit_dir, mode, limits, extra_env, readonly, writable, cpus, template, startup, cage
        )
    except BaseException:
        if cage is not None:
            cage.close()
        raise
    km.client_factory = PromptKernelClient
    client = BudgetedClient(
        nb,
        km,
        limits,
        timeout=int(limits.cell_seconds),
        allow_errors=True,
        interrupt_on_timeout=True,
        startup_timeout=startup,
        iopub_timeout=15,  # вывод ячейки после её ответа: на занятой машине он запаздывает
        record_timing=False,
    )
    execution = Execution(nb, status)
    watchdog: Watchdog | None = None
    try:
        async with client.async_setup_kernel():
            provisioner = km.provisioner
            if isinstance(provisioner, WarmProvisioner):
                execution.warm = provisioner.problem is None
                if provisioner.problem:
                    execution.details.append(f"ядро запущено без заготовки: {provisioner.problem}")
            watchdog = Watchdog(
                watched_pids(km),
                [unit_dir, km.socket_dir],
                limits,
                sandbox_tmp=mode == "bwrap",
                home=unit_dir / "home",
                cage=cage,
            )
            watchdog.start()
            for index, cell in enumerate(nb.cells):
                if cell.cell_type != "code":
                    continue
                remaining = deadline - time.monotonic()
                if remaining <= 1:
                    execution.stopped = _budget_spent(limits)
                    break
                # Ячейку обрывает меньший из лимитов: её собственный или остаток бюджета тетрадки.
                cut_by_budget = remaining < limits.cell_seconds
                client.timeout = max(1, int(min(limits.cell_seconds, remaining)))
                task = asyncio.ensure_future(client.async_execute_cell(cell, index))
                done, _ = await asyncio.wait(
                    {task}, timeout=client.timeout + limits.interrupt_grace_seconds
                )
                if not done:
                    task.cancel()
                    status[index] = "timeout"
                    execution.stopped = (
                        _budget_spent(limits)
                        if cut_by_budget
                        else "ядро не ответило на прерывание после лимита времени ячейки — "
                        "оно остановлено, остальные ячейки не выполнялись"
                    )
                    break
                try:
                    task.result()
                except DeadKernelError:
                    status[index] = "error"
                    execution.stopped = (
                        watchdog.final_reason()
                        or (FLOOD if client.flooded else None)
                        or "ядро завершилось (os._exit, сбой или нехватка памяти) — "
                        "остальные ячейки не выполнялись"
                    )
                    break
                status[index] = _cell_status(cell)
                if client.flooded:
                    execution.stopped = FLOOD
                    break
                # Проверка бюджетов после ячейки, не дожидаясь сторожа: заполненный tmpfs
                # отказывает в записи сразу, и следующая ячейка не должна успеть начаться.
                if watchdog.poll():
                    execution.stopped = watchdog.reason
                    break
    except DeadKernelError:
        execution.stopped = (watchdog.final_reason() if watchdog else None) or "ядро не запустилось"
    except RecursionError:  # подкласс RuntimeError: вывод ячейки, а не запуск ядра
        execution.stopped = "вывод ячейки слишком глубоко вложен (JSON) — выполнение остановлено"
    except RuntimeError as error:  # ядро не ответило при запуске
        execution.stopped = f"ядро не запустилось: {error}"
    finally:
        if watchdog is not None:
            watchdog.stop()
            execution.peak_memory = watchdog.peak_memory
            if watchdog.reason and not execution.stopped:
                execution.stopped = watchdog.reason
        await _shutdown(km)
        if cage is not None:
            if not execution.stopped and cage.oom_kills():
                execution.stopped = memory_exceeded(limits)
            cage.close()
        shutil.rmtree(km.socket_dir, ignore_errors=True)
        if km.record_fd is not None:
            os.close(km.record_fd)
        execution.record = read_record(unit_dir)
    execution.seconds = time.monotonic() - started
    return execution


def _budget_spent(limits: Limits) -> str:
    return (
        f"исчерпан бюджет времени на тетрадку ({int(limits.notebook_seconds)} с, "
        "COURSE7_NOTEBOOK_TIMEOUT) — остальные ячейки не выполнялись"
    )


FLOOD = "ячейка вывела слишком много текста — выполнение остановлено"


def _kill(km: Any) -> None:
    process = getattr(getattr(km, "provisioner", None), "process", None)
    if process is not None:
        try:
            process.kill()
        except OSError:
            pass


def _cell_status(cell: nbformat.NotebookNode) -> str:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            if output.get("ename") in ("CellTimeoutError", "KeyboardInterrupt"):
                return "timeout"
            return "error"
    return "ok"


async def _shutdown(km: Any) -> None:
    """Ядро убивается сразу и дожидается без опроса.

    ``shutdown_kernel(now=True)`` в jupyter_client после сигнала проверяет процесс раз в
    0,1 с: первая проверка почти всегда застаёт его живым, и каждая работа простаивала
    лишнюю десятую секунды. Здесь группа процессов ядра получает SIGKILL, а завершение
    ждёт ``wait()`` процесса; после ``provisioner.wait()`` ядра у менеджера больше нет, и
    ``shutdown_kernel`` нужен только если что-то пошло не так.
    """
    provisioner = getattr(km, "provisioner", None)
    process = getattr(provisioner, "process", None)
    if process is not None:
        try:
            if process.poll() is None:
                await provisioner.kill()
                process.wait(timeout=5)
            await provisioner.wait()
        except Exception:
            pass
    try:
        if await km.is_alive():
            await km.shutdown_kernel(now=True)
    except Exception:
        pass
    try:
        await km.cleanup_resources()
    except Exception:
        pass


def execute(
    nb: nbformat.NotebookNode,
    unit_dir: Path,
    mode: str,
    limits: Limits,
    extra_env: dict[str, str] | None = None,
    readonly: list[str] | None = None,
    writable: list[str] | None = None,
    cpus: list[int] | None = None,
    template: str | None = None,
) -> Execution:
    """Выполняет тетрадку в ядре песочницы и возвращает её с выводами и статусами ячеек.

    ``readonly`` и ``writable`` — дополнительные папки, которые видит ядро (кэши);
    ``cpus`` — ядра процессора, за которыми закрепить ядро Jupyter; ``template`` — сокет
    прогретой заготовки (:mod:`feedback.teacher.unit.warm`), из которой взять ядро.
    """
    return asyncio.run(
        _run(
            nb,
            unit_dir,
            mode,
            limits,
            extra_env or {},
            readonly or [],
            writable or [],
            cpus or [],
            template,
        )
    )

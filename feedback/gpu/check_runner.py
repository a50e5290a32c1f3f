"""``make gpu-check``: опыты в отдельных процессах — по слотам размером с T4 и со сроком.

Опыты с пулом XLA идут сразу по нескольку (сколько пулов поместится на карте,
:func:`feedback.gpu.check_card.plan_slots`), опыты «остальная карта занята» — по одному, пока
держатель занимает всё, кроме памяти T4. У каждого процесса срок: кто не ответил ни итогом,
ни ошибкой, тот «стена без ошибки / завис» — с числом секунд, а не бесконечное ожидание
(распределитель BFC ждёт освобождения памяти по 10 с на каждую неудачу, и загрузка 7.3
висела 390 с). Процесс опыта останавливается вместе со своей группой процессов.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from feedback.formatting import plural
from feedback.gpu.check_card import SLOT_OVERHEAD, Card, Held, plan_slots, pool_fraction
from feedback.gpu.check_experiments import (
    CONTEXT_RESERVE,
    STAGE_PREFIX,
    STARTED_SUFFIX,
    Experiment,
    WorkerResult,
)
from feedback.gpu.xla_memory import ALLOCATOR_ENV_VAR, FRACTION_ENV_VARS, PREALLOCATE_ENV_VAR
from feedback.settings import (
    CPU_ONLY,
    GPU_CHECK_PLATFORM,
    GPU_CHECK_POOL,
    GPU_CHECK_XLA,
    KERAS_ON_JAX,
    QUIET_TENSORFLOW,
)

#: Исходы: поместился, стена (ошибка нехватки памяти), ни итога, ни ошибки до срока, другая
#: ошибка (не замер: в запись не попадает).
STATUSES = ("fits", "wall", "stall", "error")
#: Как часто проверяются процессы опытов (секунд).
POLL_S = 0.1
#: Если до конца срока всей проверки меньше этого (секунд), опыт уже не запускается.
MIN_TIMEOUT_S = 1.0
#: Признаки нехватки памяти в ошибке опыта (XLA, CUDA, имитация тестов).
OUT_OF_MEMORY_MARKS = ("resource_exhausted", "out of memory", "out_of_memory")
#: Строка журнала XLA, когда BFC не нашёл памяти и ждёт её освобождения.
BFC_WAIT_LOG = "ran out of memory trying to allocate"
#: Сколько последних строк журнала опыта показывать при ошибке.
LOG_TAIL_LINES = 5


@dataclass(frozen=True)
class Outcome:
    """Чем кончился опыт: исход, секунды, замеры исполнителя и как была устроена память.

    ``seconds`` — для стены: через сколько секунд от начала опыта пришла ошибка; для
    зависания: сколько ждали до остановки; для «поместился»: сколько шёл опыт.
    ``started``/``ended`` — моменты :func:`time.monotonic` запуска и конца процесса.
    """

    experiment: Experiment
    status: str
    seconds: float
    result: WorkerResult | None
    mem_fraction: str | None
    held: Held | None
    bfc_waits: int
    note: str
    started: float
    ended: float


def classify(result: WorkerResult | None) -> str:
    """Исход по итогу исполнителя: нет итога — зависание, нехватка памяти — стена."""
    if result is None:
        return "stall"
    if result.ok:
        return "fits"
    text = result.error.lower()
    return "wall" if any(mark in text for mark in OUT_OF_MEMORY_MARKS) else "error"


def experiment_env(
    experiment: Experiment,
    card: Card | None,
    base: Mapping[str, str] | None = None,
) -> tuple[dict[str, str], str | None]:
    """Окружение процесса опыта и доля пула XLA (``None``, если пула нет).

    Без видеокарты (``card is None``) — jax на процессоре. С видеокартой — флаги XLA
    тетрадок и память T4: пул (BFC, заранее, доля карты под обоими именами переменной:
    ``XLA_CLIENT_MEM_FRACTION`` — новое, ``XLA_PYTHON_CLIENT_MEM_FRACTION`` — прежнее) или
    BFC без предвыделения / ``platform`` при занятой держателем карте.
    """
    env = dict(os.environ if base is None else base)
    for name in (*FRACTION_ENV_VARS, ALLOCATOR_ENV_VAR, PREALLOCATE_ENV_VAR):
        env.pop(name, None)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    env.update(KERAS_ON_JAX)
    if card is None:
        env.update(CPU_ONLY)
        env.update(QUIET_TENSORFLOW)
        return env, None
    env.update(GPU_CHECK_XLA)
    fraction = None
    if experiment.emulation == "pool":
        fraction = pool_fraction(card, experiment.budget_bytes)
        if experiment.preallocate:  # иначе — как в тетрадках 7.3, 7.5, 7.6 (LAB_WALL_XLA)
            env.update(GPU_CHECK_POOL)
        env.update(dict.fromkeys(FRACTION_ENV_VARS, fraction))
    if experiment.allocator == "platform":
        env.update(GPU_CHECK_PLATFORM)
    return env, fraction


@dataclass
class _Running:
    experiment: Experiment
    process: subprocess.Popen
    result_path: Path
    log_path: Path
    started: float
    timeout: float
    mem_fraction: str | None
    held: Held | None
    cut: bool  # срок урезан сроком всей проверки


class Runner:
    """Запускает опыты процессами и собирает :class:`Outcome` в порядке опытов.

    ``card`` — карта (``None`` — опыты на процессоре), ``holder`` — держатель остальной
    карты (:class:`~feedback.gpu.check_card.Holder` или поддельный), ``slots`` — сколько
    опытов с пулом идёт сразу (по умолчанию — сколько пулов помещается на карте),
    ``time_limit`` — срок всей проверки, секунд.
    """

    def __init__(
        self,
        workdir: Path,
        card: Card | None,
        holder,
        slots: int | None = None,
        time_limit: float = 480.0,
        base_env: Mapping[str, str] | None = None,
        on_done: Callable[[Outcome], None] | None = None,
    ) -> None:
        self.workdir = Path(workdir)
        self.card = card
        self.holder = holder
        self.slots = slots
        self.time_limit = time_limit
        self.base_env = base_env
        self.on_done = on_done

    def slots_for(self, experiments: Sequence[Experiment]) -> int:
        if self.slots is not None:
            return max(1, self.slots)
        if self.card is None:
            return 1
        pools = [e.budget_bytes for e in experiments if e.emulation == "pool"]
        return plan_slots(self.card, min(pools)) if pools else 1

    def capacity(self) -> int | None:
        """Сколько памяти карты делят опыты с пулом, идущие сразу (``None`` — не считать).

        Пулы разные (T4, карта 32 ГБ), поэтому кроме числа слотов опыт ждёт и места: новый
        запускается, только если его пул с запасом помещается рядом с идущими.
        """
        if self.slots is not None or self.card is None:
            return None
        return self.card.free_bytes - SLOT_OVERHEAD

    def run(self, experiments: Sequence[Experiment]) -> list[Outcome]:
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.deadline = time.monotonic() + self.time_limit
        outcomes: dict[str, Outcome] = {}
        # Самые долгие (по сроку) — первыми: тогда короткие заполняют слоты в конце, а не ждут.
        pooled = sorted(
            (e for e in experiments if e.emulation == "pool"), key=lambda e: -e.timeout_s
        )
        slots = self.slots_for(experiments)
        for outcome in self._run_together(pooled, slots, None, self.capacity()):
            outcomes[outcome.experiment.name] = outcome
        for experiment in (e for e in experiments if e.emulation == "held"):
            outcomes[experiment.name] = self._run_held(experiment)
        return [outcomes[e.name] for e in experiments]

    def _run_held(self, experiment: Experiment) -> Outcome:
        """Опыт один на карте: держатель оставляет бюджет и контекст CUDA опыта."""
        if self.card is None:
            return self._run_together([experiment], 1, None)[0]
        started = time.monotonic()
        try:
            with self.holder.hold(experiment.budget_bytes + CONTEXT_RESERVE) as held:
                return self._run_together([experiment], 1, held)[0]
        except Exception as error:  # держатель не занял карту — опыт не измерен
            outcome = Outcome(
                experiment, "error", 0.0, None, None, None, 0,
                f"держатель памяти не занял карту: {error}", started, time.monotonic(),
            )  # fmt: skip
            self._report(outcome)
            return outcome

    def _run_together(
        self,
        experiments: Sequence[Experiment],
        slots: int,
        held: Held | None,
        capacity: int | None = None,
    ) -> list[Outcome]:
        pending = list(experiments)
        running: list[_Running] = []
        done: dict[str, Outcome] = {}
        try:
            self._loop(pending, running, done, slots, held, capacity)
        finally:  # прервали проверку (Ctrl+C) — процессы опытов не остаются на карте
            for item in running:
                _stop(item.process)
        return [done[e.name] for e in experiments]

    def _loop(
        self, pending, running, done, slots: int, held: Held | None, capacity: int | None = None
    ) -> None:
        def fits(experiment: Experiment) -> bool:
            if capacity is None or not running:
                return True
            used = sum(item.experiment.budget_bytes + SLOT_OVERHEAD for item in running)
            return used + experiment.budget_bytes + SLOT_OVERHEAD <= capacity

        while pending or running:
            while len(running) < slots and (ready := [e for e in pending if fits(e)]):
                experiment = ready[0]
                pending.remove(experiment)
                launched = self._launch(experiment, held)
                if isinstance(launched, Outcome):
                    done[experiment.name] = launched
                    self._report(launched)
                else:
                    running.append(launched)
            time.sleep(POLL_S)
            for item in list(running):
                finished = item.process.poll() is not None
                if finished or time.monotonic() - item.started > item.timeout:
                    done[item.experiment.name] = self._finish(item, timed_out=not finished)
                    running.remove(item)
                    self._report(done[item.experiment.name])

    def _report(self, outcome: Outcome) -> None:
        if self.on_done is not None:
            self.on_done(outcome)

    def _launch(self, experiment: Experiment, held: Held | None) -> _Running | Outcome:
        now = time.monotonic()
        timeout = min(experiment.timeout_s, self.deadline - now)
        if self.deadline - now < MIN_TIMEOUT_S:
            note = "не запускался: вышел срок всей проверки (--time-limit)"
            return Outcome(experiment, "error", 0.0, None, None, held, 0, note, now, now)
        spec = self.workdir / f"{experiment.name}.experiment.json"
        spec.write_text(experiment.to_json(), encoding="utf-8")
        result_path = self.workdir / f"{experiment.name}.result.json"
        log_path = self.workdir / f"{experiment.name}.log"
        for stale in (result_path, result_path.with_name(result_path.name + STARTED_SUFFIX)):
            stale.unlink(missing_ok=True)
        env, fraction = experiment_env(experiment, self.card, self.base_env)
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "feedback.gpu.check_experiments",
                    str(spec),
                    str(result_path),
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        return _Running(
            experiment, process, result_path, log_path, time.monotonic(), timeout, fraction, held,
            cut=timeout < experiment.timeout_s,
        )  # fmt: skip

    def _finish(self, item: _Running, timed_out: bool) -> Outcome:
        ended = time.monotonic()
        if timed_out:
            _stop(item.process)
        result = None
        if item.result_path.exists():
            result = WorkerResult.from_json(item.result_path.read_text(encoding="utf-8"))
        log = item.log_path.read_text(encoding="utf-8", errors="replace")
        waits = log.lower().count(BFC_WAIT_LOG)
        status = classify(result)
        note = ""
        if status == "stall":
            seconds = _since_start(item, ended)
            if not timed_out:
                # Процесс упал без итога: XLA может оборвать его прямо на нехватке памяти.
                crashed_on_memory = any(mark in log.lower() for mark in OUT_OF_MEMORY_MARKS)
                status = "wall" if crashed_on_memory else "error"
                note = f"процесс вышел с кодом {item.process.returncode} без итога: {_tail(log)}"
            elif item.cut:  # не дождались из-за срока всей проверки: это не замер
                status = "error"
                note = (
                    f"остановлен через {seconds:.0f} с: вышел срок всей проверки (--time-limit), "
                    "свой срок опыта не истёк"
                )
            else:
                note = f"ни итога, ни ошибки за {item.timeout:.0f} с (срок опыта)"
        else:
            seconds = result.elapsed_s
            if status == "error":
                note = result.error[-300:]
        if status in ("stall", "error") or (status == "wall" and result is None):
            stages = [line for line in log.splitlines() if line.startswith(STAGE_PREFIX)]
            if stages:
                note += f"; последний этап: {stages[-1].removeprefix(STAGE_PREFIX)}"
        if waits:
            times = plural(waits, "раз", "раза", "раз")
            note = (note + "; " if note else "") + f"XLA {times} писал «{BFC_WAIT_LOG}»"
        return Outcome(
            item.experiment, status, seconds, result, item.mem_fraction, item.held, waits, note,
            item.started, ended,
        )  # fmt: skip


def _since_start(item: _Running, ended: float) -> float:
    """Секунды зависания: от отметки «опыт начался» (после импортов), иначе от запуска."""
    marker = item.result_path.with_name(item.result_path.name + STARTED_SUFFIX)
    try:
        started_wall = float(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ended - item.started
    return max(0.0, time.time() - (time.monotonic() - ended) - started_wall)


def _stop(process: subprocess.Popen) -> None:
    """Останавливает процесс опыта и его потомков (своя группа процессов)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


def _tail(log: str) -> str:
    return " | ".join(log.strip().splitlines()[-LOG_TAIL_LINES:])[-300:]

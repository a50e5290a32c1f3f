"""``make gpu-check``: опыты лабораторных с памятью на настоящей архитектуре Gemma 3 в памяти T4.

Запускает то, что делают сами лабораторные, на Gemma 3 4B и 1B со случайными весами
(скачивать ничего не нужно): загрузку весов 7.3 во float32 (три распределителя XLA рядом —
какой из них даёт ошибку быстро, а какой молча ждёт), обучение 7.5 (bfloat16 + LoRA, батч 1),
опыты 7.6 (батч 8 длины 400 и батч 1 × накопление 8) и генерацию 7.1 (токены в секунду по
вычисленным шагам). Каждый опыт — отдельный процесс с памятью одной T4 и сроком; на большой
карте — по нескольку сразу. Печатает таблицу, рисует график и пишет запись измерения
(:mod:`feedback.measured`) с происхождением. Без видеокарты сообщает, что не запускалась;
``--config tiny`` гоняет ту же программу на процессоре с крошечной Gemma (для тестов).
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, distributions, version
from pathlib import Path

from feedback.formatting import format_plain, plural
from feedback.gpu.check_card import Card, Holder, NoHolder, cuda_card
from feedback.gpu.check_experiments import (
    CONFIGS,
    CONTEXT_RESERVE,
    LAB_OPTIMIZER,
    Experiment,
    lab_experiments,
    tiny_experiments,
)
from feedback.gpu.check_report import (
    chart,
    fast_wall,
    file_stem,
    outcome_text,
    record,
    table,
    write_atomic,
    write_record,
)
from feedback.gpu.check_runner import Outcome, Runner
from feedback.measured import Provenance

__all__ = ["CONFIGS", "LAB_OPTIMIZER", "main", "provenance"]

ROOT = Path(__file__).resolve().parents[2]
#: Папка результатов по умолчанию (рядом с рабочей папкой оценивания, вне git).
DEFAULT_OUT = ROOT / ".course-work" / "gpu-check"
#: Срок всей проверки, секунд: 8 минут на одной видеокарте.
DEFAULT_TIME_LIMIT = 480
NO_GPU = (
    "Видеокарта CUDA не найдена: проверка gpu-check не запускалась. Запустите `make gpu-check` "
    "на машине с GPU и jax с CUDA (или `--config tiny` — та же программа на процессоре)."
)


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "нет"


def _jax_plugin() -> str:
    """Пакет CUDA для jax (``jax-cuda13-plugin 0.11.2``) или пустая строка."""
    for distribution in distributions():
        name = distribution.metadata.get("Name", "") or ""
        if name.lower().replace("_", "-").startswith("jax-cuda") and "plugin" in name.lower():
            return f"{name} {distribution.version}"
    return ""


def _commit() -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def provenance(card: Card | None, slots: int, argv: Sequence[str]) -> Provenance:
    """Откуда замеры: карта, драйвер, версии, дата и как эмулировалась T4."""
    emulation = (
        "pool rows: an XLA BFC pool of the row's budget, preallocated, with "
        "XLA_CLIENT_MEM_FRACTION and XLA_PYTHON_CLIENT_MEM_FRACTION = budget / card memory "
        "(15 060 MiB = a T4 less the CUDA context for 7.1/7.5/7.6, 13 824 MiB = 0.9 of a T4 as "
        f"lab 7.3 sets it), up to {slots} processes at once; held rows: one process on the card, "
        "a holder process (CUDA driver cuMemAlloc via ctypes) took all the card but the budget "
        f"+ {CONTEXT_RESERVE // 2**20} MiB for the experiment's CUDA context, allocator BFC "
        "with XLA_PYTHON_CLIENT_PREALLOCATE=false or "
        "XLA_PYTHON_CLIENT_ALLOCATOR=platform; while pool rows ran, the rest of the card was "
        "not held: the pool caps XLA's buffers, the CUDA context and library workspaces lie "
        "outside it (on a real T4 they come out of the same 15 360 MiB)"
    )
    method = (
        "python -m feedback.gpu.check: Gemma3Backbone(**CONFIGS[config], dtype) with random "
        "weights; load rows: the backbone only; train rows: Gemma3CausalLM(preprocessor=None), "
        "enable_lora(4), AdamW(LAB_OPTIMIZER), keras.Model.fit on random token ids; generate "
        "rows: greedy make_generate_function on a prompt padded to a multiple of 16, "
        "tokens/s over the computed steps; peak = jax memory_stats()['peak_bytes_in_use']; "
        "each experiment in its own process with a wall-clock timeout"
    )
    command = " ".join(["python -m feedback.gpu.check", *argv]).strip()
    commit = _commit()
    return Provenance(
        date=datetime.now(UTC).date().isoformat(),
        gpu=card.name if card else "CPU",
        gpu_memory_mib=card.total_mib if card else 0,
        driver=card.driver if card else "",
        python=platform.python_version(),
        jax=_version("jax"),
        jax_plugin=_jax_plugin(),
        keras=_version("keras"),
        keras_hub=_version("keras-hub"),
        t4_emulation=emulation if card else "none: CPU, tiny Gemma (--config tiny)",
        method=method,
        source=f"{command}" + (f", commit {commit}" if commit else ""),
    )


def _select(experiments: Sequence[Experiment], only: str | None) -> list[Experiment]:
    if not only:
        return list(experiments)
    wanted = [name.strip() for name in only.split(",") if name.strip()]
    known = {experiment.name for experiment in experiments}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        raise SystemExit(f"Неизвестные опыты: {', '.join(unknown)}. Есть: {', '.join(known)}.")
    return [experiment for experiment in experiments if experiment.name in wanted]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m feedback.gpu.check", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--config",
        choices=("real", "tiny"),
        default="real",
        help="real — Gemma 3 4B и 1B на видеокарте; tiny — крошечная Gemma на процессоре",
    )
    parser.add_argument("--only", help="только эти опыты, через запятую (имена — в --list)")
    parser.add_argument("--list", action="store_true", help="перечислить опыты и выйти")
    parser.add_argument(
        "--out", type=Path, default=DEFAULT_OUT, help=f"папка результатов ({DEFAULT_OUT})"
    )
    parser.add_argument(
        "--slots", type=int, help="сколько опытов с пулом сразу (по умолчанию — сколько поместится)"
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=DEFAULT_TIME_LIMIT,
        help=f"срок всей проверки, секунд ({DEFAULT_TIME_LIMIT})",
    )
    return parser


def _progress(outcome: Outcome) -> None:
    print(f"  {outcome.experiment.title}: {outcome_text(outcome)}", flush=True)


def main(
    argv: list[str] | None = None,
    probe: Callable[[], Card | None] = cuda_card,
    holder: object | None = None,
) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = _parser().parse_args(argv)
    tiny = args.config == "tiny"
    experiments = _select(tiny_experiments() if tiny else lab_experiments(), args.only)
    if args.list:
        for experiment in experiments:
            print(f"{experiment.name:<18} {experiment.title} (срок {experiment.timeout_s:.0f} с)")
        return 0
    card = None if tiny else probe()
    if card is None and not tiny:
        print(NO_GPU)
        return 0
    if holder is None:
        holder = NoHolder() if card is None else Holder()
    stem_dir = args.out
    stem_dir.mkdir(parents=True, exist_ok=True)
    runner = Runner(stem_dir / "work", card, holder, args.slots, args.time_limit, on_done=_progress)
    slots = runner.slots_for(experiments)
    where = f"{card.name}, {format_plain(card.total_bytes / 1024**3, 1)} ГиБ" if card else "CPU"
    print(
        f"gpu-check: {plural(len(experiments), 'опыт', 'опыта', 'опытов')} на {where}; "
        f"с пулом T4 — до {slots} сразу, "
        f"«карта занята» — по одному; срок всей проверки {args.time_limit:.0f} с.",
        flush=True,
    )
    outcomes = runner.run(experiments)
    origin = provenance(card, slots, argv)
    stem = file_stem(origin, tiny)
    text = table(outcomes)
    verdict = fast_wall(outcomes)
    print()
    print(text)
    if verdict:
        print()
        print(verdict)
    write_atomic(stem_dir / f"{stem}.txt", text + ("\n\n" + verdict if verdict else "") + "\n")
    write_record(stem_dir / f"{stem}.json", record(origin, outcomes))
    chart(stem_dir / f"{stem}.png", outcomes, origin.label())
    errors = [o for o in outcomes if o.status == "error"]
    if errors:
        write_atomic(
            stem_dir / f"{stem}-errors.txt",
            "\n".join(f"{o.experiment.name}: {o.note}" for o in errors) + "\n",
        )
    print(f"\nЗапись: {stem_dir / (stem + '.json')}; график: {stem_dir / (stem + '.png')}.")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

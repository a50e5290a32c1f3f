"""Сколько стоит оценивание: ``make bench`` печатает таблицу, которую можно перепроверить.

Класс из копий эталонного решения одной CPU-лабораторной и одной GPU-лабораторной
оценивается во временной рабочей папке (база оценок преподавателя не трогается) при
``JOBS=1`` и ``JOBS=2``. Печатаются: постоянная часть запуска (регистрация лабораторных,
отчёты, таблицы — на пустом классе), секунды на работу, ускорение от второго процесса
и, если есть, время групп тестов из последнего ``make test``
(``.course-work/test-times.xml``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

from feedback.settings import GRADING_DIR, SANDBOX
from feedback.teacher.settings import ROOT

TEST_TIMES = (ROOT / ".course-work" / "test-times.xml", ROOT / ".course-work" / "nbval-times.xml")


def _class_folder(folder: Path, lab: str, count: int) -> Path:
    """Папка с ``count`` работами — копиями эталонного решения ``lab``."""
    shutil.rmtree(folder, ignore_errors=True)
    source = ROOT / "solutions" / lab / f"{lab}.ipynb"
    for number in range(1, count + 1):
        target = folder / f"bench{number:02d}" / lab / f"{lab}.ipynb"
        target.parent.mkdir(parents=True)
        shutil.copy(source, target)
    return folder


def _timed_command(folder: Path, jobs: int = 1, **env: str) -> float:
    """``make grade`` на папке в отдельном процессе — со стартом Python и импортами."""
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "feedback.teacher.grade", str(folder), "--jobs", str(jobs)],
        check=True,
        capture_output=True,
        env={**os.environ, **env},
    )
    return time.monotonic() - started


#: Сколько раз оценивается каждый класс; берётся самый быстрый раз. На этой машине два
#: одинаковых замера подряд расходились в полтора раза (соседи по ядрам), а медленный замер
#: говорит о машине, а не об оценивании.
REPEATS = 2


#: Как оценивается класс: ``JOBS`` и переменные окружения (например, без песочницы).
Setting = tuple[int, tuple[tuple[str, str], ...]]


def _per_submission(
    root: Path, lab: str, count: int, settings: tuple[Setting, ...], repeats: int = REPEATS
) -> dict[Setting, tuple[float, float]]:
    """Секунды на работу и постоянная часть запуска при каждой настройке из ``settings``.

    Цена работы — прирост времени от класса из ``count`` работ к классу из ``2·count``,
    делённый на ``count``: в нём нет разовых расходов запуска (старт процессов, шаблоны
    отчётов), а при ``count``, кратном каждому ``JOBS``, оба класса занимают все процессы
    поровну. Каждый класс оценивается ``repeats`` раз, в счёт идёт самый быстрый. Замеры при
    разных настройках чередуются: скорость машины меняется за минуты, и сравниваются
    запуски из одних и тех же минут, а не «все JOBS=1, потом все JOBS=2».
    """
    half_class = _class_folder(root / "half", lab, count)
    full_class = _class_folder(root / "full", lab, 2 * count)
    half: dict[Setting, float] = {}
    full: dict[Setting, float] = {}
    for _ in range(repeats):
        for setting in settings:
            jobs, env = setting
            seconds = _timed_command(half_class, jobs, **dict(env))
            half[setting] = min(half.get(setting, seconds), seconds)
            seconds = _timed_command(full_class, jobs, **dict(env))
            full[setting] = min(full.get(setting, seconds), seconds)
    result = {}
    for setting in settings:
        per = (full[setting] - half[setting]) / count
        result[setting] = (per, half[setting] - count * per)
    return result


ONE: Setting = (1, ())
TWO: Setting = (2, ())
BARE: Setting = (1, ((SANDBOX.name, "none"),))


def measure(cpu_lab: str, gpu_lab: str, count: int, gpu_count: int) -> list[tuple[str, str]]:
    """Строки таблицы (что измерено, значение)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="course7-bench-") as tmp:
        root = Path(tmp)
        os.environ[GRADING_DIR.name] = str(root / "work")  # для процессов make grade
        empty = root / "empty"
        empty.mkdir()
        cold = _timed_command(empty)
        # Прогрев: эталоны проходят проверки, кэш компиляции наполняется (один раз на версию).
        warm_up = _timed_command(_class_folder(root / "warm", cpu_lab, 1))
        warm_up += _timed_command(_class_folder(root / "warm", gpu_lab, 1))
        empty_run = min(_timed_command(empty) for _ in range(2))
        rows += [
            ("Первый запуск: регистрация лабораторных в базе", f"{cold:.1f} с"),
            ("Первый запуск: прогрев эталонами (раз на версию лабораторной)", f"{warm_up:.1f} с"),
            ("Запуск make grade без работ (старт, база, таблицы)", f"{empty_run:.1f} с"),
        ]
        for lab, n in ((cpu_lab, count), (gpu_lab, gpu_count)):
            # Для CPU-лабораторной — ещё и без песочницы: во что обходится bubblewrap.
            settings = (ONE, TWO, BARE) if lab == cpu_lab else (ONE, TWO)
            measured = _per_submission(root, lab, n, settings)
            for setting in (ONE, TWO):
                jobs, (each, fixed) = setting[0], measured[setting]
                rows.append((f"{lab}, JOBS={jobs}: секунд на работу", f"{each:.2f}"))
                rows.append((f"{lab}, JOBS={jobs}: постоянная часть запуска", f"{fixed:.1f} с"))
            speed_up = measured[ONE][0] / measured[TWO][0]
            rows.append((f"{lab}: ускорение JOBS=2 к JOBS=1", f"{speed_up:.2f}×"))
            if BARE in measured:
                bare, sandboxed = measured[BARE][0], measured[ONE][0]
                rows.append((f"{lab}, JOBS=1 без песочницы: секунд на работу", f"{bare:.2f}"))
                rows.append(
                    ("Песочница bubblewrap: добавляет к работе", f"{sandboxed - bare:+.2f} с")
                )
    return rows


def group_times(paths: tuple[Path, ...] = TEST_TIMES) -> list[tuple[str, str]]:
    """Время групп тестов (по файлам) из отчётов JUnit последнего ``make test``.

    Это сумма времени тестов группы; тесты идут в несколько процессов, поэтому сумма по
    всем группам больше, чем длится ``make test``.
    """
    seconds: dict[str, float] = defaultdict(float)
    for path in paths:
        if not path.exists():
            continue
        for case in ET.parse(path).getroot().iter("testcase"):
            parts = (case.get("classname") or "?").split(".")
            known = parts[0] in ("tests", "solutions") and len(parts) > 1
            seconds[parts[1] if known else parts[0]] += float(case.get("time") or 0)
    if not seconds:
        return [("Группы тестов", "нет отчёта — запустите make test")]
    top = sorted(seconds.items(), key=lambda item: -item[1])
    return [(f"Тесты: {name}", f"{value:.1f} с") for name, value in top]


def table(rows: list[tuple[str, str]]) -> str:
    width = max(len(name) for name, _ in rows)
    lines = [f"| {'Что измерено'.ljust(width)} | Значение |", f"|{'-' * (width + 2)}|----------|"]
    lines += [f"| {name.ljust(width)} | {value} |" for name, value in rows]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpu-lab", default="lab_7_2_training_flops")
    parser.add_argument("--gpu-lab", default="lab_7_6_gradient_accumulation")
    parser.add_argument(
        "--submissions", type=int, default=8, help="работ CPU-лабораторной (и класс вдвое больше)"
    )
    parser.add_argument("--gpu-submissions", type=int, default=4, help="то же для GPU-лабораторной")
    args = parser.parse_args(argv)
    rows = measure(args.cpu_lab, args.gpu_lab, args.submissions, args.gpu_submissions)
    print(table(rows + group_times()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Сколько стоит оценивание: ``make bench`` печатает таблицу, которую можно перепроверить.

Класс из копий эталонного решения одной CPU-лабораторной и одной GPU-лабораторной
оценивается во временной рабочей папке (база оценок преподавателя не трогается) при
``JOBS=1`` и ``JOBS=2``. Печатаются: первый запуск (регистрация лабораторных, проверка
эталонов), секунды на работу, постоянная часть каждого запуска (старт, база, отчёты,
таблицы), ускорение от второго процесса и, если есть, время групп тестов из последнего
``make test``
(``.course-work/test-times.xml``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from feedback.settings import GRADING_DIR, SANDBOX
from feedback.teacher.core.labs import course_labs, find_lab
from feedback.teacher.core.settings import DEFAULT_WORK, ROOT

#: Время групп тестов, которое пишет make test (в .course-work/ репозитория).
TEST_TIMES = (DEFAULT_WORK / "test-times.xml", DEFAULT_WORK / "nbval-times.xml")


def _source(lab: str) -> Path:
    """Эталонное решение лабораторной (id или номер) из solutions/."""
    return find_lab(lab, course_labs(ROOT)).source


def _class_folder(folder: Path, lab: str, count: int) -> Path:
    """Папка с ``count`` работами — копиями эталонного решения ``lab``."""
    shutil.rmtree(folder, ignore_errors=True)
    source = _source(lab)
    for number in range(1, count + 1):
        target = folder / f"bench{number:02d}" / lab / f"{lab}.ipynb"
        target.parent.mkdir(parents=True)
        shutil.copy(source, target)
    return folder


def _timed_command(folder: Path, jobs: int = 1, **env: str) -> float:
    """``make grade`` на папке в отдельном процессе — со стартом Python и импортами."""
    started = time.monotonic()
    subprocess.run(
        [sys.executable, "-m", "feedback.teacher.commands.grade", str(folder), "--jobs", str(jobs)],
        check=True,
        capture_output=True,
        env={**os.environ, **env},
    )
    return time.monotonic() - started


#: Сколько раз оценивается каждый класс; берётся самый быстрый раз. На этой машине два
#: одинаковых замера подряд расходились в полтора раза (соседи по ядрам), а медленный замер
#: говорит о машине, а не об оценивании.
REPEATS = 2

#: Как оценивается класс: папка с работами → секунды.
Runner = Callable[[Path], float]


def _per_submission(
    root: Path, lab: str, count: int, runners: dict[str, Runner], repeats: int = REPEATS
) -> dict[str, tuple[float, float]]:
    """Секунды на работу и постоянная часть запуска для каждого способа из ``runners``.

    Цена работы — прирост времени от класса из ``count`` работ к классу из ``2·count``,
    делённый на ``count``: в нём нет разовых расходов запуска (старт процессов, шаблоны
    отчётов, заготовки ядер), а при ``count``, кратном каждому ``JOBS``, оба класса занимают
    все процессы поровну. Каждый класс оценивается ``repeats`` раз, в счёт идёт самый быстрый.
    Замеры разных способов чередуются: скорость машины меняется за минуты, и сравниваются
    запуски из одних и тех же минут, а не «все JOBS=1, потом все JOBS=2».
    """
    half_class = _class_folder(root / "half", lab, count)
    full_class = _class_folder(root / "full", lab, 2 * count)
    half: dict[str, float] = {}
    full: dict[str, float] = {}
    for _ in range(repeats):
        for name, runner in runners.items():
            seconds = runner(half_class)
            half[name] = min(half.get(name, seconds), seconds)
            seconds = runner(full_class)
            full[name] = min(full.get(name, seconds), seconds)
    result = {}
    for name in runners:
        per = (full[name] - half[name]) / count
        result[name] = (per, half[name] - count * per)
    return result


def make_grade(jobs: int = 1, **env: str) -> Runner:
    """``make grade JOBS=jobs`` с переменными ``env`` (например, без песочницы)."""
    return lambda folder: _timed_command(folder, jobs, **env)


def plain_nbgrader(lab: str, root: Path) -> Runner:
    """Обычный ``nbgrader autograde`` тех же работ: без песочницы, заготовок и наших проверок.

    Курс nbgrader с настройками по умолчанию во временной папке: исходник лабораторной из
    solutions/, выпуск ``generate_assignment`` один раз, затем работы класса в ``submitted/``
    и ``autograde`` — он выполняет каждую тетрадку целиком в новом ядре.
    """
    course = root / "plain-nbgrader"
    shutil.rmtree(course, ignore_errors=True)
    (course / "source" / lab).mkdir(parents=True)
    shutil.copy(_source(lab), course / "source" / lab)
    (course / "nbgrader_config.py").write_text(
        "c = get_config()\nc.CourseDirectory.course_id = 'bench'\n"
        "c.Execute.timeout = 600\nc.Execute.iopub_timeout = 60\n",
        encoding="utf-8",
    )
    _nbgrader(course, "generate_assignment", lab, "--force")

    def run(folder: Path) -> float:
        shutil.rmtree(course / "submitted", ignore_errors=True)
        shutil.rmtree(course / "autograded", ignore_errors=True)
        shutil.copytree(folder, course / "submitted")
        started = time.monotonic()
        _nbgrader(course, "autograde", lab, "--force")
        return time.monotonic() - started

    return run


def _nbgrader(course: Path, *args: str) -> None:
    env = {
        **os.environ,
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
    }
    subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        check=True,
        capture_output=True,
        env=env,
    )


def measure(cpu_lab: str, gpu_labs: list[str], count: int, gpu_count: int) -> list[tuple[str, str]]:
    """Строки таблицы (что измерено, значение)."""
    rows = []
    with tempfile.TemporaryDirectory(prefix="course7-bench-") as tmp:
        root = Path(tmp)
        os.environ[GRADING_DIR.name] = str(root / "work")  # для процессов make grade
        # Первый запуск регистрирует лабораторные в базе и проверяет эталон (прогрев кэша
        # компиляции — раз на версию лабораторной); make grade без работ — отказ «нет работ».
        first = _timed_command(_class_folder(root / "warm", cpu_lab, 1))
        warm_up = sum(_timed_command(_class_folder(root / "warm", lab, 1)) for lab in gpu_labs)
        rows += [
            (
                f"Первый запуск: регистрация лабораторных, эталон и одна работа {cpu_lab}",
                f"{first:.1f} с",
            ),
            ("Первый запуск GPU-лабораторных: эталон и одна работа", f"{warm_up:.1f} с"),
        ]
        for lab in (cpu_lab, *gpu_labs):
            runners = {"JOBS=1": make_grade(1), "JOBS=2": make_grade(2)}
            if lab == cpu_lab:
                # Во что обходится bubblewrap, и обычный nbgrader autograde для сравнения.
                runners["JOBS=1 без песочницы"] = make_grade(1, **{SANDBOX.name: "none"})
                runners["nbgrader autograde"] = plain_nbgrader(lab, root)
            measured = _per_submission(root, lab, gpu_count if lab in gpu_labs else count, runners)
            for name in ("JOBS=1", "JOBS=2"):
                each, fixed = measured[name]
                rows.append((f"{lab}, {name}: секунд на работу", f"{each:.2f}"))
                rows.append((f"{lab}, {name}: постоянная часть запуска", f"{fixed:.1f} с"))
            speed_up = measured["JOBS=1"][0] / measured["JOBS=2"][0]
            rows.append((f"{lab}: ускорение JOBS=2 к JOBS=1", f"{speed_up:.2f}×"))
            if lab == cpu_lab:
                bare, ours = measured["JOBS=1 без песочницы"][0], measured["JOBS=1"][0]
                plain = measured["nbgrader autograde"][0]
                rows.append((f"{lab}, JOBS=1 без песочницы: секунд на работу", f"{bare:.2f}"))
                rows.append(("Песочница bubblewrap: добавляет к работе", f"{ours - bare:+.2f} с"))
                rows.append((f"{lab}, nbgrader autograde: секунд на работу", f"{plain:.2f}"))
                rows.append(
                    ("nbgrader autograde медленнее make grade JOBS=1", f"{plain / ours:.1f}×")
                )
    return rows


def _group(parts: list[str]) -> str:
    """Группа по частям имени теста: решение — его лабораторная, тест — путь к файлу от tests/.

    Тесты лежат в папках, повторяющих пакет (``tests/teacher/grading/test_grade.py``), поэтому
    группа — весь путь до файла (``teacher/grading/test_grade``), а не первая папка.
    """
    if len(parts) > 1 and parts[0] == "solutions":
        return parts[1]
    if len(parts) > 1 and parts[0] == "tests":
        end = next((i for i, part in enumerate(parts) if part.startswith("test_")), 1)
        return "/".join(parts[1 : end + 1])
    return parts[0]


def _group_of_test(nodeid: str) -> str:
    """Группа теста по его id pytest — та же, что у его строки JUnit (файл или лабораторная)."""
    path = Path(nodeid.split("::")[0])
    return _group([*path.parent.parts, path.stem])


def fixture_times(junit: Path) -> list[dict]:
    """Время общих фикстур из файлов рядом с отчётом JUnit (их пишет ``tests/conftest.py``).

    Запись — ``{"fixture", "test", "seconds"}``: какая фикстура, при подготовке какого теста
    она готовилась (или ждала, пока её приготовит другой процесс) и сколько секунд.
    """
    found = []
    for path in sorted(junit.parent.glob(f"{junit.stem}.fixtures-*.json")):
        try:
            found += json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
    return found


def group_times(paths: tuple[Path, ...] = TEST_TIMES) -> list[tuple[str, str]]:
    """Время групп тестов (по файлам) из отчётов JUnit последнего ``make test``.

    Это сумма времени тестов группы; тесты идут в несколько процессов, поэтому сумма по
    всем группам больше, чем длится ``make test``. Общая фикстура (класс, оценённый один раз
    на весь прогон; окружение Colab) — своя группа «фикстура …»: в JUnit её время стоит у
    теста, который попросил её первым, а здесь вычитается из его группы (:func:`fixture_times`).
    """
    seconds: dict[str, float] = defaultdict(float)
    for path in paths:
        if not path.exists():
            continue
        for case in ET.parse(path).getroot().iter("testcase"):
            seconds[_group((case.get("classname") or "?").split("."))] += float(
                case.get("time") or 0
            )
        for record in fixture_times(path):
            paid = float(record.get("seconds") or 0)
            seconds[_group_of_test(str(record.get("test", "?")))] -= paid
            seconds[f"фикстура {record.get('fixture', '?')}"] += paid
    if not seconds:
        return [("Группы тестов", "нет отчёта — запустите make test")]
    top = sorted(seconds.items(), key=lambda item: -item[1])
    return [(f"Тесты: {name}", f"{value:.1f} с") for name, value in top]


def table(rows: list[tuple[str, str]]) -> str:
    width = max(len(name) for name, _ in rows)
    lines = [f"| {'Что измерено'.ljust(width)} | Значение |", f"|{'-' * (width + 2)}|----------|"]
    lines += [f"| {name.ljust(width)} | {value} |" for name, value in rows]
    return "\n".join(lines)

"""Оценивание одной командой: ``make grade`` (или ``make grade SUBMISSIONS=путь JOBS=N``).

1. Сбор работ из папки (раскладка nbgrader ``<учащийся>/<лаб>/<лаб>.ipynb`` или любая
   другая) или из архива LMS; каждая работа опознаётся по содержимому
   (:mod:`feedback.teacher.uploads`). Всё, что оценить нельзя, — строка problems.csv.
2. Лабораторные заносятся в базу оценок nbgrader (только если исходник изменился).
3. Каждая работа — своя единица (:mod:`feedback.teacher.unit`) в своём процессе и
   своей песочнице, до ``JOBS`` одновременно. Упавшая, зависшая или убитая единица
   даёт строку problems.csv и нули, а не останавливает остальных.
4. Родительский процесс по одной записывает результаты в базу, кладёт проверенные
   тетрадки в ``autograded/`` и пишет отчёты для учащихся в ``feedback_reports/``.
5. grades.csv, grades_by_task.csv, problems.csv, needs_review.csv (код, который
   обращается к механизму проверки) и cases.csv (какие случаи вытянуты каждому).

Рабочая папка — .course-work/ или ``COURSE7_GRADING_DIR``. Код выхода 0 — оценивание
завершено (даже если были проблемные работы), 2 — не так настроено само оценивание.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import csv
import hashlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat

from feedback.teacher import gradebook, uploads
from feedback.teacher.release import ROOT, lab_sources
from feedback.teacher.reports import ReportWriter
from feedback.teacher.review import allowed_helpers, course_modules
from feedback.teacher.sandbox import (
    GIB,
    Limits,
    SandboxUnavailable,
    parse_size,
    sandbox_mode,
    sandbox_warning,
)
from feedback.teacher.unit import GRADING_NOTE
from feedback.teacher.uploads import Problem, Submission

#: Лимиты по умолчанию: лабораторные на процессоре и GPU-лабораторные (крошечный режим).
CPU_LIMITS = Limits(notebook_seconds=180, cell_seconds=60, memory_bytes=int(1.5 * GIB))
GPU_LIMITS = Limits(notebook_seconds=900, cell_seconds=600, memory_bytes=3 * GIB)
#: Сколько ещё подождать единицу сверх бюджета тетрадки (запуск ядра, выпуск, отчёт).
UNIT_GRACE_SECONDS = 120


def work_dir() -> Path:
    """Рабочая папка оценивания (её же использует nbgrader_config.py)."""
    return Path(os.environ.get("COURSE7_GRADING_DIR", ROOT / ".course-work")).resolve()


class SetupError(RuntimeError):
    """Оценивание не может начаться: что-то не так у преподавателя (код выхода 2)."""


@dataclass
class Run:
    """Всё, что знает один запуск оценивания."""

    work: Path
    mode: str
    jobs: int
    releases: dict[str, nbformat.NotebookNode]
    allowed: dict[str, list[str]]
    secret: str
    problems: list[Problem] = field(default_factory=list)
    review: list[dict[str, Any]] = field(default_factory=list)
    cases: list[dict[str, Any]] = field(default_factory=list)
    timings: list[dict[str, Any]] = field(default_factory=list)


# --------------------------------------------------------------------------- подготовка


def _secret(work: Path) -> str:
    """Секрет курса для случаев оценивания: один на рабочую папку, учащимся не виден."""
    path = work / ".grading-secret"
    if not path.exists():
        path.write_text(secrets.token_hex(16))
        path.chmod(0o600)
    return path.read_text().strip()


def _allowed(releases: dict[str, nbformat.NotebookNode]) -> dict[str, list[str]]:
    """Помощники курса, которыми пользуются эталонные решения каждой лабораторной."""
    allowed = {}
    for source in lab_sources():
        lab = source.parent.name
        nb = nbformat.read(source, as_version=4)
        setup = [
            cell.source
            for cell in releases[lab].cells
            if cell.cell_type == "code" and "nbgrader" not in cell.metadata
        ]
        solutions = [
            cell.source
            for cell in nb.cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")
        ]
        allowed[lab] = sorted(allowed_helpers(solutions, course_modules(setup)))
    return allowed


def limits_for(release: nbformat.NotebookNode, env: dict[str, str] | None = None) -> Limits:
    """Бюджеты лабораторной с учётом COURSE7_NOTEBOOK_TIMEOUT, _CELL_TIMEOUT, _MEMORY_LIMIT."""
    env = os.environ if env is None else env
    gpu = release.metadata.get("course7", {}).get("extra") == "gpu"
    limits = GPU_LIMITS if gpu else CPU_LIMITS
    changes: dict[str, Any] = {}
    if env.get("COURSE7_NOTEBOOK_TIMEOUT"):
        changes["notebook_seconds"] = float(env["COURSE7_NOTEBOOK_TIMEOUT"])
    if env.get("COURSE7_CELL_TIMEOUT"):
        changes["cell_seconds"] = float(env["COURSE7_CELL_TIMEOUT"])
    if env.get("COURSE7_MEMORY_LIMIT"):
        changes["memory_bytes"] = parse_size(env["COURSE7_MEMORY_LIMIT"])
    return Limits(**{**limits.__dict__, **changes})


def prepare(work: Path, jobs: int | None = None) -> Run:
    """Рабочая папка, режим песочницы, лабораторные в базе, секрет случаев."""
    work.mkdir(parents=True, exist_ok=True)
    try:
        mode = sandbox_mode()
    except SandboxUnavailable as error:
        raise SetupError(str(error)) from None
    warning = sandbox_warning(mode)
    if warning:
        print(warning, file=sys.stderr)
    try:
        releases = gradebook.register(work)
    except RuntimeError as error:
        raise SetupError(str(error)) from None
    jobs = jobs or int(os.environ.get("JOBS") or 0) or os.cpu_count() or 1
    return Run(work, mode, max(1, jobs), releases, _allowed(releases), _secret(work))


# --------------------------------------------------------------------------- сбор


def collect(source: Path, run: Run) -> list[Submission]:
    """Работы из папки или архива; всё, что оценить нельзя, — в ``run.problems``."""
    if source.is_file() and zipfile.is_zipfile(source):
        found, problems = uploads.from_zip(source)
    elif source.is_dir():
        found, problems = uploads.from_folder(source)
    else:
        raise SetupError(f"Не найдены работы: {source} — нужна папка или архив .zip.")
    release_json = {lab: json.loads(nbformat.writes(nb)) for lab, nb in run.releases.items()}
    submissions, routed = uploads.route(found, release_json)
    run.problems += problems + routed
    return submissions


# --------------------------------------------------------------------------- единицы


def _tiny_cache(run: Run) -> Path:
    """Крошечная Gemma для GPU-лабораторных: собирается один раз, в песочнице — только чтение."""
    from feedback.tiny_gemma import tiny_preset_path

    cache = run.work / "cache"
    tiny_preset_path(cache_dir=cache, isolated=True)
    return cache


def job_for(run: Run, submission: Submission, cache: Path | None) -> dict[str, Any]:
    """Задание единицы: всё, что нужно для оценивания одной работы, и ничего лишнего."""
    release = run.releases[submission.lab]
    key = hashlib.sha256(f"{submission.student}\0{submission.lab}".encode()).hexdigest()[:16]
    unit_dir = run.work / "units" / key
    env = {"COURSE7_TINY": "1"}
    readonly = []
    if cache is not None:
        env["COURSE7_CACHE_DIR"] = str(cache)
        readonly.append(str(cache))
    seed = hashlib.sha256(
        f"{run.secret}:{submission.student}:{submission.lab}".encode()
    ).hexdigest()
    return {
        "student": submission.student,
        "lab": submission.lab,
        "file": submission.file,
        "release": json.loads(nbformat.writes(release)),
        "upload": submission.notebook,
        "notes": submission.notes,
        "allowed": run.allowed.get(submission.lab, []),
        "seed": seed,
        "unit_dir": str(unit_dir),
        "sandbox": run.mode,
        "limits": limits_for(release).__dict__,
        "env": env,
        "readonly": readonly,
    }


def run_unit_process(job: dict[str, Any]) -> dict[str, Any]:
    """Выполняет единицу в отдельном процессе; что бы с ней ни случилось — вернёт результат."""
    unit_dir = Path(job["unit_dir"])
    shutil.rmtree(unit_dir, ignore_errors=True)
    unit_dir.mkdir(parents=True)
    job_file, result_file = unit_dir / "job.json", unit_dir / "result.json"
    job_file.write_text(json.dumps(job, ensure_ascii=False), encoding="utf-8")
    timeout = job["limits"]["notebook_seconds"] + UNIT_GRACE_SECONDS
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "feedback.teacher.unit", str(job_file), str(result_file)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        return failed_result(job, f"оценивание работы не завершилось за {int(timeout)} с")
    try:
        result = json.loads(result_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        tail = output.decode("utf-8", "replace").strip().splitlines()[-3:]
        return failed_result(
            job, "сбой оценивания этой работы" + (f": {' / '.join(tail)}" if tail else "")
        )
    result["wall_seconds"] = round(time.monotonic() - started, 3)
    shutil.rmtree(unit_dir, ignore_errors=True)
    return result


def failed_result(job: dict[str, Any], problem: str) -> dict[str, Any]:
    """Результат работы, которую не удалось оценить: выпуск с заметкой и нули."""
    return unassessed(job["student"], job["lab"], job.get("file", ""), job["release"], problem)


def unassessed(
    student: str, lab: str, file: str, release: dict[str, Any], problem: str
) -> dict[str, Any]:
    notebook = nbformat.reads(json.dumps(release), as_version=4)
    note = nbformat.v4.new_markdown_cell(
        f"**Работа не оценена**\n\n- {problem}.", id=f"course7-{GRADING_NOTE}"
    )
    note.metadata["course7"] = GRADING_NOTE
    notebook.cells.insert(0, note)
    tests = {}
    for cell in notebook.cells:
        grading = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and grading.get("grade") and not grading.get("solution"):
            tests[grading["grade_id"]] = {"score": 0.0, "points": grading.get("points", 0)}
    return {
        "student": student,
        "lab": lab,
        "file": file,
        "autograded": json.loads(nbformat.writes(notebook)),
        "tests": tests,
        "problems": [f"Работа не оценена: {problem}."],
        "review": [],
        "cases": {},
    }


# --------------------------------------------------------------------------- слияние


def merge(run: Run, result: dict[str, Any], reports: ReportWriter) -> None:
    """Результат единицы → база оценок, autograded/, отчёт и строки CSV."""
    student, lab, file = result["student"], result["lab"], result.get("file", "")
    path = gradebook.record(run.work, result)
    reports.write(student, lab, path)
    for problem in result.get("problems", []):
        run.problems.append(Problem(student, lab, file, problem))
    for item in result.get("review", []):
        run.review.append({"student_id": student, "lab": lab, **item})
    for grade_id, params in result.get("cases", {}).items():
        run.cases.append(
            {"student_id": student, "lab": lab, "grade_id": grade_id, "params": params}
        )
    run.timings.append({"student_id": student, "lab": lab, "seconds": result.get("wall_seconds")})


def _merge_safely(run: Run, result: dict[str, Any], reports: ReportWriter) -> None:
    try:
        merge(run, result, reports)
    except Exception as error:
        run.problems.append(
            Problem(
                result.get("student", "?"),
                result.get("lab", "?"),
                result.get("file", ""),
                f"не удалось записать результат: {type(error).__name__}: {error}",
            )
        )


def _write_csv(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(rows)


def write_tables(run: Run) -> None:
    """problems.csv, needs_review.csv, cases.csv и выгрузка оценок."""
    gradebook.export(run.work)
    problems = sorted(run.problems, key=lambda p: (p.student, p.lab, p.file, p.problem))
    _write_csv(
        run.work / "problems.csv",
        ["student_id", "lab", "file", "problem"],
        [[p.student, p.lab, p.file, p.problem] for p in problems],
    )
    review = sorted(run.review, key=lambda r: (r["student_id"], r["lab"], r["cell"], r["line"]))
    _write_csv(
        run.work / "needs_review.csv",
        ["student_id", "lab", "cell", "line", "code", "reason"],
        [[r["student_id"], r["lab"], r["cell"], r["line"], r["code"], r["reason"]] for r in review],
    )
    cases = sorted(run.cases, key=lambda c: (c["student_id"], c["lab"], c["grade_id"]))
    _write_csv(
        run.work / "cases.csv",
        ["student_id", "lab", "grade_id", "params"],
        [
            [c["student_id"], c["lab"], c["grade_id"], json.dumps(c["params"], ensure_ascii=False)]
            for c in cases
        ],
    )


# --------------------------------------------------------------------------- всё вместе


def _unassessed(run: Run, problems: list[Problem], graded: set[tuple[str, str]]) -> list[dict]:
    """Нули для неоценённых работ, у которых известны учащийся и лабораторная."""
    results, seen = [], set(graded)
    for problem in problems:
        key = (problem.student, problem.lab)
        if problem.lab not in run.releases or problem.student == "?" or key in seen:
            continue
        seen.add(key)
        release = json.loads(nbformat.writes(run.releases[problem.lab]))
        result = unassessed(problem.student, problem.lab, problem.file, release, problem.problem)
        result["problems"] = []  # строка в problems.csv уже есть
        results.append(result)
    return results


def grade(submissions: Path | None = None, jobs: int | None = None) -> Path:
    """Весь цикл оценивания; возвращает путь к grades.csv."""
    work = work_dir()
    run = prepare(work, jobs)
    found = collect(submissions or work / "submitted", run)
    collection_problems = list(run.problems)
    gpu_labs = {
        lab for lab, nb in run.releases.items() if nb.metadata.get("course7", {}).get("extra")
    }
    cache = _tiny_cache(run) if any(s.lab in gpu_labs for s in found) else None
    reports = ReportWriter(work)
    jobs_list = [job_for(run, s, cache if s.lab in gpu_labs else None) for s in found]
    total = len(jobs_list)
    with concurrent.futures.ThreadPoolExecutor(max_workers=run.jobs) as pool:
        futures = {pool.submit(run_unit_process, job): job for job in jobs_list}
        for done, future in enumerate(concurrent.futures.as_completed(futures), start=1):
            job = futures[future]
            try:
                result = future.result()
            except Exception as error:  # наша собственная ошибка — тоже строка, не остановка
                result = failed_result(job, f"внутренняя ошибка оценивания: {error}")
            _merge_safely(run, result, reports)
            _progress(done, total, result)
    graded = {(s.student, s.lab) for s in found}
    for result in _unassessed(run, collection_problems, graded):
        _merge_safely(run, result, reports)
    write_tables(run)
    shutil.rmtree(work / "units", ignore_errors=True)
    return work / "grades.csv"


def _progress(done: int, total: int, result: dict[str, Any]) -> None:
    tests = result.get("tests", {})
    score = sum(float(t.get("score", 0)) for t in tests.values())
    points = sum(float(t.get("points", 0)) for t in tests.values())
    mark = " ⚠" if result.get("problems") or result.get("review") else ""
    print(
        f"[{done}/{total}] {result['student']} · {result['lab']}: {score:g} из {points:g}{mark}",
        file=sys.stderr,
        flush=True,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Оценить все работы курса 7.")
    parser.add_argument(
        "submissions",
        nargs="?",
        type=Path,
        help="папка с работами или архив .zip из LMS; по умолчанию — submitted/ в рабочей папке",
    )
    parser.add_argument("--jobs", type=int, default=None, help="сколько работ оценивать сразу")
    args = parser.parse_args(argv)
    try:
        grades = grade(args.submissions, args.jobs)
    except SetupError as error:
        print(f"Оценивание не началось: {error}", file=sys.stderr)
        return 2
    work = work_dir()
    print(f"Оценки: {grades}")
    print(f"Оценки по заданиям: {work / 'grades_by_task.csv'}")
    print(f"Проблемные работы: {work / 'problems.csv'}")
    print(f"Посмотреть вручную: {work / 'needs_review.csv'}")
    print(f"Отчёты для учащихся: {work / 'feedback_reports'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

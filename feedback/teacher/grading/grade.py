"""Оценивание одной командой: ``make grade`` (или ``make grade SUBMISSIONS=путь JOBS=N``).

1. Сбор работ из папки (раскладка nbgrader ``<учащийся>/<лаб>/<лаб>.ipynb`` или любая
   другая) или из архива LMS; каждая работа опознаётся по содержимому
   (:mod:`feedback.teacher.intake.uploads`). Всё, что оценить нельзя, — строка problems.csv.
2. Лабораторные заносятся в базу оценок nbgrader (только если исходник изменился).
3. Каждая работа — своя единица (:mod:`feedback.teacher.unit.pipeline`) в своём процессе и
   своей песочнице, до ``JOBS`` одновременно. Упавшая, зависшая или убитая единица
   даёт строку problems.csv и нули, а не останавливает остальных.
4. Родительский процесс по одной записывает результаты в базу, кладёт проверенные
   тетрадки в ``autograded/`` и пишет отчёты для учащихся в ``feedback_reports/``.
5. grades.csv и grades_by_task.csv (:mod:`feedback.teacher.records.gradebook`); problems.csv,
   needs_review.csv (код, который обращается к механизму проверки), cases.csv (какие
   случаи вытянуты каждому), timings.csv и mistakes.csv
   (:mod:`feedback.teacher.records.class_tables`):
   строки прежних запусков остаются, пока та же работа не оценена заново (архивы
   лабораторных приходят по одному за семестр). changes.csv — чьи баллы изменились с
   прошлого запуска и почему (:mod:`feedback.teacher.records.ledger`, scores.json — баллы прошлого
   запуска). Столбцы каждой таблицы — её тип строки в :mod:`feedback.teacher.core.tables`.

Со списком учащихся (``students.csv``, ``make grade ROSTER=путь``) работы из архива LMS
получают id из него (:mod:`feedback.teacher.intake.roster`), а номера участников Moodle
запоминаются в lms_ids.csv для ``make export``.

Рабочая папка — .course-work/ или ``COURSE7_GRADING_DIR``; все настройки (пути, бюджеты,
песочница, ``JOBS``, ``SCHEDULER``) — :class:`feedback.teacher.core.settings.Settings`, их
:func:`grade` получает аргументом, а пути берёт у ``settings.workspace``. Рядом: эталоны перед
работами (:mod:`~feedback.teacher.grading.reference`), замок рабочей папки
(:mod:`~feedback.teacher.grading.lock`), что говорит консоль
(:mod:`~feedback.teacher.grading.messages`); команда ``make grade`` с кодами выхода —
:mod:`feedback.teacher.commands.grade`.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import nbformat

from feedback.teacher.core import files
from feedback.teacher.core.results import Job, UnitResult
from feedback.teacher.core.settings import Settings
from feedback.teacher.core.tables import GradeRow, Problem
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.grading import messages
from feedback.teacher.grading.lock import grading_lock
from feedback.teacher.grading.messages import say
from feedback.teacher.grading.reference import unchecked_references, warm_up
from feedback.teacher.grading.run import NothingGraded, Run, SetupError, job_for, with_template
from feedback.teacher.intake import archives, roster, uploads
from feedback.teacher.intake.uploads import Submission
from feedback.teacher.lms import handback
from feedback.teacher.pages import analytics
from feedback.teacher.pages.reports import ReportWriter
from feedback.teacher.records import class_tables, gradebook, ledger
from feedback.teacher.review import allowed_helpers, course_modules
from feedback.teacher.unit import warm
from feedback.teacher.unit.caches import tiny_model_cache
from feedback.teacher.unit.dask_tls import Cluster, DaskRefused, cluster_for
from feedback.teacher.unit.pipeline import unassessed
from feedback.teacher.unit.runner import run_dask, run_local
from feedback.teacher.unit.sandbox import (
    SandboxUnavailable,
    sandbox_mode,
    sandbox_warning,
    template_env,
)

__all__ = ["NothingGraded", "Run", "SetupError", "collect", "grade", "merge", "prepare"]

# --------------------------------------------------------------------------- подготовка


def _secret(workspace: Workspace) -> str:
    """Секрет курса для случаев оценивания: один на рабочую папку, учащимся не виден."""
    path = workspace.grading_secret
    if not path.exists():
        files.write_text(path, secrets.token_hex(16), permissions=0o600)
    return path.read_text().strip()


def _allowed(
    releases: dict[str, nbformat.NotebookNode], settings: Settings
) -> dict[str, list[str]]:
    """Помощники курса, которыми пользуются эталонные решения каждой лабораторной."""
    allowed = {}
    for lab in settings.labs:
        nb = nbformat.read(lab.source, as_version=4)
        setup = [
            cell.source
            for cell in releases[lab.id].cells
            if cell.cell_type == "code" and "nbgrader" not in cell.metadata
        ]
        solutions = [
            cell.source
            for cell in nb.cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")
        ]
        allowed[lab.id] = sorted(allowed_helpers(solutions, course_modules(setup)))
    return allowed


def prepare(settings: Settings, jobs: int | None = None, roster_file: Path | None = None) -> Run:
    """Рабочая папка, режим песочницы, лабораторные и список учащихся в базе, секрет случаев."""
    work = settings.work
    work.mkdir(parents=True, exist_ok=True)
    try:
        mode = sandbox_mode(wanted=settings.sandbox)
    except SandboxUnavailable as error:
        raise SetupError(str(error)) from None
    warning = sandbox_warning(mode)
    if warning:
        print(warning, file=sys.stderr)
    try:
        releases = gradebook.register(settings)
    except RuntimeError as error:
        raise SetupError(str(error)) from None
    try:
        people = roster.prepare_roster(settings.workspace, roster_file)
        matcher = roster.Matcher.from_workspace(settings.workspace, people, releases)
    except roster.RosterError as error:
        raise SetupError(str(error)) from None
    if people is not None:
        gradebook.import_students(
            settings.workspace, [person.fields for person in people.people.values()]
        )
    jobs = jobs or settings.jobs or os.cpu_count() or 1
    allowed = _allowed(releases, settings)
    run = Run(settings, mode, max(1, jobs), releases, allowed, _secret(settings.workspace))
    run.matcher = matcher
    return run


# --------------------------------------------------------------------------- сбор


def collect(
    source: Path,
    releases: dict[str, nbformat.NotebookNode],
    matcher: roster.Matcher | None = None,
) -> tuple[list[Submission], list[Problem]]:
    """Работы из папки или архива и строки problems.csv обо всём, что оценить нельзя.

    ``releases`` — выпуски лабораторных (по ним опознаётся лабораторная работы), ``matcher``
    — список учащихся (без него id — имя из папки Moodle,
    :func:`feedback.teacher.intake.uploads.route`).
    Архив, который не открыть целиком, — ввод преподавателя: :class:`SetupError`.
    """
    if source.is_dir():
        found, problems = archives.from_folder(source)
    elif source.is_file():
        try:
            found, problems = archives.from_zip(source)
        except archives.BrokenArchive as error:  # архив целиком — ввод преподавателя
            raise SetupError(str(error)) from None
    else:
        raise SetupError(messages.no_source(source))
    release_json = {lab: json.loads(nbformat.writes(nb)) for lab, nb in releases.items()}
    submissions, routed = uploads.route(found, release_json, matcher)
    return submissions, problems + routed


# --------------------------------------------------------------------------- слияние


def merge(run: Run, result: UnitResult, reports: ReportWriter) -> None:
    """Результат единицы → база оценок, autograded/, отчёт и строки таблиц класса."""
    key = (result.student, result.lab)
    earlier = run.before.get(key)
    workspace = run.settings.workspace
    answers = earlier.answers if earlier else None
    with gradebook.recording(workspace, result, run.uploads.get(key), answers) as recorded:
        ledger.archive_manual(workspace, recorded.reopened)  # до того, как оценки уйдут из базы
    run.answers[key] = recorded.answers
    run.pending[key] = recorded.pending
    reports.write(result.student, result.lab, recorded.path)
    run.tables.add(result)


def _merge_safely(run: Run, result: UnitResult, reports: ReportWriter) -> None:
    try:
        merge(run, result, reports)
    except Exception as error:
        run.tables.problems.append(
            Problem(
                result.student,
                result.lab,
                result.file,
                messages.merge_failed(error),
            )
        )


# --------------------------------------------------------------------------- всё вместе


def _unassessed(
    run: Run, problems: list[Problem], graded: set[tuple[str, str]]
) -> list[UnitResult]:
    """Нули для неоценённых работ, у которых известны учащийся и лабораторная.

    Проблем в результате нет: строка о работе в problems.csv уже есть (со сбора работ).
    """
    results, seen = [], set(graded)
    for problem in problems:
        key = (problem.student, problem.lab)
        if problem.lab not in run.releases or problem.student == "?" or key in seen:
            continue
        seen.add(key)
        release = json.loads(nbformat.writes(run.releases[problem.lab]))
        result = unassessed(problem.student, problem.lab, problem.file, release, problem.problem)
        results.append(replace(result, problems=[]))
    return results


def grade(
    submissions: Path | None = None,
    jobs: int | None = None,
    scheduler: str | None = None,
    roster_file: Path | None = None,
    settings: Settings | None = None,
) -> Path:
    """Весь цикл оценивания; возвращает путь к grades.csv.

    ``scheduler`` — адрес планировщика Dask: тогда работы выполняются на его рабочих (только
    ``tls://`` с сертификатами курса, если ``settings.allow_insecure_dask`` не разрешает иного).
    ``roster_file`` — список учащихся (копируется в рабочую папку как students.csv; без
    него берётся тот, что уже там). ``settings`` — пути, бюджеты и песочница; без них —
    из переменных окружения (:meth:`Settings.from_env`).
    """
    settings = settings or Settings.from_env()
    with grading_lock(settings.workspace):
        return _grade(submissions, jobs, scheduler, roster_file, settings)


def _grade(
    submissions: Path | None,
    jobs: int | None,
    scheduler: str | None,
    roster_file: Path | None,
    settings: Settings,
) -> Path:
    """Шаги :func:`grade` по порядку (их же перечисляет docstring модуля); под замком папки."""
    scheduler = scheduler or settings.scheduler
    # Открытый планировщик Dask отдал бы рабочих любому — отказ до того, как что-то начато.
    try:
        cluster = cluster_for(scheduler, settings) if scheduler else None
    except DaskRefused as error:
        raise SetupError(str(error)) from None
    workspace = settings.workspace
    # 2. Лабораторные и список учащихся в базе; баллы прошлого запуска — для changes.csv.
    say(messages.PREPARING)
    run = prepare(settings, jobs, roster_file)
    run.before = ledger.previous_scores(settings.workspace)
    # 1. Работы и строки problems.csv обо всём, что оценить нельзя.
    source = submissions or workspace.submitted
    found, problems = collect(source, run.releases, run.matcher)
    if not found and not problems:
        raise SetupError(messages.no_notebooks(source))
    run.tables.problems += problems
    _remember(run, found, problems)
    # 3–4. Единицы и слияние их результатов; нули неоценённым работам.
    start = _grade_units(run, found, cluster)
    _merge_unassessed(run, problems, {(s.student, s.lab) for s in found})
    # 5. Таблицы, что изменилось, сводка. Снимок баллов — последним: оборванный до этого места
    # запуск повторяется с тем же «прежним» снимком, и changes.csv повтора — тот же, что у
    # запуска без обрыва.
    gradebook.export(workspace)
    written = class_tables.write(workspace, run.tables)
    after = ledger.current_scores(workspace, run.uploads, run.before, run.answers)
    ledger.write_changes(workspace, ledger.changes(run.before, after, set(run.uploads), start))
    _analytics(settings, written)
    ledger.save_scores(workspace, after)
    ledger.finish_run(workspace)
    print(messages.count_line(found, problems), file=sys.stderr, flush=True)
    if not found:
        raise NothingGraded(messages.nothing_graded(source, workspace.table(Problem)))
    return workspace.table(GradeRow)


def _remember(run: Run, found: list[Submission], problems: list[Problem]) -> None:
    """Что о собранных работах нужно потом: номера Moodle, папки Moodle, отпечатки файлов.

    Номера участников — в lms_ids.csv для ``make export``, папки — для архива отзывов
    (:mod:`feedback.teacher.lms.handback`), отпечатки — для снимка баллов (:mod:`ledger`).
    """
    if run.matcher is not None:
        roster.save_participants(run.settings.workspace, run.matcher.seen)
    handback.remember_folders(
        run.settings.workspace,
        [(s.student, s.lab, s.file) for s in found]
        + [(p.student, p.lab, p.file) for p in problems if p.lab in run.releases],
    )
    run.uploads = {(s.student, s.lab): ledger.upload_fingerprint(s.notebook) for s in found}


def _grade_units(run: Run, found: list[Submission], cluster: Cluster | None) -> ledger.Scores:
    """Эталоны, которые ещё не проверены, затем работы; возвращает баллы начала запуска.

    Баллы в базе записываются (:func:`feedback.teacher.records.ledger.run_start`) после эталонов,
    перед первой записью работы этого запуска: с ручными оценками, поставленными после снимка.
    """
    cache = run.settings.workspace.cache
    jobs_list = [job_for(run, s, None if cluster else cache) for s in found]
    references = unchecked_references(run, {job.lab for job in jobs_list}, cache)
    # Заготовки ядер — только здесь, под bubblewrap (рабочие Dask запускают ядра сами), и
    # только там, где ядер этого вида столько, что заготовка окупается.
    local = [] if cluster else jobs_list
    kernels = Counter(
        warm.profile_of(job.gpu) for job in [*local, *(j for j, _ in references.values())]
    )
    use_templates = run.settings.warm_kernels and run.mode == "bwrap"
    profiles = [profile for profile, count in kernels.items() if warm.pays_off(profile, count)]
    say(messages.works_to_grade(len(jobs_list)))
    if use_templates and profiles:
        say(messages.starting_templates(profiles))
    with warm.kernel_templates(profiles, template_env, enabled=use_templates) as templates:
        jobs_list = [with_template(job, templates) for job in local] or jobs_list
        if any(job.gpu for job in jobs_list):
            say(messages.TINY_MODEL)
            tiny_model_cache(cache)  # один раз здесь, а не в каждой единице
        warm_up(run, set(references), cache, templates, references)
        start = ledger.run_start(run.settings.workspace, run.before)
        _run_units(run, jobs_list, cluster)
    return start


def _merge_unassessed(run: Run, problems: list[Problem], graded: set[tuple[str, str]]) -> None:
    """Нули в базу и отчёт неоценённым работам, у которых известны учащийся и лабораторная.

    Работа, уже оценённая прежним запуском по настоящему файлу, остаётся как была: битый или
    лишний файл того же учащегося в следующем архиве (опоздавшие, «Скачать все ответы» ещё
    раз) — строка problems.csv, а не нули вместо оценки и снятые ручные оценки.
    """
    kept = {key for key, earlier in run.before.items() if _real_upload(earlier.upload)}
    reports = ReportWriter(run.settings.workspace)
    for result in _unassessed(run, problems, graded | kept):
        run.uploads[(result.student, result.lab)] = ledger.NO_UPLOAD
        _merge_safely(run, result, reports)


def _real_upload(upload: str | None) -> bool:
    """Оценён ли по настоящему файлу (а не нулями неоценённой работы)."""
    return upload is not None and upload != ledger.NO_UPLOAD


def _run_units(run: Run, jobs: list[Job], cluster: Cluster | None) -> None:
    """Единицы — здесь или на рабочих Dask; результаты сливаются по мере готовности."""
    reports = ReportWriter(run.settings.workspace)
    total = len(jobs)
    done = 0
    manual = {lab: messages.manual_points(release) for lab, release in run.releases.items()}

    def on_result(result: UnitResult) -> None:
        nonlocal done
        done += 1
        _merge_safely(run, result, reports)
        waiting = run.pending.get((result.student, result.lab))
        line = messages.progress_line(done, total, result, manual.get(result.lab, 0), waiting)
        print(line, file=sys.stderr, flush=True)

    if cluster:
        run_dask(jobs, cluster, on_result)
    else:
        run_local(jobs, run.jobs, on_result, run.settings.workspace.units)


def _analytics(settings: Settings, tables: class_tables.ClassTables) -> None:
    """similar.csv, summary.html, mistakes.md; сбой сводки не отменяет уже записанных оценок."""
    try:
        written = analytics.after_grading(settings, tables)
    except Exception as error:
        print(messages.analytics_failed(error), file=sys.stderr)
        return
    print(messages.analytics_done(written.seconds), file=sys.stderr, flush=True)

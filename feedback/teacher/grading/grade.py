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
:func:`grade` получает аргументом. В конце консоль говорит, сколько работ оценено и сколько
файлов не оценено (:func:`count_line`). Код выхода 0 — оценивание завершено (даже если были
проблемные работы), 1 — файлы были, но ни один не оценён: все они строки problems.csv
(:class:`NothingGraded`), 2 — не так настроено само оценивание.
"""

from __future__ import annotations

# Первым, до nbformat: процесс оценивания без rfc3987_syntax (см. модуль).
from feedback.teacher.unit import lean  # noqa: F401

# isort: split

import argparse
import contextlib
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

import nbformat
from nbgrader.utils import is_grade, is_solution, is_task

from feedback.formatting import format_plain, plural
from feedback.settings import SettingError
from feedback.teacher.core import files
from feedback.teacher.core.console import safe_console
from feedback.teacher.core.results import Job, UnitResult
from feedback.teacher.core.settings import PACKAGE, ROOT, Settings, is_gpu_lab
from feedback.teacher.core.tables import ChangeRow, Problem, ReviewRow
from feedback.teacher.course.release import lab_sources
from feedback.teacher.intake import archives, roster, uploads
from feedback.teacher.intake.uploads import Submission
from feedback.teacher.lms import handback
from feedback.teacher.pages import analytics
from feedback.teacher.pages.reports import ReportWriter
from feedback.teacher.records import class_tables, gradebook, ledger
from feedback.teacher.records.class_tables import ClassTables
from feedback.teacher.review import allowed_helpers, course_modules
from feedback.teacher.unit import warm
from feedback.teacher.unit.caches import JAX_COMPILATION_CACHE_ENV, tiny_model_cache
from feedback.teacher.unit.dask_tls import Cluster, DaskRefused, cluster_for
from feedback.teacher.unit.pipeline import rubrics, unassessed
from feedback.teacher.unit.runner import run_dask, run_local
from feedback.teacher.unit.sandbox import (
    SandboxUnavailable,
    sandbox_mode,
    sandbox_warning,
    template_env,
)


class SetupError(RuntimeError):
    """Оценивание не может начаться: что-то не так у преподавателя (код выхода 2)."""


class NothingGraded(RuntimeError):
    """Запуск прошёл, таблицы записаны, но ни одна работа не оценена (код выхода 1).

    Все найденные файлы — строки problems.csv (имена, которые не разобрать, не те файлы,
    битые тетрадки): «завершено» с кодом 0 выглядело бы как успех.
    """


@dataclass
class Run:
    """Всё, что знает один запуск оценивания.

    ``tables`` — строки таблиц класса этого запуска (problems.csv и др.,
    :mod:`feedback.teacher.records.class_tables`); ``before`` — снимок баллов прошлого запуска
    (:mod:`feedback.teacher.records.ledger`), ``uploads`` и ``answers`` — отпечатки сданного сейчас
    и
    оценённого.
    """

    settings: Settings
    mode: str
    jobs: int
    releases: dict[str, nbformat.NotebookNode]
    allowed: dict[str, list[str]]
    secret: str
    matcher: roster.Matcher | None = None
    tables: ClassTables = field(default_factory=ClassTables)
    before: ledger.Scores = field(default_factory=dict)
    uploads: dict[tuple[str, str], str] = field(default_factory=dict)
    answers: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    #: Сколько баллов работы ждёт ручной оценки после её записи (для строки хода).
    pending: dict[tuple[str, str], float] = field(default_factory=dict)

    @property
    def work(self) -> Path:
        return self.settings.work


# --------------------------------------------------------------------------- подготовка


def _secret(work: Path) -> str:
    """Секрет курса для случаев оценивания: один на рабочую папку, учащимся не виден."""
    path = work / ".grading-secret"
    if not path.exists():
        files.write_text(path, secrets.token_hex(16), permissions=0o600)
    return path.read_text().strip()


def _allowed(releases: dict[str, nbformat.NotebookNode], root: Path = ROOT) -> dict[str, list[str]]:
    """Помощники курса, которыми пользуются эталонные решения каждой лабораторной."""
    allowed = {}
    for source in lab_sources(root):
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
        releases = gradebook.register(work)
    except RuntimeError as error:
        raise SetupError(str(error)) from None
    try:
        people = roster.prepare_roster(work, roster_file)
        matcher = roster.Matcher.from_work(work, people, releases)
    except roster.RosterError as error:
        raise SetupError(str(error)) from None
    if people is not None:
        gradebook.import_students(work, [person.fields for person in people.people.values()])
    jobs = jobs or settings.jobs or os.cpu_count() or 1
    allowed = _allowed(releases, settings.root)
    run = Run(settings, mode, max(1, jobs), releases, allowed, _secret(work))
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
        raise SetupError(f"Не найдены работы: {source} — нужна папка или архив .zip.")
    release_json = {lab: json.loads(nbformat.writes(nb)) for lab, nb in releases.items()}
    submissions, routed = uploads.route(found, release_json, matcher)
    return submissions, problems + routed


# --------------------------------------------------------------------------- единицы


def job_for(run: Run, submission: Submission, cache: Path | None) -> Job:
    """Задание единицы: всё, что нужно для оценивания одной работы, и ничего лишнего.

    Ни путей к базе оценок, ни секрета курса: только зерно этого учащегося.
    """
    release = run.releases[submission.lab]
    seed = hashlib.sha256(
        f"{run.secret}:{submission.student}:{submission.lab}".encode()
    ).hexdigest()
    return Job(
        student=submission.student,
        lab=submission.lab,
        file=submission.file,
        release=json.loads(nbformat.writes(release)),
        upload=submission.notebook,
        # Критерии письменных ответов — из solutions/: formgrader покажет их рядом с ответами.
        rubrics=rubrics(run.settings.rubric_source(submission.lab)),
        notes=list(submission.notes),
        allowed=run.allowed.get(submission.lab, []),
        seed=seed,
        sandbox=run.mode,
        limits=run.settings.limits_for(release),
        gpu=is_gpu_lab(release),
        cache_dir=str(cache) if cache else None,
        jax_cache_dir=str(cache / "jax") if cache else None,
    )


def reference_version(source: Path, package: Path = PACKAGE) -> str:
    """Версия эталонной проверки: исходник лабораторной, пакет проверок и настройки кэша JAX.

    Изменилось что-то одно — эталонное решение проверяется и кэш прогревается заново: новая
    проверка в пакете тоже должна пройти на эталоне, прежде чем оценивать ею работы.
    """
    digest = hashlib.sha256(source.read_bytes())
    digest.update(repr(JAX_COMPILATION_CACHE_ENV).encode())
    digest.update(tree_digest(package))
    return digest.hexdigest()[:16]


def tree_digest(folder: Path) -> bytes:
    """Хэш имён и содержимого всех файлов папки, кроме байт-кода."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(folder)).encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.digest()


#: Эталоны, которые ещё не проверены: лабораторная → задание единицы и отметка о проверке.
References = dict[str, tuple[Job, Path]]


def unchecked_references(run: Run, labs: set[str], cache: Path) -> References:
    """Эталонные решения лабораторных ``labs``, которые эта версия ещё не проверяла."""
    jax_dir = cache / "jax"
    jax_dir.mkdir(parents=True, exist_ok=True)
    pending = {}
    for source in lab_sources(run.settings.root):
        lab = source.parent.name
        if lab not in labs:
            continue
        stamp = jax_dir / f".checked-{lab}-{reference_version(source)}"
        if stamp.exists():
            continue
        reference = Submission("эталон", lab, str(source), json.loads(source.read_text("utf-8")))
        job = job_for(run, reference, cache)
        if job.gpu:
            job = replace(job, jax_cache_write=str(jax_dir))
        pending[lab] = (job, stamp)
    return pending


def warm_up(
    run: Run,
    labs: set[str],
    cache: Path,
    templates: dict[str, str] | None = None,
    pending: References | None = None,
) -> None:
    """Эталонные решения лабораторных — через ту же песочницу, что и работы учащихся.

    Так проверяется сама настройка оценивания (решение должно пройти все свои проверки,
    иначе оценивать нельзя — :class:`SetupError`), а кэш компиляции JAX наполняется тем,
    что понадобится верным работам GPU-лабораторных. Делается один раз на каждую версию
    исходника и пакета (:func:`reference_version`); ``pending`` — уже найденные
    :func:`unchecked_references`.
    """
    pending = unchecked_references(run, labs, cache) if pending is None else pending
    failures = []
    started = time.monotonic()
    for lab, (job, _) in sorted(pending.items()):
        kind = "GPU-лабораторная, крошечная модель — до минуты" if job.gpu else "секунды"
        say(f"проверяю эталонное решение {lab} в песочнице (раз на версию; {kind})…")

    def on_result(result: UnitResult) -> None:
        _, stamp = pending[result.lab]
        lost = [gid for gid, test in result.tests.items() if not test.passed]
        took = format_plain(time.monotonic() - started, 1)
        if lost or result.problems:
            failures.append(f"{result.lab}: {', '.join(lost)} {' '.join(result.problems)}")
            say(f"эталонное решение {result.lab} не прошло своих проверок ({took} с)")
        else:
            stamp.touch()
            say(f"эталонное решение {result.lab} проверено ({took} с)")

    jobs = [with_template(job, templates or {}) for job, _ in pending.values()]
    run_local(jobs, run.jobs, on_result, run.settings.workspace.units)
    if failures:
        raise SetupError(
            "эталонное решение не проходит собственные проверки при оценивании — "
            "исправьте solutions/: " + "; ".join(failures)
        )


def say(text: str) -> None:
    """Строка подготовки в консоли (до строк «[1/N]»): первый make grade GPU-лабораторной
    готовится десятки секунд — эталон, заготовки ядер, крошечная модель, — и молчание выглядело
    бы зависанием."""
    print(f"… {text}", file=sys.stderr, flush=True)


def with_template(job: Job, templates: dict[str, str]) -> Job:
    """Задание с сокетом заготовки ядер своего вида (если заготовки запущены)."""
    return replace(job, kernel_template=templates.get(warm.profile_of(job.gpu)))


# --------------------------------------------------------------------------- слияние


def merge(run: Run, result: UnitResult, reports: ReportWriter) -> None:
    """Результат единицы → база оценок, autograded/, отчёт и строки таблиц класса."""
    key = (result.student, result.lab)
    earlier = run.before.get(key)
    recorded = gradebook.record(
        run.work,
        result,
        upload=run.uploads.get(key),
        graded_before=earlier.answers if earlier else None,
        archive=lambda rows: ledger.archive_manual(run.work, rows),
    )
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
                f"не удалось записать результат: {type(error).__name__}: {error}",
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
    with grading_lock(settings.work):
        return _grade(submissions, jobs, scheduler, roster_file, settings)


def _grade(
    submissions: Path | None,
    jobs: int | None,
    scheduler: str | None,
    roster_file: Path | None,
    settings: Settings,
) -> Path:
    scheduler = scheduler or settings.scheduler
    # Открытый планировщик Dask отдал бы рабочих любому — отказ до того, как что-то начато.
    try:
        cluster = cluster_for(scheduler, settings) if scheduler else None
    except DaskRefused as error:
        raise SetupError(str(error)) from None
    work = settings.work
    # 2. Лабораторные и список учащихся в базе; баллы прошлого запуска — для changes.csv.
    say("готовлю оценивание: песочница, лабораторные в базе оценок…")
    run = prepare(settings, jobs, roster_file)
    run.before = ledger.previous_scores(work)
    # 1. Работы и строки problems.csv обо всём, что оценить нельзя.
    source = submissions or settings.workspace.submitted
    found, problems = collect(source, run.releases, run.matcher)
    if not found and not problems:
        raise SetupError(f"нет работ: в {source} не найдено ни одной тетрадки .ipynb")
    run.tables.problems += problems
    _remember(run, found, problems)
    # 3–4. Единицы и слияние их результатов; нули неоценённым работам.
    start = _grade_units(run, found, cluster)
    _merge_unassessed(run, problems, {(s.student, s.lab) for s in found})
    # 5. Таблицы, что изменилось, сводка. Снимок баллов — последним: оборванный до этого места
    # запуск повторяется с тем же «прежним» снимком, и changes.csv повтора — тот же, что у
    # запуска без обрыва.
    gradebook.export(work)
    class_tables.write(work, run.tables)
    after = ledger.current_scores(work, run.uploads, run.before, run.answers)
    ledger.write_changes(work, ledger.changes(run.before, after, set(run.uploads), start))
    _analytics(work)
    ledger.save_scores(work, after)
    ledger.finish_run(work)
    print(count_line(found, problems), file=sys.stderr, flush=True)
    if not found:
        raise NothingGraded(
            f"ни одна работа не оценена — все файлы из {source} стали строками "
            f"{work / Problem.FILE}: там сказано, что с каждым не так. Исправьте и запустите "
            "make grade ещё раз."
        )
    return work / "grades.csv"


def _remember(run: Run, found: list[Submission], problems: list[Problem]) -> None:
    """Что о собранных работах нужно потом: номера Moodle, папки Moodle, отпечатки файлов.

    Номера участников — в lms_ids.csv для ``make export``, папки — для архива отзывов
    (:mod:`feedback.teacher.lms.handback`), отпечатки — для снимка баллов (:mod:`ledger`).
    """
    if run.matcher is not None:
        roster.save_participants(run.work, run.matcher.seen)
    handback.remember_folders(
        run.work,
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
    say(f"работ к оцениванию: {len(jobs_list)}")
    if use_templates and profiles:
        say(f"запускаю заготовки ядер ({', '.join(sorted(profiles))})…")
    with warm.kernel_templates(profiles, template_env, enabled=use_templates) as templates:
        jobs_list = [with_template(job, templates) for job in local] or jobs_list
        if any(job.gpu for job in jobs_list):
            say("готовлю крошечную модель для GPU-лабораторных…")
            tiny_model_cache(cache)  # один раз здесь, а не в каждой единице
        warm_up(run, set(references), cache, templates, references)
        start = ledger.run_start(run.work, run.before)
        _run_units(run, jobs_list, cluster, run.work)
    return start


def _merge_unassessed(run: Run, problems: list[Problem], graded: set[tuple[str, str]]) -> None:
    """Нули в базу и отчёт неоценённым работам, у которых известны учащийся и лабораторная.

    Работа, уже оценённая прежним запуском по настоящему файлу, остаётся как была: битый или
    лишний файл того же учащегося в следующем архиве (опоздавшие, «Скачать все ответы» ещё
    раз) — строка problems.csv, а не нули вместо оценки и снятые ручные оценки.
    """
    kept = {key for key, earlier in run.before.items() if _real_upload(earlier.upload)}
    reports = ReportWriter(run.work)
    for result in _unassessed(run, problems, graded | kept):
        run.uploads[(result.student, result.lab)] = ledger.NO_UPLOAD
        _merge_safely(run, result, reports)


def _real_upload(upload: str | None) -> bool:
    """Оценён ли по настоящему файлу (а не нулями неоценённой работы)."""
    return upload is not None and upload != ledger.NO_UPLOAD


#: Файл блокировки рабочей папки: два make grade в одной папке переписывали бы таблицы друг друга.
LOCK = ".grading.lock"


@contextlib.contextmanager
def grading_lock(work: Path) -> Iterator[None]:
    """Рабочая папка — только для этого запуска; остатки оборванного запуска убираются.

    Второй запуск в той же папке не начинается (:class:`SetupError`), а не портит таблицы
    первого. Оборванный запуск (``kill -9``) оставляет временные файлы записей и папки единиц
    с работами учащихся: их убирает следующий.
    """
    work.mkdir(parents=True, exist_ok=True)
    with open(work / LOCK, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SetupError(
                f"в {work} уже идёт другой make grade (или make feedback): дождитесь его конца"
            ) from None
        files.remove_leftovers(work)
        shutil.rmtree(work / "units", ignore_errors=True)
        yield


def count_line(graded: list[Submission], problems: list[Problem]) -> str:
    """Итог сбора в консоли: сколько работ оценено и сколько файлов стали строками problems.csv.

    Файл, который оценён, но о котором там есть строка (тёзки в одном задании), считается
    отдельно: его не нужно сдавать заново, но прочитать строку стоит.
    """
    files = {submission.file for submission in graded}
    unassessed = {p.file for p in problems if p.file not in files}
    noted = {p.file for p in problems if p.file in files}
    line = f"Оценено: {plural(len(graded), 'работа', 'работы', 'работ')}; "
    if unassessed:
        line += (
            f"не оценено: {plural(len(unassessed), 'файл', 'файла', 'файлов')} — "
            "почему, сказано в problems.csv"
        )
    else:
        line += "неоценённых файлов нет"
    if noted:
        line += f"; об оценённых там же {plural(len(noted), 'строка', 'строки', 'строк')}"
    return line + "."


def _run_units(run: Run, jobs: list[Job], cluster: Cluster | None, work: Path) -> None:
    """Единицы — здесь или на рабочих Dask; результаты сливаются по мере готовности."""
    reports = ReportWriter(work)
    total = len(jobs)
    done = 0
    manual = {lab: manual_points(release) for lab, release in run.releases.items()}

    def on_result(result: UnitResult) -> None:
        nonlocal done
        done += 1
        _merge_safely(run, result, reports)
        key = (result.student, result.lab)
        print(
            progress_line(done, total, result, manual.get(result.lab, 0), run.pending.get(key)),
            file=sys.stderr,
            flush=True,
        )

    if cluster:
        run_dask(jobs, cluster, on_result)
    else:
        run_local(jobs, run.jobs, on_result, run.settings.workspace.units)


def _analytics(work: Path) -> None:
    """similar.csv, summary.html, mistakes.md; сбой сводки не отменяет уже записанных оценок."""
    try:
        written = analytics.after_grading(work)
    except Exception as error:
        print(
            f"Сводка для преподавателя не составлена: {type(error).__name__}: {error}",
            file=sys.stderr,
        )
        return
    print(f"Сводка составлена за {written.seconds:.1f} с", file=sys.stderr, flush=True)


def manual_points(release: nbformat.NotebookNode) -> float:
    """Баллы лабораторной, которые ставит преподаватель: то, что nbgrader не оценивает сам.

    Это ответы, оцениваемые вручную (ячейки решения с баллами), и задания (task), — по тем
    же признакам ячеек, что у nbgrader (``nbgrader.utils``).
    """
    total = 0.0
    for cell in release.cells:
        manual = is_task(cell) or (
            is_grade(cell) and (is_solution(cell) or cell.cell_type != "code")
        )
        if manual:
            total += float(cell.metadata["nbgrader"].get("points", 0) or 0)
    return total


def progress_line(
    done: int, total: int, result: UnitResult, manual: float = 0, pending: float | None = None
) -> str:
    """Строка хода оценивания: баллы автопроверки и сколько баллов ещё поставит преподаватель.

    «5 из 5» у 7.4 скрывало бы, что максимум — 13: восемь баллов письменных ответов ставятся
    в formgrader (``manual`` — :func:`manual_points`). ``pending`` — сколько из них эта работа
    ждёт на самом деле после записи (:attr:`feedback.teacher.records.gradebook.Recorded.pending`:
    уже
    оценённый и не изменившийся ответ и нетронутая заготовка, получившая 0, не в счёт);
    ``None`` — запись не удалась, и строка называет все баллы письменных ответов.
    """
    score = sum(float(test.score) for test in result.tests.values())
    points = sum(float(test.points) for test in result.tests.values())
    mark = " ⚠" if result.flagged else ""
    took = f" ({format_plain(result.wall_seconds, 1)} с)" if result.wall_seconds else ""
    scored = f"{format_plain(score, 2)} из {format_plain(points, 2)}"
    waiting = manual if pending is None else pending
    if manual and waiting:
        scored = f"автопроверка: {scored}, ещё {format_plain(waiting, 2)} — вручную"
    elif manual:
        scored = f"автопроверка: {scored}, ручной оценки не ждёт"
    return safe_console(f"[{done}/{total}] {result.student} · {result.lab}: {scored}{mark}{took}")


def teacher_fault(error: OSError) -> str:
    """Сбой у преподавателя (место, права, папка только для чтения) — по-русски, с путём."""
    import errno

    where = f" ({error.filename})" if error.filename else ""
    reasons = {
        errno.ENOSPC: "на диске кончилось место",
        errno.EDQUOT: "кончилась квота на диске",
        errno.EROFS: "папка только для чтения",
        errno.EACCES: "нет прав на запись",
        errno.EPERM: "нет прав на запись",
    }
    reason = reasons.get(error.errno, f"ошибка файловой системы: {error.strerror or error}")
    return (
        f"{reason}{where}. Таблицы и отчёты прежних запусков не тронуты: освободите место или "
        "дайте права и запустите make grade ещё раз."
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
    parser.add_argument(
        "--roster",
        type=Path,
        default=None,
        help="список учащихся students.csv (id,first_name,last_name,email); по умолчанию — "
        "students.csv в рабочей папке, если он есть",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        help="адрес планировщика Dask (tls://host:8786): работы выполняются на его рабочих; "
        "по умолчанию — переменная SCHEDULER",
    )
    args = parser.parse_args(argv)
    try:
        settings = Settings.from_env()
        grades = grade(args.submissions, args.jobs, args.scheduler, args.roster, settings)
    except (SetupError, SettingError) as error:
        print(f"Оценивание не началось: {error}", file=sys.stderr)
        return 2
    except NothingGraded as error:
        print(f"Оценивание прошло впустую: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(safe_console(f"Оценивание прервано: {teacher_fault(error)}"), file=sys.stderr)
        return 2
    work = settings.work
    print(f"Оценки: {grades}")
    print(f"Оценки по заданиям: {work / 'grades_by_task.csv'}")
    print(f"Проблемные работы: {work / Problem.FILE}")
    print(f"Посмотреть вручную: {work / ReviewRow.FILE}")
    print(f"Отчёты для учащихся: {work / 'feedback_reports'}")
    print(f"Что изменилось с прошлого запуска: {work / ChangeRow.FILE}")
    print(f"Типичные ошибки: {work / analytics.MISTAKES_CSV} (к лекции — {analytics.MISTAKES_MD})")
    print(f"Похожие ответы: {work / analytics.SIMILAR_CSV}")
    print(f"Сводка для преподавателя: {work / analytics.SUMMARY_HTML}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

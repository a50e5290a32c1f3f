"""Одна работа — одна единица оценивания: собрать, выполнить в песочнице, оценить.

Единица получает всё нужное в задании (:class:`~feedback.teacher.core.results.Job`): выпуск
лабораторной, критерии письменных ответов (из solutions/, :func:`rubrics`), разобранную
работу, зерно для случаев оценивания, бюджеты — и возвращает результат
(:class:`~feedback.teacher.core.results.UnitResult`): проверенную тетрадку, баллы и вердикты по
ячейкам-тестам, проблемы и находки для ручной проверки, замеры. Базу оценок, чужие работы
и solutions/ она не видит: всё это остаётся у родительского процесса
(:mod:`feedback.teacher.grading.grade`), который и сливает результаты. Поэтому единицу можно
выполнить в отдельном процессе (``python -m feedback.teacher.unit.process задание.json
результат.json``, оба — JSON, :mod:`feedback.teacher.unit.process`) или на другой машине.

Четыре шага :func:`run_unit`: :func:`plan` (сборка, разбор кода, случаи, зонды),
:func:`execute_plan` (песочница), :func:`judge` (вердикты вне песочницы) и
:func:`annotate` (заметки, очистка HTML, критерии).
"""

from __future__ import annotations

import copy
import json
import random
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from feedback.answers.mistakes import NOT_ASSESSED
from feedback.kernel_guard import PROBE, STARTED
from feedback.settings import CACHE_DIR, CALL_TIMEOUT, TINY
from feedback.teacher.core.results import Finding, Job, TaskOutcome, UnitResult
from feedback.teacher.core.settings import Limits
from feedback.teacher.notebook.assemble import (
    FIXED,
    GRADING_NOTE,
    REVIEW_NOTE,
    RUBRIC_NOTE,
    SKIP_TAG,
    TEST,
    Assembled,
    CheckCall,
    assemble,
    parse_check_call,
    probe_source,
)
from feedback.teacher.notebook.safe_html import (
    SafeMarkdown,
    clean_notebook,
    code_span,
    markdown_text,
)
from feedback.teacher.review import course_modules, scan
from feedback.teacher.unit.caches import JAX_COMPILATION_CACHE_ENV, cache_root, tiny_model_cache
from feedback.teacher.unit.execute import Execution, execute
from feedback.teacher.unit.learner_outputs import marker, submitted
from feedback.teacher.unit.score import judge_cell, task_score, verdict_output


def _note(role: str, title: str, lines: list[str]) -> nbformat.NotebookNode:
    """Служебная ячейка Markdown со списком; строки из работы экранируются (кроме SafeMarkdown).

    В строках бывают имена файлов и код учащегося: как есть они стали бы HTML или ссылками
    в отчёте и в formgrader.
    """
    body = "\n".join(f"- {markdown_text(line)}" for line in lines)
    cell = nbformat.v4.new_markdown_cell(f"**{title}**\n\n{body}", id=f"course7-{role}")
    cell.metadata["course7"] = role
    return cell


SUBMITTED = "Так было в сданной тетрадке учащегося (не перепроверялось, баллы не ставятся)"
NOT_RUN = "При оценивании эта ячейка не выполнялась"


def _shown_outputs(
    executed: list[Any], submitted_raw: Any, skipped: bool, gpu: bool, limit: int
) -> list[Any]:
    """Что показать в ячейке: вывод при оценивании и/или сданный учащимся — с пометкой.

    В GPU-лабораторных оценивание идёт на крошечной модели, поэтому рядом с её выводом
    показывается сданный (настоящая модель, T4). Невыполненная ячейка показывает только
    сданный вывод.
    """
    if skipped:
        return submitted(submitted_raw, f"{NOT_RUN}. {SUBMITTED}", limit) or [marker(NOT_RUN)]
    return [*executed, *(submitted(submitted_raw, SUBMITTED, limit) if gpu else [])]


def kernel_caches(job: Job, unit_dir: Path) -> tuple[dict, list[str], list[str]]:
    """Окружение ядра и кэши: крошечная Gemma (только чтение) и кэш компиляции JAX.

    Кэш компиляции каждая работа получает своей копией: прогретый эталонным решением, он
    избавляет от компиляции XLA, а то, что допишет работа, с ней и исчезнет. Прогрев
    (``jax_cache_write``) пишет в общий кэш — так делает только эталонное решение.
    """
    env: dict[str, str] = {TINY.name: "1"}
    readonly: list[str] = []
    writable: list[str] = []
    if not job.gpu:
        return env, readonly, writable
    cache = str(tiny_model_cache(cache_root(job.cache_dir)))
    env[CACHE_DIR.name] = cache
    readonly.append(cache)
    jax_cache = job.jax_cache_write
    if jax_cache:
        writable.append(jax_cache)
    elif job.jax_cache_dir and Path(job.jax_cache_dir).is_dir():
        jax_cache = str(unit_dir / "home" / ".jax-cache")
        shutil.copytree(job.jax_cache_dir, jax_cache, dirs_exist_ok=True)
    if jax_cache:
        env.update(JAX_COMPILATION_CACHE_ENV, JAX_COMPILATION_CACHE_DIR=jax_cache)
    return env, readonly, writable


def cell_file_name(source: str) -> str:
    """Имя файла, под которым ipykernel выполняет ячейку с этим текстом (хэш текста)."""
    from ipykernel.compiler import get_tmp_hash_seed, murmur2_x86

    return f"{murmur2_x86(source, get_tmp_hash_seed())}.py"


def recorded_findings(
    record: list[dict[str, Any]],
    runnable: nbformat.NotebookNode,
    learner_cells: list[tuple[int, str]],
) -> list[Finding]:
    """Находки из записи ядра (:mod:`feedback.kernel_guard`) в ячейках учащегося.

    Запись называет файл ячейки; события ячеек выпуска (установка, импорт пакета курса)
    и зондов — не повод. Ячейка, которой в тетрадке нет (её текст выполнили из строки:
    ``get_ipython().run_cell(…)``), — код учащегося. Одинаковые события одной строки — одна
    находка.
    """
    labels = {
        cell_file_name(runnable.cells[index].source): (index, label)
        for index, label in learner_cells
    }
    ours = {cell_file_name(cell.source) for cell in runnable.cells if cell.cell_type == "code"}
    found: dict[tuple[str, int, str], Finding] = {}
    for entry in record:
        file = str(entry.get("file", ""))
        where = labels.get(file)
        reason = entry.get("reason")
        if not isinstance(reason, str) or not file or (where is None and file in ours):
            continue
        line = entry.get("line") if isinstance(entry.get("line"), int) else 0
        if where is None:
            label, code = FROM_STRING, ""
        else:
            index, label = where
            lines = runnable.cells[index].source.splitlines()
            code = lines[line - 1].strip()[:200] if 0 < line <= len(lines) else ""
        key = (label, line, reason)
        found.setdefault(key, Finding(label, line, code, f"при выполнении {reason[:300]}"))
    return list(found.values())


#: Подпись находки в ячейке, которую код учащегося выполнил из строки (её нет в тетрадке).
FROM_STRING = "ячейка, выполненная из строки"


def probe_marks(record: list[dict[str, Any]], token: str) -> dict[str, set[str]] | None:
    """Отпечатки наблюдений зондов по ячейкам-тестам (``None`` — записи ядра нет)."""
    if not any(entry.get("event") == STARTED for entry in record):
        return None
    marks: dict[str, set[str]] = {}
    for entry in record:
        if entry.get("event") == PROBE and entry.get("token") == token:
            marks.setdefault(str(entry.get("grade_id")), set()).add(str(entry.get("digest", "")))
    return marks


@dataclass
class Plan:
    """Что выполнить и как потом судить: собранная работа, зонды вместо тестов, случаи.

    ``runnable`` — то, что выполнит ядро: ячейки-тесты заменены зондами
    (:func:`~feedback.teacher.notebook.assemble.probe_source`), ячейки с тегом ``grading-skip``
    пусты.
    ``calls`` — по номерам ячеек-тестов: grade_id, вызов проверки и вытянутые параметры.
    """

    assembled: Assembled
    runnable: nbformat.NotebookNode
    token: str  # метка наблюдений этой работы (см. feedback.engine.probe)
    calls: dict[int, tuple[str, CheckCall, dict[str, Any]]]
    cases: dict[str, Any]  # вытянутые случаи, которые отличаются от случаев выпуска
    skipped: set[int]
    findings: list[Finding]  # что нашёл разбор кода учащегося до выполнения

    @property
    def graded(self) -> nbformat.NotebookNode:
        """Тетрадка, которую увидит преподаватель (тесты — как в выпуске)."""
        return self.assembled.notebook


def plan(job: Job) -> Plan:
    """Сборка работы, разбор кода учащегося, случаи оценивания и зонды вместо тестов."""
    release = nbformat.reads(json.dumps(job.release), as_version=4)
    assembled = assemble(release, job.upload)
    graded = assembled.notebook
    roles = assembled.roles

    setup = [
        cell.source
        for cell, role in zip(graded.cells, roles, strict=True)
        if role == FIXED and cell.cell_type == "code"
    ]
    findings = scan(
        [(label, graded.cells[index].source) for index, label in assembled.learner_cells],
        course_modules(setup),
        set(job.allowed),
        setup=setup,
    )

    runnable = copy.deepcopy(graded)
    token = secrets.token_hex(8)
    calls: dict[int, tuple[str, CheckCall, dict[str, Any]]] = {}
    cases: dict[str, Any] = {}
    skipped = set()
    for index, (cell, role) in enumerate(zip(graded.cells, roles, strict=True)):
        if role == FIXED and SKIP_TAG in cell.metadata.get("tags", []):
            skipped.add(index)
            runnable.cells[index].source = ""  # пустую ячейку nbclient не выполняет
        if role != TEST:
            continue
        grade_id = cell.metadata["nbgrader"]["grade_id"]
        call = parse_check_call(cell.source)
        rng = random.Random(f"{job.seed}:{grade_id}")
        params = call.check.grading_params(rng, call.params)
        calls[index] = (grade_id, call, params)
        if params != call.params:
            cases[grade_id] = params
        runnable.cells[index].source = probe_source(grade_id, call, params, token)
    return Plan(assembled, runnable, token, calls, cases, skipped, list(findings))


def execute_plan(work: Plan, job: Job) -> Execution:
    """Выполняет подготовленную тетрадку в песочнице с бюджетами и кэшами задания."""
    unit_dir = Path(job.unit_dir or ".")
    env, readonly, writable = kernel_caches(job, unit_dir)
    env[CALL_TIMEOUT.name] = str(job.limits.call_seconds)  # бюджет вызова — под тем же именем
    return execute(
        work.runnable,
        unit_dir,
        job.sandbox,
        job.limits,
        env,
        readonly,
        writable,
        job.cpus,
        job.kernel_template,
    )


def judge(
    work: Plan, execution: Execution, gpu: bool, limits: Limits
) -> tuple[dict[str, TaskOutcome], list[Finding]]:
    """Вердикты по наблюдениям (вне песочницы) и выводы в проверенной тетрадке.

    Возвращает итоги заданий и всё, что стоит посмотреть вручную: находки разбора кода,
    записи ядра и подозрения на подлог наблюдений.
    """
    graded = work.graded
    tests: dict[str, TaskOutcome] = {}
    review = list(work.findings)
    review += recorded_findings(execution.record, work.runnable, work.assembled.learner_cells)
    probes = probe_marks(execution.record, work.token)
    for index, cell in enumerate(graded.cells):
        if cell.cell_type != "code":
            continue
        executed = execution.notebook.cells[index]
        if index not in work.calls:
            cell.outputs = _shown_outputs(
                executed.get("outputs", []),
                work.assembled.submitted_outputs.get(index),
                skipped=index in work.skipped,
                gpu=gpu,
                limit=limits.submitted_output_chars,
            )
            cell.execution_count = executed.get("execution_count")
            continue
        grade_id, call, params = work.calls[index]
        result, suspicion = judge_cell(
            executed,
            grade_id,
            call.check.title,
            call.check,
            params,
            execution.status[index],
            execution.stopped,
            work.token,
            None if probes is None else probes.get(grade_id, set()),
        )
        cell.outputs = [verdict_output(result)]
        cell.execution_count = executed.get("execution_count")
        tests[grade_id] = task_score(grade_id, cell, result).outcome()
        if suspicion:
            review.append(Finding(grade_id, 0, "", suspicion))
    return tests, review


def annotate(
    work: Plan,
    job: Job,
    execution: Execution,
    tests: dict[str, TaskOutcome],
    review: list[Finding],
) -> UnitResult:
    """Заметки оценивания и ручной проверки, очистка HTML, критерии под ответами — результат."""
    graded = work.graded
    problems = [*job.notes, *work.assembled.notes]
    if execution.stopped:
        problems.append(f"Выполнение остановлено: {execution.stopped}.")
    notes = []
    if problems:
        notes.append(_note(GRADING_NOTE, "Замечания оценивания", problems))
    if review:
        lines = [
            SafeMarkdown(
                f"{markdown_text(item.cell)}, строка {markdown_text(item.line)}: "
                f"{markdown_text(item.reason)}"
                + (f" — {code_span(item.code)}" if item.code else "")
            )
            for item in review
        ]
        notes.append(_note(REVIEW_NOTE, "Посмотрите вручную (код обращается к проверке)", lines))
    clean_notebook(graded)  # здесь, а не в основном процессе: время — из бюджета работы
    # Критерии — после очистки: это текст курса из solutions/, а не из работы.
    graded.cells = [*notes, *with_rubrics(graded.cells, job.rubrics)]
    return UnitResult(
        student=job.student,
        lab=job.lab,
        file=job.file,
        autograded=graded,
        tests=tests,
        problems=problems,
        review=review,
        cases=work.cases,
        execution_seconds=round(execution.seconds, 3),
        peak_memory=execution.peak_memory,
        warm_kernel=execution.warm,
    )


def run_unit(job: Job) -> UnitResult:
    """Выполняет задание единицы и возвращает её результат (см. модуль)."""
    work = plan(job)
    execution = execute_plan(work, job)
    tests, review = judge(work, execution, job.gpu, job.limits)
    return annotate(work, job, execution, tests, review)


#: Абзац критериев, который авторы пишут к вопросам о собственном запуске учащегося на T4.
OWN_RUN_MARK = "Если работа проверялась автоматически"
RUBRIC_TITLE = "Критерии оценки — только для преподавателя, в отчёт учащемуся не попадают"
OWN_RUN_SHOWN = (
    "Ответ опирается на собственный запуск учащегося: его сданные выводы показаны в ячейках "
    "выше с пометкой «📎 Так было в сданной тетрадке учащегося»."
)
OWN_RUN_MISSING = (
    "Ответ опирается на собственный запуск учащегося, но выводов в сданной тетрадке нет: "
    "оценивайте по тексту ответа."
)


def rubrics(source: Path) -> dict[str, dict[str, Any]]:
    """Критерии письменных ответов лабораторной из её исходника в solutions/ (для задания).

    Это области решения ``### BEGIN SOLUTION`` … ``### END SOLUTION`` ячеек, которые
    оцениваются вручную (образец ответа и «Критерии для преподавателя»); в выпуске они
    заменены заглушкой. Читает их родительский процесс
    (:func:`feedback.teacher.grading.run.job_for`):
    сама единица solutions/ не видит. ``own_run`` — ответ опирается на собственный запуск
    учащегося (в критериях есть абзац :data:`OWN_RUN_MARK`).
    """
    found = {}
    for cell in nbformat.read(source, as_version=4).cells:
        grading = cell.metadata.get("nbgrader", {})
        if cell.cell_type != "markdown" or not (grading.get("solution") and grading.get("grade")):
            continue
        lines = cell.source.splitlines()
        begin = [i for i, line in enumerate(lines) if "### BEGIN SOLUTION" in line]
        end = [i for i, line in enumerate(lines) if "### END SOLUTION" in line]
        text = "\n".join(lines[begin[0] + 1 : end[-1]]).strip() if begin and end else ""
        if text:
            found[grading["grade_id"]] = {"text": text, "own_run": OWN_RUN_MARK in text}
    return found


def _submitted_shown(cells: list[Any]) -> bool:
    """Показан ли в проверенной тетрадке хоть один сданный учащимся вывод (с пометкой)."""
    return any(
        output.get("output_type") == "display_data"
        and str(output.get("data", {}).get("text/plain", "")).endswith(SUBMITTED)
        for cell in cells
        if cell.cell_type == "code"
        for output in cell.get("outputs", [])
    )


def rubric_cell(grade_id: str, rubric: dict[str, Any], shown: bool) -> nbformat.NotebookNode:
    """Ячейка критериев под письменным ответом: Markdown курса как есть, цитатой."""
    parts = [f"**{RUBRIC_TITLE}**"]
    if rubric.get("own_run"):
        parts.append(f"_{OWN_RUN_SHOWN if shown else OWN_RUN_MISSING}_")
    parts.append(str(rubric["text"]))
    quoted = "\n".join(f"> {line}".rstrip() for line in "\n\n".join(parts).splitlines())
    cell = nbformat.v4.new_markdown_cell(quoted, id=f"course7-{RUBRIC_NOTE}-{grade_id}"[:64])
    cell.metadata["course7"] = RUBRIC_NOTE
    return cell


def with_rubrics(cells: list[Any], found: dict[str, dict[str, Any]]) -> list[Any]:
    """Ячейки тетрадки, где под каждым письменным ответом с критериями — ячейка критериев."""
    shown = _submitted_shown(cells)
    result = []
    for cell in cells:
        result.append(cell)
        grading = cell.metadata.get("nbgrader", {})
        grade_id = grading.get("grade_id")
        if grading.get("solution") and grading.get("grade") and grade_id in found:
            result.append(rubric_cell(grade_id, found[grade_id], shown))
    return result


def failed_result(job: Job, problem: str) -> UnitResult:
    """Результат работы, которую не удалось оценить: выпуск с заметкой и нули."""
    return unassessed(job.student, job.lab, job.file, job.release, problem)


def unassessed(
    student: str, lab: str, file: str, release: dict[str, Any], problem: str
) -> UnitResult:
    """Неоценённая работа: выпуск с заметкой «Работа не оценена», нули за все проверки."""
    notebook = nbformat.reads(json.dumps(release), as_version=4)
    note = nbformat.v4.new_markdown_cell(
        f"**Работа не оценена**\n\n- {markdown_text(problem)}.", id=f"course7-{GRADING_NOTE}"
    )
    note.metadata["course7"] = GRADING_NOTE
    notebook.cells.insert(0, note)
    clean_notebook(notebook)  # значки Colab и Kaggle выпуска — подписи, как в оценённой работе
    tests = {}
    for cell in notebook.cells:
        grading = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and grading.get("grade") and not grading.get("solution"):
            tests[grading["grade_id"]] = TaskOutcome(
                score=0.0, points=grading.get("points", 0), mistake=NOT_ASSESSED
            )
    return UnitResult(
        student=student,
        lab=lab,
        file=file,
        autograded=nbformat.from_dict(json.loads(nbformat.writes(notebook))),
        tests=tests,
        problems=[f"Работа не оценена: {problem}."],
        assessed=False,
    )

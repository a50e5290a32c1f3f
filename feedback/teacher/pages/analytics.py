"""Что класс понял не так: типичные ошибки, похожие ответы и сводка после ``make grade``.

Вердикт каждой непройденной проверки несёт код типичной ошибки
(:attr:`feedback.engine.result.CheckResult.mistake`, список — :mod:`feedback.answers.mistakes`);
единица кладёт его в результат (:attr:`feedback.teacher.core.results.TaskOutcome.mistake`),
а таблицы класса — в строку mistakes.csv (:mod:`feedback.teacher.records.mistakes`). После записи
всех таблиц
:func:`after_grading` пишет:

- similar.csv — пары почти одинаковых ответов (:mod:`feedback.teacher.pages.similarity`) по
  проверенным тетрадкам autograded/;
- summary.html — страница преподавателя (:mod:`feedback.teacher.pages.summary`);
- mistakes.md — три самые частые ошибки каждой лабораторной с подсказкой, которую видели
  учащиеся: к следующей лекции.

Таблицы класса ``make grade`` передаёт из памяти — строки, которые он только что записал
(:func:`feedback.teacher.records.class_tables.write`, с работами прежних запусков); остальное
(выпуски, autograded/, база оценок, таблицы оценок) читается из рабочей папки. Пересчитать
сводку можно и отдельно (``make summary``, :mod:`feedback.teacher.commands.summary`) — тогда
и таблицы класса читаются из папки.
"""

from __future__ import annotations

import difflib
import json
import sys
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from feedback.formatting import plural_form
from feedback.teacher.core import files
from feedback.teacher.core.labs import Lab
from feedback.teacher.core.settings import Settings
from feedback.teacher.core.tables import (
    ChangeRow,
    GradeRow,
    ManualArchiveRow,
    MistakeRow,
    Problem,
    ReviewRow,
    SimilarRow,
    TaskGradeRow,
    TimingRow,
    read_rows,
    write_rows,
)
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.pages.class_data import (
    NO_CODE,
    SLOW_FACTOR,
    SLOW_SECONDS,
    ClassData,
    Pending,
    Reopened,
    TaskStats,
)
from feedback.teacher.pages.similarity import similar_rows, tasks_from
from feedback.teacher.records.class_tables import ClassTables
from feedback.teacher.records.mistakes import mistake_description

# --------------------------------------------------------------------------- чтение папки


def releases(workspace: Workspace, labs: Iterable[Lab]) -> dict[str, dict]:
    """Выпуски лабораторных курса ``labs`` из рабочей папки как JSON — те, что зарегистрированы.

    Лабораторная, которую ``make grade`` ещё не регистрировал (выпуска в папке нет), в сводку
    не попадает.
    """
    found = {}
    for lab in sorted(labs, key=lambda lab: lab.id):
        path = workspace.released(lab.id)
        if path.is_file():
            found[lab.id] = json.loads(path.read_text(encoding="utf-8"))
    return found


def auto_tasks(release: Mapping) -> list[str]:
    """Ячейки-тесты автопроверки выпуска (grade_id по порядку)."""
    tasks = []
    for cell in release.get("cells", []):
        grading = cell.get("metadata", {}).get("nbgrader", {})
        if cell.get("cell_type") == "code" and grading.get("grade") and not grading.get("solution"):
            tasks.append(grading["grade_id"])
    return tasks


def autograded(workspace: Workspace) -> Iterator[tuple[str, str, dict]]:
    """Проверенные тетрадки: (учащийся, лабораторная, тетрадка JSON) из autograded/."""
    root = workspace.autograded
    for path in sorted(root.glob("*/*/*.ipynb")):
        lab, student = path.parent.name, path.parent.parent.name
        if path.stem != lab:
            continue
        try:
            yield student, lab, json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue


def titles(release: Mapping) -> tuple[str | None, dict[str, str]]:
    """Название лабораторной и её оцениваемых ячеек — те же, что в отчёте учащегося.

    Берутся из выпуска в рабочей папке (его пишет ``make grade`` из solutions/, а не работа
    учащегося) функцией отчёта :func:`feedback.teacher.pages.preprocessors.report_titles`:
    лабораторная — первый заголовок, проверка — её русское название из пакета курса,
    письменный ответ — «Вопрос N».
    """
    import nbformat

    from feedback.teacher.pages.preprocessors import REPORT_KEY, report_titles

    notebook = nbformat.reads(json.dumps(release), as_version=4)
    resources: dict[str, Any] = {}
    report_titles(notebook, resources)
    named = {
        cell.metadata.nbgrader.grade_id: cell.metadata[REPORT_KEY]["title"]
        for cell in notebook.cells
        if REPORT_KEY in cell.metadata and cell.metadata.get("nbgrader", {}).get("grade_id")
    }
    return resources.get(REPORT_KEY, {}).get("lab_title"), named


# --------------------------------------------------------------------------- сводка данных


def pending_manual(workspace: Workspace) -> list[Pending]:
    """Работы, которые ждут преподавателя: ответы без ручной оценки и проверки на просмотре.

    ``tasks``/``points`` — ждут ручной оценки
    (:attr:`feedback.teacher.records.gradebook.TaskScore.pending`,
    то же число, что в отчёте учащегося и в pending_manual_points grades.csv);
    ``flagged``/``flagged_points`` — баллы автопроверки, которые ждут просмотра
    (needs_review.csv, неоценённая работа; needs_review_points).
    """
    from feedback.teacher.records import gradebook

    if not workspace.has_gradebook:
        return []
    return _pending(gradebook.results(workspace))


def _pending(found: Mapping) -> list[Pending]:
    waiting = []
    for (student, lab), result in sorted(found.items()):
        tasks = sorted(name for name, task in result.tasks.items() if task.pending)
        flagged = sorted(name for name, task in result.tasks.items() if task.flagged)
        if tasks or flagged:
            waiting.append(
                Pending(student, lab, tasks, result.pending_points, flagged, result.flagged_points)
            )
    return waiting


#: Сколько строк прежнего и нового ответа показывать вокруг изменения.
DIFF_CONTEXT = 2


def answer_diff(old: str, new: str) -> list[tuple[str, str]]:
    """Разница прежнего и нового ответа построчно (:class:`Reopened`), без строк-заголовков
    файлов: «-» — было, «+» — стало, « » — то же, «@» — начало куска."""
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=DIFF_CONTEXT)
    found = []
    for line in list(lines)[2:]:
        kind = line[:1] if line[:1] in "-+ " else "@"
        found.append((kind, line[1:] if kind != "@" else "…"))
    return found


def reopened(workspace: Workspace, found: Mapping) -> list[Reopened]:
    """Снятые ручные оценки (manual_archive.csv), чьи ответы всё ещё ждут преподавателя.

    Последняя строка архива на каждое задание; оценённое заново в formgrader здесь уже не
    показывается (история — в самом manual_archive.csv).
    """
    latest: dict[tuple[str, str, str], ManualArchiveRow] = {}
    for row in read_rows(workspace.table(ManualArchiveRow), ManualArchiveRow):
        latest[(row.student_id, row.lab, row.task)] = row
    shown = []
    for (student, lab, task), row in sorted(latest.items()):
        result = found.get((student, lab))
        score = result.tasks.get(task) if result else None
        if score is None or not score.waiting:
            continue
        diff = answer_diff(row.old_answer, row.new_answer)
        shown.append(Reopened(student, lab, task, row.manual_points, row.comment, diff))
    return shown


#: Родительный падеж месяцев для даты сводки.
MONTHS = "января февраля марта апреля мая июня июля августа сентября октября ноября декабря".split()


def as_of_text(moment: datetime) -> str:
    """Когда составлена сводка: «5 декабря 2026, 09:10 (UTC+03:00)» — местное время машины."""
    moment = moment.astimezone()
    offset = moment.strftime("%z")
    zone = f"UTC{offset[:3]}:{offset[3:]}" if offset else "местное время"
    return f"{moment.day} {MONTHS[moment.month - 1]} {moment.year}, {moment:%H:%M} ({zone})"


def slow_works(timings: list[TimingRow]) -> list[TimingRow]:
    """Строки timings.csv долгих работ, самые долгие первыми.

    Только заметно долгие, а не просто первые по времени: секунды обычной работы от запуска
    к запуску разные, а сводка одних и тех же итогов должна быть одной и той же (make grade
    с JOBS=1, 2 и Dask сравниваются побайтно); долгую работу — зависшую, упёршуюся в лимит —
    видно в любом запуске.
    """
    by_lab: dict[str, list[float]] = {}
    for row in timings:
        if row.seconds:
            by_lab.setdefault(row.lab, []).append(row.seconds)
    medians = {lab: sorted(values)[len(values) // 2] for lab, values in by_lab.items()}
    slow = [
        row
        for row in timings
        if row.seconds and row.seconds >= max(SLOW_SECONDS, SLOW_FACTOR * medians[row.lab])
    ]
    return sorted(slow, key=lambda row: (-(row.seconds or 0.0), row.student_id))


def class_data(
    workspace: Workspace,
    labs: Iterable[Lab],
    tables: ClassTables | None = None,
    slowest: int = 10,
    now: datetime | None = None,
) -> ClassData:
    """Данные сводки после оценивания (``now`` — когда, для страницы).

    ``tables`` — таблицы класса, которые только что записал ``make grade``
    (:func:`feedback.teacher.records.class_tables.write`); без них — из рабочей папки.
    """
    from feedback.teacher.records import gradebook

    tables = tables if tables is not None else ClassTables.read(workspace)
    released = releases(workspace, labs)
    names = {lab: titles(release) for lab, release in released.items()}
    by_task = read_rows(workspace.table(TaskGradeRow), TaskGradeRow)
    mistakes = tables.mistakes
    labs = sorted(released)
    stats: dict[tuple[str, str], TaskStats] = {}
    order = {lab: auto_tasks(released[lab]) for lab in labs}
    for lab in labs:
        for task in order[lab]:
            stats[(lab, task)] = TaskStats(lab, task)
    failed_works: set[tuple[str, str, str]] = set()
    for row in by_task:
        key = (row.assignment, row.grade_id)
        if key not in stats:
            continue  # письменный ответ или задание, которого больше нет в выпуске
        entry = stats[key]
        entry.total += 1
        entry.students.add(row.student_id)
        score, top = row.auto_score, row.max_score or 0.0
        if top > 0 and score is not None and score >= top:
            entry.passed += 1
        else:
            failed_works.add((row.student_id, row.assignment, row.grade_id))
    coded: set[tuple[str, str, str]] = set()
    for row in mistakes:
        work_key = (row.student_id, row.lab, row.task)
        key = (row.lab, row.task)
        if key not in stats or work_key not in failed_works or work_key in coded:
            continue
        coded.add(work_key)
        stats[key].add_mistake(row.student_id, row.mistake, row.hint)
    for student, lab, task in failed_works - coded:
        stats[(lab, task)].add_mistake(student, NO_CODE)
    scores: dict[str, list[tuple[float, float]]] = {lab: [] for lab in labs}
    for row in read_rows(workspace.table(GradeRow), GradeRow):
        if row.assignment in scores:
            scores[row.assignment].append((row.score or 0.0, row.max_score or 0.0))
    timings = slow_works(tables.timings)
    found = gradebook.results(workspace) if workspace.has_gradebook else {}
    return ClassData(
        labs=labs,
        scores=scores,
        tasks={lab: [stats[(lab, task)] for task in order[lab]] for lab in labs},
        problems=tables.problems,
        review=tables.review,
        similar=read_rows(workspace.table(SimilarRow), SimilarRow),
        pending=_pending(found),
        slowest=timings[:slowest],
        titles={lab: named[0] for lab, named in names.items() if named[0]},
        task_titles={
            (lab, task): title for lab, named in names.items() for task, title in named[1].items()
        },
        reopened=reopened(workspace, found),
        tables=[row.FILE for row in LINKED_TABLES if workspace.table(row).is_file()],
        changes=len(read_rows(workspace.table(ChangeRow), ChangeRow)),
        as_of=as_of_text(now or datetime.now()),
    )


#: Таблицы рабочей папки, на которые ссылается сводка (если они есть).
LINKED_TABLES = (
    GradeRow,
    MistakeRow,
    SimilarRow,
    Problem,
    ReviewRow,
    TimingRow,
    ChangeRow,
    ManualArchiveRow,
)


# --------------------------------------------------------------------------- mistakes.md


def lecture_notes(data: ClassData) -> str:
    """Markdown к следующей лекции: по три самые частые ошибки каждой лабораторной."""
    lines = ["# Типичные ошибки класса — к следующей лекции", ""]
    for lab in data.labs:
        top = data.top_mistakes(lab)
        works = data.works(lab)
        if not works:
            continue
        lines += [f"## {_md(data.lab_title(lab))}", ""]
        blank = data.not_attempted(lab)
        if blank:
            lines += [
                f"Не приступали хотя бы к одному заданию: {blank} из {works} "
                f"{plural_form(str(works), 'работы', 'работ', 'работ')} (в ошибках не считаются).",
                "",
            ]
        if not top:
            lines += ["Типичных ошибок не найдено.", ""]
            continue
        for number, (mistake, count, hint) in enumerate(top, start=1):
            lines.append(
                f"{number}. **{_md(mistake_description(mistake))}** (`{mistake}`) — {count} из "
                f"{works} {plural_form(str(works), 'работы', 'работ', 'работ')}."
            )
            if hint:
                lines.append(f"   Подсказка, которую видели учащиеся: «{_md(hint)}»")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _md(text: str) -> str:
    """Текст для Markdown без разметки: подсказки курса, но мало ли что в них попадёт."""
    for char in "\\`*_[]<>#|":
        text = text.replace(char, "\\" + char)
    return " ".join(text.split())


# --------------------------------------------------------------------------- всё вместе


def write_similar(workspace: Workspace, labs: Iterable[Lab]) -> Path:
    """similar.csv по проверенным тетрадкам autograded/ и выпускам лабораторных."""
    tasks = tasks_from(releases(workspace, labs), autograded(workspace))
    path = workspace.table(SimilarRow)
    write_rows(path, SimilarRow, similar_rows(tasks))
    return path


@dataclass(frozen=True)
class Analytics:
    """Что написала аналитика после оценивания и сколько секунд это заняло."""

    similar: Path
    summary: Path
    notes: Path
    seconds: float


def after_grading(settings: Settings, tables: ClassTables | None = None) -> Analytics:
    """similar.csv, summary.html и mistakes.md.

    ``tables`` — таблицы класса, только что записанные ``make grade``; без них (``make
    summary``) — из рабочей папки.
    """
    started = time.monotonic()
    similar = write_similar(settings.workspace, settings.labs)
    summary, notes = write_pages(settings, tables)
    return Analytics(similar, summary, notes, time.monotonic() - started)


def write_pages(
    settings: Settings, tables: ClassTables | None = None, now: datetime | None = None
) -> tuple[Path, Path]:
    """summary.html и mistakes.md по таблицам и базе оценок рабочей папки, как они есть сейчас.

    Их пишет каждая команда, которая меняет оценки или их таблицы: ``make grade``, ``make
    feedback`` и ``make export`` (после ручной проверки в formgrader), ``make summary``, — и
    страница не остаётся с работами «ждут преподавателя», которые уже оценены.
    """
    from feedback.teacher.pages.summary import write_summary

    workspace = settings.workspace
    data = class_data(workspace, settings.labs, tables, now=now)
    summary = write_summary(workspace, data)
    notes = workspace.mistakes_list
    files.write_text(notes, lecture_notes(data))
    return summary, notes


def refresh(settings: Settings) -> Path | None:
    """Сводка заново после ручной проверки (``make feedback``, ``make export``); сбой сводки не
    отменяет сделанного командой — он только сказан. Возвращает путь или ``None``."""
    if not settings.workspace.has_gradebook:
        return None
    try:
        summary, _ = write_pages(settings)
    except Exception as error:
        print(
            f"Сводка для преподавателя не обновлена: {type(error).__name__}: {error}",
            file=sys.stderr,
        )
        return None
    return summary

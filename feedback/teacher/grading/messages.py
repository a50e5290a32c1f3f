"""Что ``make grade`` говорит преподавателю в консоли: все строки оценивания в одном месте.

Строки подготовки (:func:`say`), хода (:func:`progress_line`), итога сбора (:func:`count_line`),
куда что записано (:func:`written`) и отказов (:func:`not_started` и др.). Всё, что пришло из
работы учащегося (имя, лабораторная), проходит через
:func:`~feedback.teacher.core.console.safe_console`: управляющие символы терминала из имени
файла не должны ни перекрасить, ни переписать экран преподавателя.
"""

from __future__ import annotations

import errno
import sys
from pathlib import Path

import nbformat
from nbgrader.utils import is_grade, is_solution, is_task

from feedback.formatting import format_plain, plural
from feedback.teacher.core.console import safe_console
from feedback.teacher.core.results import UnitResult
from feedback.teacher.core.tables import (
    ChangeRow,
    GradeRow,
    MistakeRow,
    Problem,
    ReviewRow,
    SimilarRow,
    TaskGradeRow,
)
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.intake.uploads import Submission

# --------------------------------------------------------------------------- подготовка


def say(text: str) -> None:
    """Строка подготовки в консоли (до строк «[1/N]»): первый make grade GPU-лабораторной
    готовится десятки секунд — эталон, заготовки ядер, крошечная модель, — и молчание выглядело
    бы зависанием."""
    print(f"… {text}", file=sys.stderr, flush=True)


PREPARING = "готовлю оценивание: песочница, лабораторные в базе оценок…"
TINY_MODEL = "готовлю крошечную модель для GPU-лабораторных…"


def works_to_grade(count: int) -> str:
    return f"работ к оцениванию: {count}"


def starting_templates(profiles: list[str]) -> str:
    return f"запускаю заготовки ядер ({', '.join(sorted(profiles))})…"


def reference_started(lab: str, gpu: bool) -> str:
    kind = "GPU-лабораторная, крошечная модель — до минуты" if gpu else "секунды"
    return f"проверяю эталонное решение {lab} в песочнице (раз на версию; {kind})…"


def reference_failed(lab: str, seconds: float) -> str:
    return f"эталонное решение {lab} не прошло своих проверок ({format_plain(seconds, 1)} с)"


def reference_passed(lab: str, seconds: float) -> str:
    return f"эталонное решение {lab} проверено ({format_plain(seconds, 1)} с)"


def references_broken(failures: list[str]) -> str:
    return (
        "эталонное решение не проходит собственные проверки при оценивании — "
        "исправьте solutions/: " + "; ".join(failures)
    )


def busy(folder: Path) -> str:
    """Отказ второго запуска в той же рабочей папке (:mod:`~feedback.teacher.grading.lock`)."""
    return f"в {folder} уже идёт другой make grade (или make feedback): дождитесь его конца"


def no_source(source: Path) -> str:
    return f"Не найдены работы: {source} — нужна папка или архив .zip."


def no_notebooks(source: Path) -> str:
    return f"нет работ: в {source} не найдено ни одной тетрадки .ipynb"


def nothing_graded(source: Path, problems: Path) -> str:
    return (
        f"ни одна работа не оценена — все файлы из {source} стали строками "
        f"{problems}: там сказано, что с каждым не так. Исправьте и запустите "
        "make grade ещё раз."
    )


# --------------------------------------------------------------------------- ход


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
    уже оценённый и не изменившийся ответ и нетронутая заготовка, получившая 0, не в счёт);
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


def merge_failed(error: Exception) -> str:
    """Строка problems.csv о результате, который не удалось записать."""
    return f"не удалось записать результат: {type(error).__name__}: {error}"


# --------------------------------------------------------------------------- итог


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


def analytics_failed(error: Exception) -> str:
    return f"Сводка для преподавателя не составлена: {type(error).__name__}: {error}"


def analytics_done(seconds: float) -> str:
    return f"Сводка составлена за {seconds:.1f} с"


def written(workspace: Workspace) -> list[str]:
    """Куда записано всё, что нужно преподавателю после запуска (stdout ``make grade``)."""
    return [
        f"Оценки: {workspace.table(GradeRow)}",
        f"Оценки по заданиям: {workspace.table(TaskGradeRow)}",
        f"Проблемные работы: {workspace.table(Problem)}",
        f"Посмотреть вручную: {workspace.table(ReviewRow)}",
        f"Отчёты для учащихся: {workspace.feedback_reports}",
        f"Что изменилось с прошлого запуска: {workspace.table(ChangeRow)}",
        f"Типичные ошибки: {workspace.table(MistakeRow)} (к лекции — {workspace.MISTAKES_LIST})",
        f"Похожие ответы: {workspace.table(SimilarRow)}",
        f"Сводка для преподавателя: {workspace.summary}",
    ]


# --------------------------------------------------------------------------- отказы


def not_started(error: Exception) -> str:
    """Код выхода 2: настройка или ввод преподавателя."""
    return f"Оценивание не началось: {error}"


def graded_nothing(error: Exception) -> str:
    """Код выхода 1: все файлы — строки problems.csv."""
    return f"Оценивание прошло впустую: {error}"


def interrupted(error: OSError) -> str:
    """Код выхода 2: сбой файловой системы у преподавателя."""
    return safe_console(f"Оценивание прервано: {teacher_fault(error)}")


def teacher_fault(error: OSError) -> str:
    """Сбой у преподавателя (место, права, папка только для чтения) — по-русски, с путём."""
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

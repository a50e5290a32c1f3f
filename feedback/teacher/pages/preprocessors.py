"""Препроцессоры nbgrader курса: выпуск с русскими заглушками и отчёты.

Внутри функции решение заменяется на ``raise NotImplementedError`` — проверка поймает
его и скажет «функция ещё не реализована». Но решение на верхнем уровне ячейки
(например, заполнение таблицы) так заменять нельзя: «Run all» остановился бы на
этой ячейке, и учащийся не увидел бы вердиктов ниже. Там остаётся только
комментарий-приглашение, а проверка увидит незаполненные «…». То же для решения
внутри выражения (аргументы вызова): его начало помечается ``### BEGIN SOLUTION inline``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from nbgrader.preprocessors import ClearSolutions, GetGrades, NbGraderPreprocessor
from traitlets import Dict, Unicode

from feedback.engine.probe import OBSERVATION_MIME
from feedback.formatting import format_plain, plural_form
from feedback.teacher.notebook.assemble import ADDED, REVIEW_NOTE, RUBRIC_NOTE
from feedback.teacher.records.gradebook import manual_pending

CODE_STUB = '# Добавьте сюда свой код\nraise NotImplementedError("Добавьте сюда свой код")'
TOP_LEVEL_STUB = "# Добавьте сюда свой код"
TEXT_STUB = "_Впишите сюда свой ответ._"
INLINE_MARK = "inline"


class CourseClearSolutions(ClearSolutions):
    """ClearSolutions, который не ставит ``raise`` на верхний уровень ячейки и в выражения."""

    code_stub = Dict({"python": CODE_STUB}, help="Русская заглушка для кода").tag(config=True)
    text_stub = Unicode(TEXT_STUB, help="Русская заглушка для письменного ответа").tag(config=True)
    top_level_stub = Unicode(
        TOP_LEVEL_STUB, help="Заглушка для решения, начинающегося с первого столбца"
    ).tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and self._wants_comment_stub(cell.source):
            saved = self.code_stub
            self.code_stub = {language: self.top_level_stub for language in saved}
            try:
                return super().preprocess_cell(cell, resources, cell_index)
            finally:
                self.code_stub = saved
        return super().preprocess_cell(cell, resources, cell_index)

    def _wants_comment_stub(self, source: str) -> bool:
        return any(
            self.begin_solution_delimeter in line
            and (not line[:1].isspace() or line.rstrip().endswith(INLINE_MARK))
            for line in source.splitlines()
        )


#: Роли ячеек только для преподавателя (:mod:`feedback.teacher.notebook.assemble`): что посмотреть
#: вручную и критерии оценки ответов.
TEACHER_ONLY = {REVIEW_NOTE, RUBRIC_NOTE}
#: Ключ метаданных ячейки и ресурсов отчёта с тем, что отчёт называет по-русски.
REPORT_KEY = "course7_report"
#: Ключ метаданных ячейки, которую отчёт сворачивает (:func:`folded`).
FOLD_KEY = "course7_fold"


class ReportCleanup(NbGraderPreprocessor):
    """Готовит проверенную тетрадку к отчёту для учащегося.

    Убирает заметки для преподавателя (что посмотреть вручную, критерии оценки) и служебные
    данные проверок. Трассировки ошибок в коде самого учащегося (решения и добавленные
    ячейки) остаются — они ему полезны; в ячейках курса ошибка — следствие (например,
    NameError после невыполненного задания), и от неё остаётся одна строка. Остановка по
    времени везде — одна строка. Ещё даёт русские названия: лабораторной — её заголовок
    ``# …``, каждой оцениваемой ячейке — название проверки или заголовок задания
    (:func:`report_titles`), — и помечает ячейки кода курса без баллов, которые отчёт
    сворачивает (:func:`folded`).
    """

    def preprocess(self, nb, resources):
        nb.cells = [cell for cell in nb.cells if cell.metadata.get("course7") not in TEACHER_ONLY]
        report_titles(nb, resources)
        for cell in nb.cells:
            if folded(cell):
                cell.metadata[FOLD_KEY] = True
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type != "code":
            return cell, resources
        cell.outputs = [
            output for output in cell.outputs if OBSERVATION_MIME not in output.get("data", {})
        ]
        learners = bool(cell.metadata.get("nbgrader", {}).get("solution"))
        learners = learners or cell.metadata.get("course7") == ADDED
        for output in cell.outputs:
            if output.output_type != "error":
                continue
            if output.ename in TIMEOUTS:
                output.traceback = [TIMEOUT_TEXT]
            elif not learners:
                output.traceback = [f"{output.ename}: {output.evalue}"]
            else:
                output.traceback = [
                    frame for frame in output.traceback if PACKAGE_DIR not in str(frame)
                ]
        return cell, resources


def folded(cell) -> bool:
    """Ячейка кода курса без баллов: в отчёте она свёрнута (``<details>``), чтобы первый экран
    занимали задания и ответы, а не установка пакета и подготовка.

    Не сворачиваются оцениваемые ячейки, ответы учащегося и добавленные им ячейки.
    """
    grading = cell.metadata.get("nbgrader", {})
    return (
        cell.cell_type == "code"
        and not (grading.get("grade") or grading.get("solution") or grading.get("task"))
        and cell.metadata.get("course7") != ADDED
    )


# --------------------------------------------------------------------------- названия

_CYRILLIC = re.compile("[А-Яа-яЁё]")
_BOLD_LEAD = re.compile(r"^\*\*(.+?)\*\*")


def _course_markdown(cell) -> bool:
    """Markdown-ячейка курса: не ответ учащегося, не добавленная им и не заметка оценивания."""
    return (
        cell.cell_type == "markdown"
        and not cell.metadata.get("nbgrader", {}).get("solution")
        and "course7" not in cell.metadata
    )


def _plain(text: str) -> str:
    text = text.strip().strip("#").replace("`", "").strip().strip("*_").strip()
    return text.rstrip(".:").strip()


def _heading(cells: list, index: int) -> str | None:
    """Ближайший заголовок ``#…`` курса выше ячейки ``index``."""
    for cell in reversed(cells[:index]):
        if not _course_markdown(cell):
            continue
        for line in cell.source.splitlines():
            if line.startswith("#") and _plain(line):
                return _plain(line)
    return None


def _question(cells: list, index: int) -> str | None:
    """«Вопрос 1» — начало ячейки с вопросом прямо над письменным ответом."""
    above = cells[index - 1] if index > 0 else None
    if above is not None and _course_markdown(above):
        lead = _BOLD_LEAD.match(above.source.strip())
        if lead and _plain(lead.group(1)):
            return _plain(lead.group(1))
    return None


def check_title(source: str) -> str | None:
    """Русское название проверки из ячейки-теста (``модуль.check_…(…)``), если оно есть."""
    try:
        from feedback.teacher.notebook.assemble import parse_check_call

        title = parse_check_call(source).check.title
    except Exception:  # не вызов проверки курса — назовём ячейку по заголовку
        return None
    return title if _CYRILLIC.search(title or "") else None


def report_titles(nb, resources) -> None:
    """Русские названия: лабораторная — в ``resources``, оцениваемые ячейки — в метаданных.

    Лабораторная называется первым заголовком ``# …`` тетрадки. Проверка — своим русским
    названием, а если его нет (название — имя функции), — заголовком задания над ней;
    письменный ответ — вопросом над ним («Вопрос 1»). Берутся только ячейки курса: текст
    учащегося названием не становится.
    """
    lab = next(
        (
            _plain(line)
            for cell in nb.cells
            if _course_markdown(cell)
            for line in cell.source.splitlines()
            if line.startswith("# ") and _plain(line)
        ),
        None,
    )
    resources.setdefault(REPORT_KEY, {})["lab_title"] = lab
    for index, cell in enumerate(nb.cells):
        grading = cell.metadata.get("nbgrader", {})
        if not (grading.get("grade") or grading.get("task")):
            continue
        title = None
        if cell.cell_type == "code" and grading.get("grade") and not grading.get("solution"):
            title = check_title(cell.source)
        elif grading.get("solution"):
            title = _question(nb.cells, index)
        title = title or _heading(nb.cells, index) or grading.get("grade_id", "")
        cell.metadata[REPORT_KEY] = {"title": title}


# --------------------------------------------------------------------------- баллы


def points_text(value: Any) -> str:
    """Баллы по-русски: «2», «2,5», «0,33» (десятичная запятая, без лишних нулей)."""
    return format_plain(float(value or 0), 2)


def points_word(value: Any) -> str:
    """«1 балл», «3 балла», «2,5 балла», «5 баллов»."""
    shown = points_text(value)
    return f"{shown} {plural_form(shown, 'балл', 'балла', 'баллов')}"


def points_of(value: Any) -> str:
    """После «из» и «до»: «1 балла», «2,5 балла», «3 баллов», «21 балла», «11 баллов»."""
    shown = points_text(value)
    one = "," in shown or (shown.endswith("1") and not shown.endswith("11"))
    return f"{shown} {'балла' if one else 'баллов'}"


def out_of(score: Any, total: Any) -> str:
    """«2 из 13 баллов», «1 из 1 балла», «2 из 2,5 балла»."""
    return f"{points_text(score)} из {points_of(total)}"


def _kind(cell) -> str | None:
    """«auto» — автопроверка, «manual» — баллы ставит преподаватель, ``None`` — без баллов."""
    grading = cell.metadata.get("nbgrader", {})
    if grading.get("task") or (grading.get("grade") and grading.get("solution")):
        return "manual"
    if grading.get("grade"):
        return "auto"
    return None


class ReportGrades(GetGrades):
    """GetGrades для отчёта: баллы и комментарии из базы, плюс то, что учащийся читает первым.

    Ответ, которому преподаватель ещё не поставил баллов (ни автоматических, ни ручных), —
    ``pending`` (:func:`feedback.teacher.records.gradebook.manual_pending`, то же правило, что у
    grades.csv): в отчёте он «ожидает проверки преподавателем», а не «0 из 1». Проверка,
    помеченная для просмотра преподавателем (needs_review.csv), — не ``pending``: эта
    пометка для преподавателя, в отчёте её нет, как и самих находок. Комментарий
    преподавателя (``comment``) отделён от автоматического (``auto_comment``, например
    «Нет ответа.»), пустой комментарий — не комментарий. В
    ``resources`` — заголовок («Лабораторная 7.4… — 2 из 13 баллов, ещё 3 балла — после
    проверки преподавателем») и строка итога вверху отчёта (:func:`summary`).
    """

    def preprocess(self, nb, resources):
        nb, resources = super().preprocess(nb, resources)
        report = resources.setdefault(REPORT_KEY, {})
        report.update(
            summary(nb, resources["nbgrader"]["score"], resources["nbgrader"]["max_score"])
        )
        return nb, resources

    def _get_comment(self, cell, resources):
        comment = self.gradebook.find_comment(
            cell.metadata["nbgrader"]["grade_id"],
            self.notebook_id,
            self.assignment_id,
            self.student_id,
        )
        manual = (comment.manual_comment or "").strip()
        cell.metadata.nbgrader["comment"] = manual or None
        cell.metadata.nbgrader["auto_comment"] = (comment.auto_comment or "").strip() or None

    def _get_score(self, cell, resources):
        grade = self.gradebook.find_grade(
            cell.metadata["nbgrader"]["grade_id"],
            self.notebook_id,
            self.assignment_id,
            self.student_id,
        )
        cell.metadata.nbgrader["score"] = grade.score
        cell.metadata.nbgrader["points"] = grade.max_score
        # То же правило, что у grades.csv и summary.html: ждёт ручной оценки.
        pending = manual_pending(grade.auto_score, grade.manual_score)
        cell.metadata.nbgrader["pending"] = pending


def summary(nb, score: Any, max_score: Any) -> dict[str, str]:
    """Заголовок отчёта и строка итога по баллам ячеек (после :class:`ReportGrades`).

    Итог: баллы автопроверки, баллы преподавателя (и сколько ещё ждут проверки) и что
    исправить первым — первая непройденная проверка по порядку тетрадки.
    """
    sums = {"auto": [0.0, 0.0], "manual": [0.0, 0.0]}
    pending = 0.0
    first_failed = None
    for cell in nb.cells:
        kind = _kind(cell)
        if kind is None:
            continue
        grading = cell.metadata.nbgrader
        points = float(grading.get("points") or 0)
        sums[kind][1] += points
        if grading.get("pending"):
            pending += points
            continue
        got = float(grading.get("score") or 0)
        sums[kind][0] += got
        if kind == "auto" and got < points and first_failed is None:
            first_failed = cell.metadata.get(REPORT_KEY, {}).get("title") or grading["grade_id"]
    later = f", ещё {points_word(pending)} — после проверки преподавателем" if pending else ""
    parts = [f"Автопроверка: {out_of(*sums['auto'])}."]
    if sums["manual"][1]:
        manual = sums["manual"]
        if pending == manual[1]:
            parts.append(
                f"Письменные ответы ещё не проверены преподавателем (до {points_of(pending)})."
            )
        else:
            parts.append(f"Письменные ответы: {out_of(*manual)}{later}.")
    if first_failed:
        parts.append(f"Исправьте сначала: «{first_failed}».")
    elif sums["auto"][1]:
        parts.append("Все автопроверки пройдены.")
    return {"total": f"{out_of(score, max_score)}{later}", "summary": " ".join(parts)}


#: Кадры пакета курса (например, отказ перехватчика ядра) в трассировке учащегося —
#: не его код: из отчёта они убираются.
PACKAGE_DIR = str(Path(__file__).resolve().parents[2]) + "/"


#: Ошибки, которыми заканчивается ячейка, остановленная по лимиту времени.
TIMEOUTS = {"KeyboardInterrupt", "CellTimeoutError"}
TIMEOUT_TEXT = "Ячейка выполнялась слишком долго и была остановлена (лимит времени проверки)."


class RefuseAutograde(NbGraderPreprocessor):
    """Останавливает ``nbgrader autograde``: он выполнил бы код учащихся без песочницы.

    Курс оценивается командой ``make grade`` (:mod:`feedback.teacher.grading.grade`): каждая
    работа — в своей песочнице, вердикты выносятся вне неё.
    """

    def preprocess(self, nb, resources):
        raise RuntimeError(
            "nbgrader autograde в этом курсе отключён: он выполнил бы код учащихся с вашими "
            "правами и доверил бы им баллы. Оценивайте командой make grade."
        )

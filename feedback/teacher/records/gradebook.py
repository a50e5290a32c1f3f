"""База оценок nbgrader: регистрация лабораторных и запись результатов единиц.

Пишет в базу только родительский процесс оценивания, по одной работе за раз, из
результатов единиц (:mod:`feedback.teacher.unit.pipeline`). Баллы автопроверки — из вердиктов
единицы; оценки, которые преподаватель уже поставил вручную, не трогаются.
Проверенная тетрадка кладётся в ``autograded/<учащийся>/<лабораторная>/``, как у
``nbgrader autograde``, поэтому formgrader и ``nbgrader generate_feedback`` работают
с ней как обычно.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from feedback.teacher.core import files
from feedback.teacher.core.results import UnitResult
from feedback.teacher.core.settings import COURSE_ID, Settings
from feedback.teacher.core.tables import GradeRow, ManualArchiveRow, TaskGradeRow, write_rows
from feedback.teacher.core.workspace import Workspace

NO_RESPONSE = "Нет ответа."
#: Почему снята ручная оценка (то же, что у feedback.teacher.records.ledger.ANSWER_CHANGED).
ANSWER_CHANGED = "ответ изменён после ручной проверки: ждёт её снова"


def _fingerprint(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def register(settings: Settings) -> dict[str, nbformat.NotebookNode]:
    """Заносит лабораторные курса (``settings.labs``) в базу, если исходник изменился, и
    возвращает их выпуски.

    Выпуск (:meth:`Workspace.released` в рабочей папке) — то, с чем сверяются
    работы: те же ячейки и контрольные суммы, что в базе. Регистрирует сам nbgrader
    (``generate_assignment``) в этом же процессе: без запуска интерпретатора на каждую
    лабораторную это доли секунды.
    """
    workspace = settings.workspace
    stamps_file = workspace.sources
    stamps = json.loads(stamps_file.read_text()) if stamps_file.exists() else {}
    releases, api = {}, None
    for item in settings.labs:
        lab, source = item.id, item.source
        released = workspace.released(lab)
        fingerprint = _fingerprint(source)
        if stamps.get(lab) != fingerprint or not released.exists():
            api = api or _api(settings)
            with _scripts_on_path():
                result = api.generate_assignment(lab, force=True, create=True)
            if not result["success"]:
                raise RuntimeError(f"nbgrader не смог зарегистрировать {lab}:\n{result['log']}")
            stamps[lab] = fingerprint
        releases[lab] = nbformat.read(released, as_version=4)
    stamps_file.parent.mkdir(parents=True, exist_ok=True)
    files.write_text(stamps_file, json.dumps(stamps, indent=1))
    return releases


def _api(settings: Settings) -> Any:
    """nbgrader с настройками курса (nbgrader_config.py) и выпуском в рабочую папку."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    _read_alembic_version_in_process()
    config = PyFileConfigLoader("nbgrader_config.py", path=str(settings.root)).load_config()
    for name, value in settings.course_directory().items():
        setattr(config.CourseDirectory, name, value)
    config.CourseDirectory.release_directory = str(settings.workspace.release)
    return NbGraderAPI(config=config)


@contextlib.contextmanager
def _scripts_on_path() -> Iterator[None]:
    """nbgrader создаёт базу командой alembic из PATH: нужна папка скриптов окружения."""
    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), saved])
    try:
        yield
    finally:
        os.environ["PATH"] = saved


def _open(workspace: Workspace) -> Any:
    from nbgrader.api import Gradebook

    _read_alembic_version_in_process()
    with _scripts_on_path():  # новую базу nbgrader помечает версией из alembic
        return Gradebook(workspace.gradebook_url, COURSE_ID)


@functools.cache
def alembic_head() -> str:
    """Версия схемы базы nbgrader — последняя миграция из его сценариев alembic."""
    from alembic.config import Config
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    config = Config()
    config.set_main_option("script_location", ALEMBIC_DIR)
    return ScriptDirectory.from_config(config).get_current_head()


def _read_alembic_version_in_process() -> None:
    """Новая база nbgrader помечается версией схемы без отдельного процесса.

    nbgrader узнаёт её командой ``alembic heads`` — новый процесс Python, который импортирует
    nbgrader (секунды на каждую новую базу: первый запуск make grade, каждая рабочая папка в
    тестах). Та же версия читается из тех же сценариев миграций здесь (:func:`alembic_head`;
    tests/teacher/grading/test_grade.py сверяет её с ответом команды).
    """
    import nbgrader.api

    global nbgrader_alembic_version
    if nbgrader.api.get_alembic_version is not alembic_head:
        nbgrader_alembic_version = nbgrader.api.get_alembic_version
        nbgrader.api.get_alembic_version = alembic_head


#: Как версию узнаёт сам nbgrader (команда alembic), — для сверки в тестах.
nbgrader_alembic_version: Callable[[], str] | None = None


@dataclass(frozen=True)
class Recorded:
    """Что запись работы в базу оставила: проверенную тетрадку и отпечатки оценённого.

    ``answers`` — задание → отпечаток того, что оценивалось (для снимка баллов,
    :mod:`feedback.teacher.records.ledger`); ``reopened`` — строки manual_archive.csv: ручные
    оценки, снятые потому, что ответ изменился; ``pending`` — сколько баллов работы ждёт ручной
    оценки после записи (:attr:`LabResult.pending_points`: строка хода оценивания называет это
    число, а не все баллы письменных ответов лабораторной).
    """

    path: Path
    answers: dict[str, str]
    reopened: list[ManualArchiveRow]
    pending: float = 0.0


@contextlib.contextmanager
def recording(
    workspace: Workspace,
    result: UnitResult,
    upload: str | None = None,
    graded_before: Mapping[str, str] | None = None,
) -> Iterator[Recorded]:
    """Запись результата единицы в базу: внутри ``with`` — что будет записано, на выходе — запись.

    Ручная оценка остаётся за преподавателем, пока оценённое им то же: для письменного ответа
    — текст ответа, для задания автопроверки — сданный файл (``upload``, его отпечаток).
    ``graded_before`` — отпечатки из снимка прошлого запуска; изменилось — оценка снимается, и
    задание снова ждёт проверки. Неизменённое и уже оценённое вручную не просит проверки снова.

    Внутри ``with`` база ещё прежняя: снятые оценки (``reopened`` — строки
    manual_archive.csv) вызывающий успевает сохранить
    (:func:`feedback.teacher.records.ledger.archive_manual`) до того, как они уйдут из базы.
    Исключение внутри ``with`` — и в базе ничего не меняется. На выходе изменения
    записываются в базу, а проверенная тетрадка — в ``autograded/<учащийся>/<лаб>/``.
    """
    from nbgrader.utils import compute_checksum, determine_grade

    student, lab = result.student, result.lab
    # HTML из работы уже очищен в единице (feedback.teacher.unit.pipeline.run_unit).
    notebook = nbformat.reads(json.dumps(result.autograded), as_version=4)
    folder = workspace.autograded / student / lab
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{lab}.ipynb"
    # Проверенная тетрадка прошлого запуска — то, что преподаватель видел в formgrader: из неё
    # прежний ответ снятой оценки (manual_archive.csv). Новая пишется после записи в базу, так
    # что и повтор оборванного запуска находит здесь прежнюю.
    old_notebook = _read_notebook(path)
    # Работа с находками для ручной проверки и неоценённая работа ждут преподавателя: их
    # нули — не оценка (formgrader помечает их «needs manual grade», выгрузка оставляет пусто).
    flagged = bool(result.review) or not result.assessed
    tests = result.tests
    timestamp = _submitted_timestamp(workspace, student, lab)
    graded_before = graded_before or {}
    answers: dict[str, str] = {}
    reopened: list[ManualArchiveRow] = []
    with _open(workspace) as gb:
        with warnings.catch_warnings():
            # nbgrader создаёт ячейки работы через автосброс сессии SQLAlchemy и ворчит об этом.
            warnings.simplefilter("ignore", category=Warning)
            gb.update_or_create_student(student)
            gb.update_or_create_submission(lab, student, timestamp=timestamp)
            for cell in notebook.cells:
                grading = cell.metadata.get("nbgrader", {})
                grade_id = grading.get("grade_id")
                if not grade_id:
                    continue
                if grading.get("grade"):
                    grade = gb.find_grade(grade_id, lab, lab, student)
                    # Письменный ответ: 0, если не тронут, иначе вручную.
                    if grading.get("solution"):
                        grade.auto_score, _ = determine_grade(cell)
                        needs_review = grade.auto_score is None
                        now = compute_checksum(cell)
                    else:  # автопроверка: только вердикт единицы, без вердикта — ноль
                        test = tests.get(grade_id)
                        grade.auto_score = float(test.score) if test is not None else 0.0
                        needs_review = flagged
                        now = upload
                    if now is not None:
                        answers[grade_id] = now
                    was = graded_before.get(grade_id)
                    if grade.manual_score is not None and None not in (was, now) and was != now:
                        comment = (
                            gb.find_comment(grade_id, lab, lab, student)
                            if grading.get("solution")
                            else None
                        )
                        old_comment = (comment.manual_comment or "") if comment else ""
                        reopened.append(
                            ManualArchiveRow(
                                student,
                                lab,
                                grade_id,
                                f"{grade.manual_score:g}",
                                old_comment,
                                ANSWER_CHANGED,
                                answer_text(old_notebook, grade_id) if old_notebook else "",
                                answer_text(notebook, grade_id),
                            )
                        )
                        grade.manual_score = None
                        if comment is not None:
                            comment.manual_comment = None
                        grade.needs_manual_grade = needs_review
                    else:
                        # Оценённое вручную и не изменившееся снова не просит проверки.
                        grade.needs_manual_grade = grade.manual_score is None and needs_review
                if grading.get("solution") or grading.get("task"):
                    comment = gb.find_comment(grade_id, lab, lab, student)
                    unchanged = grading.get("checksum") == compute_checksum(cell)
                    comment.auto_comment = (
                        NO_RESPONSE if unchanged and grading.get("solution") else None
                    )
            graded = gb.find_submission_notebook(lab, lab, student).grades
            pending = sum(
                float(grade.max_score or 0)
                for grade in graded
                if manual_pending(grade.auto_score, grade.manual_score)
            )
        yield Recorded(path, answers, reopened, pending)
        gb.db.commit()
    files.write_text(path, nbformat.writes(notebook))


def _read_notebook(path: Path) -> nbformat.NotebookNode | None:
    try:
        return nbformat.read(path, as_version=4)
    except (OSError, ValueError, nbformat.reader.NotJSONError):
        return None


#: Между ячейками решения в тексте, который оценивала проверка (manual_archive.csv).
CELL_BREAK = "\n\n# ---\n\n"


def answer_text(notebook: nbformat.NotebookNode, grade_id: str) -> str:
    """Что оценивал ``grade_id``: текст ответа у письменного ответа (или кода на ручную
    проверку), а у проверки автопроверки — все ячейки решения работы, которые она проверяла.

    Это видит преподаватель в manual_archive.csv и в сводке рядом с новым ответом, когда его
    оценка снята (:func:`recording`).
    """
    solutions = []
    for cell in notebook.cells:
        grading = cell.metadata.get("nbgrader", {})
        if grading.get("grade_id") == grade_id and grading.get("solution"):
            return str(cell.source)
        if grading.get("solution") and cell.cell_type == "code":
            solutions.append(str(cell.source))
    return CELL_BREAK.join(solutions)


def _submitted_timestamp(workspace: Workspace, student: str, lab: str) -> Any:
    """Папка работы в submitted/ для formgrader и время сдачи из её timestamp.txt, если он есть.

    formgrader считает работы лабораторной («Submissions») по папкам
    ``submitted/<учащийся>/<лаб>/`` (``NbGraderAPI.get_submitted_students``), а работы из
    архива LMS или другой папки туда не попадали — в списке было «0». Папка остаётся пустой:
    ``make grade`` без аргументов оценивает submitted/ и лишних тетрадок в ней не найдёт.
    Работа считается проверенной, только если время сдачи в базе совпадает с timestamp.txt
    (``get_autograded_students``), поэтому оно и переносится в базу, как у ``nbgrader autograde``.
    """
    from nbgrader.utils import parse_utc

    folder = workspace.submitted / student / lab
    folder.mkdir(parents=True, exist_ok=True)
    try:
        text = (folder / "timestamp.txt").read_text(encoding="utf-8").strip()
        return parse_utc(text) if text else None
    except (OSError, ValueError):
        return None


def import_students(workspace: Workspace, people: Iterable[Mapping[str, str]]) -> int:
    """Список учащихся → база оценок, как ``nbgrader db student import``.

    Та же логика, что у ``DbGenericImportApp`` nbgrader: берутся только столбцы таблицы
    студентов (id, first_name, last_name, email, lms_user_id), пустая ячейка — ``None``,
    запись создаёт или обновляет ``Gradebook.update_or_create_student``. Работы и оценки
    учащегося не трогаются.
    """
    from nbgrader.api import Student

    columns = set(Student.__table__.c.keys())
    count = 0
    with _open(workspace) as gb:
        for fields in people:
            instance = {key: value or None for key, value in fields.items() if key in columns}
            person = instance.pop("id")
            gb.update_or_create_student(person, **instance)
            count += 1
    return count


def manual_pending(auto: float | None, manual: float | None) -> bool:
    """Баллы ждут ручной оценки: ни автоматического балла, ни оценки преподавателя.

    Так бывает только с ответом, который оценивает преподаватель (письменный ответ, код
    на ручную проверку) и который учащийся написал: нетронутый ответ получает 0
    автоматически, у проверки автопроверки балл есть всегда. Одно это правило читают
    grades.csv, отчёт учащегося (:class:`feedback.teacher.pages.preprocessors.ReportGrades`),
    summary.html и выгрузка для Moodle.
    """
    return auto is None and manual is None


def review_flagged(auto: float | None, manual: float | None, needs_manual: bool) -> bool:
    """Балл автопроверки ждёт просмотра преподавателем (needs_review.csv, неоценённая работа).

    Автоматический балл есть, но nbgrader просит ручной оценки, а её ещё нет: пока
    преподаватель не посмотрит, этот балл — не оценка. Это не «ждёт ручной оценки»
    (:func:`manual_pending`): в таблицах — свой столбец.
    """
    return needs_manual and manual is None and auto is not None


@dataclass(frozen=True)
class TaskScore:
    """Баллы одного задания работы из базы."""

    auto: float | None
    manual: float | None
    max: float
    needs_manual: bool

    @property
    def pending(self) -> bool:
        """Ждёт ручной оценки (:func:`manual_pending`)."""
        return manual_pending(self.auto, self.manual)

    @property
    def flagged(self) -> bool:
        """Балл автопроверки ждёт просмотра преподавателем (:func:`review_flagged`)."""
        return review_flagged(self.auto, self.manual, self.needs_manual)

    @property
    def waiting(self) -> bool:
        """Итога пока нет: ждёт ручной оценки или просмотра."""
        return self.pending or self.flagged

    @property
    def score(self) -> float | None:
        """Итог задания (ручная оценка важнее автоматической); ``None`` — ждёт преподавателя."""
        if self.waiting:
            return None
        if self.manual is not None:
            return self.manual
        return self.auto or 0.0


@dataclass
class LabResult:
    """Сданная работа одной лабораторной: баллы по заданиям и итог, как его считает nbgrader."""

    student: str
    lab: str
    tasks: dict[str, TaskScore]
    raw_score: float
    penalty: float
    max_score: float
    timestamp: Any = None
    duedate: Any = None

    @property
    def score(self) -> float:
        return max(0.0, self.raw_score - self.penalty)

    @property
    def pending_points(self) -> float:
        """Сколько баллов ждёт ручной оценки (:attr:`TaskScore.pending`)."""
        return sum((task.max for task in self.tasks.values() if task.pending), 0.0)

    @property
    def flagged_points(self) -> float:
        """Сколько баллов автопроверки ждёт просмотра преподавателем (:attr:`TaskScore.flagged`)."""
        return sum((task.max for task in self.tasks.values() if task.flagged), 0.0)

    @property
    def complete(self) -> bool:
        """Работа проверена целиком: ничего не ждёт ни ручной оценки, ни просмотра."""
        return not (self.pending_points or self.flagged_points)


def results(workspace: Workspace) -> dict[tuple[str, str], LabResult]:
    """Все сданные работы из базы: (id учащегося, лабораторная) → :class:`LabResult`.

    Только то, что сдано: учащийся, не сдавший лабораторную, здесь не появляется.
    """
    found = {}
    with _open(workspace) as gb:
        for assignment in gb.assignments:
            for submission in gb.assignment_submissions(assignment.name):
                tasks = {}
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        tasks[grade.name] = TaskScore(
                            grade.auto_score,
                            grade.manual_score,
                            float(grade.max_score or 0),
                            bool(grade.needs_manual_grade),
                        )
                student = submission.student.id
                found[(student, assignment.name)] = LabResult(
                    student,
                    assignment.name,
                    tasks,
                    float(submission.score or 0),
                    float(submission.late_submission_penalty or 0),
                    float(assignment.max_score or 0),
                    submission.timestamp,
                    assignment.duedate,
                )
    return found


def students(workspace: Workspace) -> dict[str, tuple[str | None, str | None, str | None]]:
    """Учащиеся в базе: id → (фамилия, имя, почта)."""
    with _open(workspace) as gb:
        return {s.id: (s.last_name, s.first_name, s.email) for s in gb.students}


def _text(value: Any) -> str:
    """Ячейка текста: ``None`` — пусто, дата — как её пишет :mod:`csv` (``str``)."""
    return "" if value is None else str(value)


def export(workspace: Workspace) -> tuple[Path, Path]:
    """grades.csv (итог работы) и grades_by_task.csv (баллы по каждому заданию).

    Столбцы grades.csv — те же, что у экспорта nbgrader, но строка есть только у сданной
    работы: экспорт nbgrader пишет 0 за каждую несданную лабораторную каждого учащегося, а
    0 — не «не сдал». ``score`` — баллы, выставленные на сейчас, ``pending_manual_points`` —
    сколько баллов ждёт ручной оценки (ответы, которые преподаватель ещё не оценил),
    ``needs_review_points`` — сколько баллов автопроверки ждёт его просмотра (needs_review.csv,
    неоценённая работа). В grades_by_task.csv ``score`` пуст, пока задание ждёт того или
    другого. Столбцы — :class:`~feedback.teacher.core.tables.GradeRow` и
    :class:`~feedback.teacher.core.tables.TaskGradeRow`; всё пишет :func:`write_rows` (имена из
    списка учащихся — тоже).
    """
    found = results(workspace)
    people = students(workspace)
    grades = workspace.table(GradeRow)
    rows = []
    for (student, lab), result in sorted(found.items(), key=lambda item: (item[0][1], item[0][0])):
        last, first, email = people.get(student, (None, None, None))
        rows.append(
            GradeRow(
                lab,
                _text(result.duedate),
                _text(result.timestamp),
                student,
                _text(last),
                _text(first),
                _text(email),
                result.raw_score,
                result.penalty,
                result.score,
                result.max_score,
                result.pending_points,
                result.flagged_points,
            )
        )
    write_rows(grades, GradeRow, rows)
    by_task = workspace.table(TaskGradeRow)
    task_rows = [
        TaskGradeRow(student, lab, grade_id, task.auto, task.max, task.manual, task.score)
        for (student, lab), result in sorted(found.items())
        for grade_id, task in sorted(result.tasks.items())
    ]
    write_rows(by_task, TaskGradeRow, task_rows)
    return grades, by_task

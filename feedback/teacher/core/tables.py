"""Таблицы CSV для преподавателя: у каждой таблицы свой тип строки, и Excel не выполнит ячейку.

**Одна схема на таблицу.** Таблицы рабочей папки — договор между оцениванием, аналитикой,
сводкой и выгрузкой, поэтому столбцы каждой записаны здесь один раз: это поля её типа
строки (неизменяемый dataclass) по порядку, а имя файла — ``FILE`` того же типа (из
:class:`~feedback.teacher.core.workspace.Workspace`: все имена рабочей папки — там). Заголовок
выводится из полей (:func:`header`), пишутся (:func:`write_rows`) и читаются
(:func:`read_rows`) только целые строки этого типа. Новый столбец problems.csv — новое поле
:class:`Problem` здесь; прежние файлы читаются по именам столбцов, и столбец, которого в
них нет, прочитается пустым.

**Правило CSV injection.** В ячейки попадает то, что пришло от учащихся: имена файлов и
папок, код, причины проблем с цитатами из работы. Ячейку, которая начинается с ``=``, ``+``,
``-``, ``@``, табуляции или возврата каретки, табличный редактор может выполнить как формулу
(правило OWASP), поэтому такие ячейки пишутся с апострофом впереди (:func:`safe_cell`).
**Управляющие знаки** (ESC-последовательности, C0 и C1, знаки направления письма) в ячейке
пишутся видимой записью ``\\x1b`` (:func:`feedback.teacher.core.console.escape_controls`): ``cat``
таблицы не выполнит их в терминале преподавателя. Перевод строки и табуляция остаются — в
ячейках бывает код в несколько строк.

Чтение апостроф не снимает: прочитанная строка — ровно то, что в файле, и, записанная снова
(строки прежних запусков остаются в таблицах), она даёт те же байты и остаётся безопасной.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from feedback.settings import MIB
from feedback.teacher.core.console import escape_controls
from feedback.teacher.core.files import replacing
from feedback.teacher.core.workspace import Workspace

#: С чего начинается формула (список OWASP).
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> Any:
    """Ячейка, которую табличный редактор не примет за формулу: ``'`` перед опасным началом.

    Обезвреживаются только строки: в них и попадает текст из работ. Числа (``int``,
    ``float``) остаются числами: их считаем мы сами (баллы, секунды, номера строк), и
    отрицательными они здесь не бывают; число, которое нужно обезвредить, передавайте
    строкой. ``None`` — пустая ячейка, как в :mod:`csv`. Управляющие знаки строки —
    видимой записью (:func:`feedback.teacher.core.console.escape_controls`).
    """
    if not isinstance(value, str):
        return value
    value = escape_controls(value)
    if value.startswith(FORMULA_START):
        return "'" + value
    return value


def write_csv(path: Path, header: list[str], rows: Iterable[Iterable[Any]]) -> None:
    """Пишет таблицу UTF-8 с заголовком; каждая ячейка проходит через :func:`safe_cell`.

    Таблица пишется целиком или никак (:func:`feedback.teacher.core.files.replacing`).

    Символы, которых нет в UTF-8 (одиночные суррогаты из имён файлов или JSON работы),
    заменяются на ``?``: одна такая ячейка не должна оставить таблицу недописанной.

    Для таблиц рабочей папки — :func:`write_rows`; эта функция — для таблиц, чьи столбцы
    задаёт не курс (ведомость Moodle, :mod:`feedback.teacher.lms.export`).
    """
    with replacing(path, "w", newline="", encoding="utf-8", errors="replace") as fh:
        writer = csv.writer(fh)
        writer.writerow([safe_cell(cell) for cell in header])
        writer.writerows([safe_cell(cell) for cell in row] for row in rows)


# --------------------------------------------------------------------------- схема

#: Ключ метаданных поля: имя столбца, если оно не совпадает с именем поля.
COLUMN = "column"
#: Ключ метаданных поля: как писать число в ячейку (``"{:.1f}"``).
FORMAT = "format"

Row = TypeVar("Row")


def column(name: str) -> Any:
    """Поле строки, чей столбец называется иначе (``Problem.student`` — столбец ``student_id``)."""
    return field(metadata={COLUMN: name})


def formatted(spec: str) -> Any:
    """Числовое поле строки, которое пишется в ячейку по образцу ``spec`` (``"{:.1f}"``).

    В строке число остаётся числом (его сравнивают и сортируют), текстом оно становится только
    в таблице (:func:`cells`); ``None`` — пустая ячейка.
    """
    return field(metadata={FORMAT: spec})


def header(row_type: type) -> list[str]:
    """Заголовок таблицы: имена столбцов — поля типа строки по порядку."""
    return [item.metadata.get(COLUMN, item.name) for item in fields(row_type)]


def cells(row: Any) -> list[Any]:
    """Ячейки строки в порядке столбцов (ещё не обезвреженные).

    Число поля с образцом (:func:`formatted`) — уже текстом по образцу.
    """
    found = []
    for item in fields(row):
        value = getattr(row, item.name)
        spec = item.metadata.get(FORMAT)
        found.append(spec.format(value) if spec and value is not None else value)
    return found


def write_rows(path: Path, row_type: type[Row], rows: Iterable[Row]) -> None:
    """Таблица из строк ``row_type``: заголовок из его полей, ячейки — через :func:`write_csv`.

    Строка другого типа — ошибка (:class:`TypeError`), а не таблица со сдвинутыми столбцами;
    прежний файл тогда остаётся целым.
    """

    def checked() -> Iterable[list[Any]]:
        for row in rows:
            if type(row) is not row_type:
                raise TypeError(f"строка {type(row).__name__} в таблице {row_type.__name__}")
            yield cells(row)

    write_csv(path, header(row_type), checked())


def read_rows(path: Path, row_type: type[Row], *, exact: bool = False) -> list[Row]:
    """Строки таблицы ``path`` как ``row_type`` (пустой список, если файла нет).

    Столбцы находятся по именам из заголовка файла: лишние не читаются, недостающие (таблица
    прежней версии) — пустые. Ячейки — как в файле (апостроф :func:`safe_cell` остаётся);
    целые поля (``int``) и числа (``float``) разбираются, пустое поле ``… | None`` — ``None``.
    Строка, чьё число не разобрать (таблицу правили руками), пропускается.

    ``exact`` — для слияния с новыми строками: таблица с другим заголовком не читается вовсе,
    а строка с другим числом ячеек пропускается (её столбцы не те, что у новых).
    """
    if not path.is_file():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        return _parse_records(list(csv.reader(fh)), row_type, exact)


def as_stored(row_type: type[Row], rows: Iterable[Row]) -> list[Row]:
    """Строки такими, какими их прочитает :func:`read_rows` из таблицы :func:`write_rows`.

    Число — округлённым по образцу столбца, текст — обезвреженным (:func:`safe_cell`), знаки
    не из UTF-8 — ``?``. Кто берёт строки из памяти, а не из только что записанной таблицы
    (сводка после ``make grade``), видит то же, что увидел бы, прочитав файл.
    """
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(header(row_type))
    writer.writerows([safe_cell(cell) for cell in cells(row)] for row in rows)
    text = buffer.getvalue().encode("utf-8", "replace").decode("utf-8")
    return _parse_records(list(csv.reader(io.StringIO(text, newline=""))), row_type, False)


def _parse_records(records: list[list[str]], row_type: type[Row], exact: bool) -> list[Row]:
    names = header(row_type)
    if not records or (exact and records[0] != names):
        return []
    found, *body = records
    where = [found.index(name) if name in found else None for name in names]
    parsers = _parsers(row_type)
    rows = []
    for record in body:
        if not record or (exact and len(record) != len(names)):
            continue
        texts = [record[i] if i is not None and i < len(record) else "" for i in where]
        try:
            values = [parse(text) for parse, text in zip(parsers, texts, strict=True)]
        except ValueError:
            continue
        rows.append(row_type(*values))
    return rows


def _optional(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    return lambda text: None if text == "" else parse(text)


@functools.cache
def _parsers(row_type: type) -> list[Callable[[str], Any]]:
    """Как читать ячейку каждого поля: текст как есть, ``int``, ``float`` или пусто → ``None``."""
    hints = typing.get_type_hints(row_type)
    parsers = []
    for item in fields(row_type):
        hint = hints[item.name]
        optional = isinstance(hint, types.UnionType) and type(None) in hint.__args__
        if optional:
            (hint,) = [arg for arg in hint.__args__ if arg is not type(None)]
        if hint not in (str, int, float):
            raise TypeError(f"{row_type.__name__}.{item.name}: поле таблицы — str, int или float")
        parse = str if hint is str else hint
        parsers.append(_optional(parse) if optional else parse)
    return parsers


# --------------------------------------------------------------------------- таблицы make grade


@dataclass(frozen=True)
class Problem:
    """Строка problems.csv: чья работа, какая лабораторная, файл и что случилось.

    Учащийся «?» — не удалось понять, чья это работа; лабораторная «?» — какая.
    """

    FILE: ClassVar[str] = Workspace.PROBLEMS

    student: str = column("student_id")
    lab: str
    file: str
    problem: str


@dataclass(frozen=True)
class ReviewRow:
    """Строка needs_review.csv: место в коде учащегося, которое стоит посмотреть глазами.

    ``cell``, ``line``, ``code`` и ``reason`` — находка обзора кода
    (:class:`feedback.teacher.core.results.Finding`).
    """

    FILE: ClassVar[str] = Workspace.NEEDS_REVIEW

    student_id: str
    lab: str
    cell: str
    line: int
    code: str
    reason: str


@dataclass(frozen=True)
class CaseRow:
    """Строка cases.csv: какие случаи проверки вытянуты учащемуся (``params`` — JSON)."""

    FILE: ClassVar[str] = Workspace.CASES

    student_id: str
    lab: str
    grade_id: str
    params: str

    @classmethod
    def drawn(cls, student: str, lab: str, grade_id: str, params: Any) -> CaseRow:
        """Строка о вытянутых случаях ``params`` (значения JSON), кириллица — как есть."""
        return cls(student, lab, grade_id, json.dumps(params, ensure_ascii=False))


@dataclass(frozen=True)
class TimingRow:
    """Строка timings.csv: сколько заняла работа.

    ``seconds`` — секунды на работу (с запуском процесса единицы), ``execution_seconds`` — из
    них выполнение тетрадки в ядре, ``peak_memory_mib`` — наибольшая память всех процессов
    ядра (МиБ; бюджет — ``COURSE7_MEMORY_LIMIT``), ``kernel`` — откуда ядро: ``template`` —
    копия прогретой заготовки, ``fresh`` — запущено с нуля. Пусто — не измерено (работа не
    выполнялась). В строке — числа; в таблицу они пишутся округлёнными (секунды — до десятых,
    память — до МиБ): её читает преподаватель.
    """

    FILE: ClassVar[str] = Workspace.TIMINGS

    student_id: str
    lab: str
    seconds: float | None = formatted("{:.1f}")
    execution_seconds: float | None = formatted("{:.1f}")
    peak_memory_mib: float | None = formatted("{:.0f}")
    kernel: str

    @classmethod
    def measured(
        cls,
        student: str,
        lab: str,
        seconds: float | None,
        execution_seconds: float | None = None,
        peak_memory: int | None = None,
        warm: bool = False,
    ) -> TimingRow:
        """Строка по замерам единицы (секунды, байты памяти, ядро из заготовки или нет)."""
        kernel = "" if not execution_seconds else ("template" if warm else "fresh")
        return cls(
            student,
            lab,
            seconds or None,
            execution_seconds or None,
            peak_memory / MIB if peak_memory else None,
            kernel,
        )


@dataclass(frozen=True)
class MistakeRow:
    """Строка mistakes.csv: кто, какое задание, код и описание ошибки и подсказка из вердикта."""

    FILE: ClassVar[str] = Workspace.MISTAKES

    student_id: str
    lab: str
    task: str
    mistake: str
    description: str
    hint: str


@dataclass(frozen=True)
class SimilarRow:
    """Строка similar.csv: пара почти одинаковых ответов, сходство (0…1) и общий фрагмент."""

    FILE: ClassVar[str] = Workspace.SIMILAR

    lab: str
    task: str
    student_a: str
    student_b: str
    similarity: str
    fragment: str


@dataclass(frozen=True)
class ChangeRow:
    """Строка changes.csv: чьи баллы задания изменились с прошлого запуска и почему.

    Пустые баллы — задание ждёт ручной проверки (или его не было).
    """

    FILE: ClassVar[str] = Workspace.CHANGES

    student_id: str
    lab: str
    task: str
    old_points: str
    new_points: str
    why: str


@dataclass(frozen=True)
class ManualArchiveRow:
    """Строка manual_archive.csv: снятая ручная оценка (ответ изменился после проверки).

    ``old_answer`` — оценённый ответ (у проверки автопроверки — код работы, который она
    проверяла), ``new_answer`` — тот, что пришёл ему на смену
    (:func:`feedback.teacher.records.gradebook.answer_text`).
    """

    FILE: ClassVar[str] = Workspace.MANUAL_ARCHIVE

    student_id: str
    lab: str
    task: str
    manual_points: str
    comment: str
    why: str
    old_answer: str = ""
    new_answer: str = ""


@dataclass(frozen=True)
class LmsIdRow:
    """Строка lms_ids.csv: номер участника Moodle учащегося в этой лабораторной."""

    FILE: ClassVar[str] = Workspace.LMS_IDS

    student_id: str
    lab: str
    lms_participant: str


# --------------------------------------------------------------------------- оценки


@dataclass(frozen=True)
class GradeRow:
    """Строка grades.csv: итог сданной работы, столбцы — как у экспорта nbgrader.

    ``score`` — баллы, выставленные на сейчас; ещё два столбца — сколько баллов ждёт ручной
    оценки (``pending_manual_points``) и сколько баллов автопроверки ждёт просмотра
    преподавателем (``needs_review_points``, :mod:`feedback.teacher.records.gradebook`). Пустое
    число
    — ``None`` (так читается и таблица без этого столбца).
    """

    FILE: ClassVar[str] = Workspace.GRADES

    assignment: str
    duedate: str
    timestamp: str
    student_id: str
    last_name: str
    first_name: str
    email: str
    raw_score: float | None
    late_submission_penalty: float | None
    score: float | None
    max_score: float | None
    pending_manual_points: float | None
    needs_review_points: float | None


@dataclass(frozen=True)
class TaskGradeRow:
    """Строка grades_by_task.csv: баллы одного задания работы.

    ``auto_score`` пуст, пока ответ ждёт ручной оценки, ``manual_score`` — пока её нет,
    ``score`` — пока задание ждёт ручной оценки или просмотра.
    """

    FILE: ClassVar[str] = Workspace.GRADES_BY_TASK

    student_id: str
    assignment: str
    grade_id: str
    auto_score: float | None
    max_score: float | None
    manual_score: float | None
    score: float | None

"""Типичные ошибки одной работы: строки mistakes.csv из результата единицы.

Вердикт каждой непройденной проверки несёт код типичной ошибки
(:attr:`feedback.engine.result.CheckResult.mistake`, список — :mod:`feedback.answers.mistakes`);
единица кладёт его в результат (:attr:`feedback.teacher.core.results.TaskOutcome.mistake`),
а таблицы класса (:mod:`feedback.teacher.records.class_tables`) — строку mistakes.csv
(:func:`mistake_rows`) с подсказкой, которую видел учащийся. Здесь же — что значит «не
приступал» (:func:`not_attempted`): сводка и список к лекции считают таких отдельно.
"""

from __future__ import annotations

from collections.abc import Mapping

from feedback.answers.mistakes import NOT_ASSESSED, describe
from feedback.engine.result import UNKNOWN
from feedback.teacher.core.results import UnitResult
from feedback.teacher.core.tables import MistakeRow

#: Учащийся не приступал к заданию: его ячейки решения — заготовка лабораторной
#: (:func:`not_attempted`). Не ошибка в ответе, а его отсутствие:
#: в mistakes.csv, mistakes.md и сводке — отдельно от «неверно».
NOT_ATTEMPTED = "not_attempted"
NOT_ATTEMPTED_TEXT = "не приступал: ячейки решения — заготовка лабораторной"

#: Коды, которые не ошибки по существу: в список к лекции не попадают.
NOT_MISTAKES = {UNKNOWN, NOT_ASSESSED, NOT_ATTEMPTED}


def mistake_description(mistake: str | None) -> str:
    """Описание кода по-русски: ошибки курса (:mod:`feedback.answers.mistakes`) и «не
    приступал» (:data:`NOT_ATTEMPTED`, его знает только оценивание)."""
    return NOT_ATTEMPTED_TEXT if mistake == NOT_ATTEMPTED else describe(mistake)


#: С этого слова в вердикте начинается подсказка учащемуся.
HINT_MARK = "Подсказка:"
#: Сколько символов вердикта без «Подсказки» брать как подсказку.
HINT_CHARS = 300


def hint_from_verdict(verdict: str) -> str:
    """Подсказка, которую увидел учащийся: текст после первой «Подсказка:» в вердикте.

    В вердикте без слова «Подсказка» (таблица со сценариями, список генераций) подсказка —
    весь его текст: заголовок и пояснения одной строкой, до :data:`HINT_CHARS` символов.
    """
    lines = [line.strip() for line in str(verdict).splitlines() if line.strip()]
    for line in lines:
        if HINT_MARK in line:
            return line.split(HINT_MARK, 1)[1].strip()
    if not lines:
        return ""
    headline = lines[0].split(": ", 1)[1] if ": " in lines[0] else lines[0]
    text = " ".join([headline, *lines[1:]])
    return text if len(text) <= HINT_CHARS else text[: HINT_CHARS - 1] + "…"


def mistake_rows(result: UnitResult) -> list[MistakeRow]:
    """Строки mistakes.csv для результата единицы: по одной на непройденное задание.

    Задание, к которому учащийся не приступал (:func:`not_attempted`), — :data:`NOT_ATTEMPTED`,
    а не «неверно без известной ошибки»: так видно, сколько не приступали, а сколько ошиблись.
    """
    rows = []
    blank = not_attempted(result.autograded) if result.assessed else set()
    for grade_id, test in sorted(result.tests.items()):
        if test.passed:
            continue
        mistake = str(test.mistake or UNKNOWN)
        if mistake == UNKNOWN and grade_id in blank:
            mistake = NOT_ATTEMPTED
        hint = hint_from_verdict(test.verdict) if mistake not in NOT_MISTAKES else ""
        rows.append(
            MistakeRow(
                result.student, result.lab, grade_id, mistake, mistake_description(mistake), hint
            )
        )
    return rows


def _is_template(cell: Mapping) -> bool:
    """Ячейка решения такая же, как в выпуске (контрольная сумма nbgrader совпала)."""
    import nbformat
    from nbgrader.utils import compute_checksum

    expected = cell.get("metadata", {}).get("nbgrader", {}).get("checksum")
    if not expected:
        return False
    node = nbformat.from_dict(cell)
    if isinstance(node.source, list):  # JSON тетрадки: строки списком
        node.source = "".join(node.source)
    return compute_checksum(node) == expected


def not_attempted(notebook: Mapping) -> set[str]:
    """Проверки автопроверки, к которым учащийся не приступал.

    Проверка берёт ячейки решения перед собой (после предыдущей проверки), а если их нет —
    все ячейки решения выше; не приступал — все они заготовка лабораторной (та же контрольная
    сумма nbgrader, что в выпуске).
    """
    untouched: set[str] = set()
    span: list[bool] = []
    above: list[bool] = []
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "code":
            continue
        grading = cell.get("metadata", {}).get("nbgrader", {})
        if grading.get("solution"):
            blank = _is_template(cell)
            span.append(blank)
            above.append(blank)
        elif grading.get("grade") and grading.get("grade_id"):
            covered = span or above
            if covered and all(covered):
                untouched.add(grading["grade_id"])
            span = []
    return untouched

"""Вердикты и баллы по выполненной тетрадке — вне песочницы.

Из вывода каждой ячейки-теста берётся ровно одно наблюдение (см.
:mod:`feedback.engine.probe`), и вердикт по нему выносит функция проверки из пакета
преподавателя. Баллы — все баллы ячейки за пройденную проверку и ноль иначе: что
бы ни напечатало ядро, частичных баллов оно не назначит.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import nbformat

from feedback.engine.graded import GradedCheck
from feedback.engine.probe import OBSERVATION_MIME, observation_digest
from feedback.engine.result import CheckResult, failed
from feedback.engine.values import lookalikes
from feedback.formatting import plural
from feedback.teacher.core.results import TaskOutcome


@dataclass(frozen=True)
class TaskScore:
    """Итог одной ячейки-теста."""

    grade_id: str
    points: float
    passed: bool
    verdict: CheckResult

    @property
    def score(self) -> float:
        return self.points if self.passed else 0.0

    def outcome(self) -> TaskOutcome:
        """Итог задания для результата единицы: баллы, текст вердикта и код ошибки."""
        return TaskOutcome(
            score=self.score,
            points=self.points,
            passed=self.passed,
            verdict=str(self.verdict),
            mistake=self.verdict.mistake,  # код типичной ошибки (feedback.answers.mistakes)
        )


def observations(cell: nbformat.NotebookNode, grade_id: str | None = None) -> list[Any]:
    """Наблюдения в выводе ячейки: для ``grade_id`` или все (целиком, с меткой)."""
    found = []
    for output in cell.get("outputs", []):
        if output.get("output_type") not in ("display_data", "execute_result"):
            continue
        payload = output.get("data", {}).get(OBSERVATION_MIME)
        if not isinstance(payload, dict):
            continue
        if grade_id is None or payload.get("grade_id") == grade_id:
            found.append(payload)
    return found


def _error_text(cell: nbformat.NotebookNode) -> str | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            name, value = output.get("ename", ""), output.get("evalue", "")
            return f"{name}: {value}" if value else name
    return None


def subversion(
    cell: nbformat.NotebookNode,
    grade_id: str,
    token: str,
    probe_marks: set[str] | None,
) -> str | None:
    """Почему наблюдению ячейки-теста нельзя верить (по-русски) или ``None``.

    Верят ровно одному наблюдению этой ячейки с меткой работы, после которого ячейка
    не упала, если настоящий зонд отметился в записи ядра ровно одним отпечатком и он —
    отпечаток этого наблюдения (``probe_marks``; ``None`` — записи нет). Запись идёт мимо
    вывода ячейки, поэтому подмена ``display``, публикатора или сессии IPython, которая
    переписала бы наблюдение по дороге, видна. Всё остальное — следы кода, который подделал
    или прервал зонд.
    """
    every = observations(cell)
    mine = [payload for payload in every if payload.get("grade_id") == grade_id]
    marked = [payload for payload in mine if payload.get("token") == token]
    error = _error_text(cell)
    if len(mine) > 1:
        return (
            f"в выводе проверки «{grade_id}» {len(mine)} наблюдения: похоже, код учащегося "
            "печатает поддельные результаты проверки"
        )
    if len(every) > len(mine):
        return f"в выводе проверки «{grade_id}» наблюдение другой ячейки: похоже, оно подделано"
    if mine and not marked:
        return (
            f"наблюдение проверки «{grade_id}» без метки этого оценивания: его напечатал не "
            "зонд программы оценивания"
        )
    if not marked:
        return None
    forged = lookalikes(marked[0].get("observation"))
    if forged:
        return (
            f"в ответе для проверки «{grade_id}» объект {', '.join(sorted(set(forged)))[:200]}, "
            "который выдаёт себя за число, массив или таблицу"
        )
    interrupted = marked[0].get("observation", {})
    if isinstance(interrupted, dict) and interrupted.get("interrupted"):
        return (
            f"функция учащегося прервала проверку «{grade_id}» исключением "
            f"{interrupted['interrupted']} (BaseException)"
        )
    if error:
        return (
            f"после наблюдения проверка «{grade_id}» завершилась ошибкой ({error}): похоже, "
            "код учащегося прервал настоящий зонд и показал своё наблюдение"
        )
    if probe_marks is not None and not probe_marks:
        return (
            f"настоящий зонд проверки «{grade_id}» не отметился в записи ядра: похоже, "
            "модуль проверки подменён"
        )
    if probe_marks is not None and len(probe_marks) > 1:
        return (
            f"зонд проверки «{grade_id}» отметился в записи ядра "
            f"{plural(len(probe_marks), 'раз', 'раза', 'раз')}: похоже, код учащегося "
            "дописывает запись оценивания"
        )
    if probe_marks is not None and observation_digest(marked[0]) not in probe_marks:
        return (
            f"наблюдение проверки «{grade_id}» в выводе ячейки не то, что снял зонд: похоже, "
            "код учащегося подменил вывод (display, публикатор или сессию IPython)"
        )
    return None


SUBVERTED = "ответ не засчитан: проверка не смогла честно получить ответ."


def judge_cell(
    cell: nbformat.NotebookNode,
    grade_id: str,
    title: str,
    check: GradedCheck,
    params: dict[str, Any],
    status: str,
    stopped: str | None,
    token: str = "",
    probe_marks: set[str] | None = None,
) -> tuple[CheckResult, str | None]:
    """Вердикт ячейки-теста и повод для ручной проверки (если что-то подозрительно).

    Наблюдение, которому нельзя верить (:func:`subversion`), — ноль баллов и повод
    для ручной проверки, никогда не зачёт.
    """
    suspicion = subversion(cell, grade_id, token, probe_marks)
    if suspicion:
        return failed(title, SUBVERTED, "Работу посмотрит преподаватель."), suspicion
    found = [payload.get("observation") for payload in observations(cell, grade_id)]
    if len(found) == 1:
        return check.judge_envelope(found[0], params), None
    if status == "not-run":
        reason = stopped or "выполнение тетрадки остановилось раньше"
        return failed(title, "проверка не выполнялась.", f"Причина: {reason}."), None
    if status == "timeout":
        return (
            failed(
                title,
                "проверка не уложилась в лимит времени ячейки.",
                "Похоже, функция или цикл в решении не завершается.",
            ),
            None,
        )
    error = _error_text(cell)
    if error:
        return (
            failed(title, "проверка не смогла получить ответ.", f"Ошибка: {error}"),
            f"проверка «{grade_id}» упала, не сняв наблюдения ({error}): похоже, код учащегося "
            "сломал или подменил модули курса",
        )
    return (
        failed(title, "проверка не получила ответа."),
        f"проверка «{grade_id}» выполнилась, но не вывела наблюдения: похоже, код учащегося "
        "перехватывает вывод или подменяет модули курса",
    )


def verdict_output(result: CheckResult) -> nbformat.NotebookNode:
    """Вердикт как вывод ячейки: цветная плашка в HTML и текст."""
    return nbformat.v4.new_output(
        "display_data", data={"text/html": result._repr_html_(), "text/plain": str(result)}
    )


def task_score(grade_id: str, cell: nbformat.NotebookNode, result: CheckResult) -> TaskScore:
    points = float(cell.metadata.get("nbgrader", {}).get("points", 0) or 0)
    return TaskScore(grade_id, points, bool(result.passed), result)

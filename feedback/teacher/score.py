"""Вердикты и баллы по выполненной тетрадке — вне песочницы.

Из вывода каждой ячейки-теста берётся ровно одно наблюдение (см.
:mod:`feedback.probe`), и вердикт по нему выносит функция проверки из пакета
преподавателя. Баллы — все баллы ячейки за пройденную проверку и ноль иначе: что
бы ни напечатало ядро, частичных баллов оно не назначит.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import nbformat

from feedback.graded import GradedCheck
from feedback.probe import OBSERVATION_MIME
from feedback.result import CheckResult, failed


@dataclass(frozen=True)
class TestScore:
    """Итог одной ячейки-теста."""

    grade_id: str
    points: float
    passed: bool
    verdict: CheckResult

    @property
    def score(self) -> float:
        return self.points if self.passed else 0.0


def observations(cell: nbformat.NotebookNode, grade_id: str) -> list[Any]:
    """Все наблюдения для ``grade_id`` в выводе ячейки."""
    found = []
    for output in cell.get("outputs", []):
        if output.get("output_type") not in ("display_data", "execute_result"):
            continue
        payload = output.get("data", {}).get(OBSERVATION_MIME)
        if isinstance(payload, dict) and payload.get("grade_id") == grade_id:
            found.append(payload.get("observation"))
    return found


def _error_text(cell: nbformat.NotebookNode) -> str | None:
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            name, value = output.get("ename", ""), output.get("evalue", "")
            return f"{name}: {value}" if value else name
    return None


def judge_cell(
    cell: nbformat.NotebookNode,
    grade_id: str,
    title: str,
    check: GradedCheck,
    params: dict[str, Any],
    status: str,
    stopped: str | None,
) -> tuple[CheckResult, str | None]:
    """Вердикт ячейки-теста и повод для ручной проверки (если что-то подозрительно)."""
    found = observations(cell, grade_id)
    if len(found) == 1:
        return check.judge_envelope(found[0], params), None
    if len(found) > 1:
        return (
            failed(title, "проверка получила несколько ответов вместо одного."),
            f"в выводе проверки «{grade_id}» {len(found)} наблюдения: "
            "похоже, код учащегося печатает поддельные результаты проверки",
        )
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
        return failed(title, "проверка не смогла получить ответ.", f"Ошибка: {error}"), None
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


def test_score(grade_id: str, cell: nbformat.NotebookNode, result: CheckResult) -> TestScore:
    points = float(cell.metadata.get("nbgrader", {}).get("points", 0) or 0)
    return TestScore(grade_id, points, bool(result.passed), result)

"""Наблюдение для оценивания: сторона песочницы.

При оценивании каждая ячейка-тест тетрадки заменяется одним вызовом :func:`emit`.
Он снимает наблюдение (что вернула функция учащегося на случаях, вытянутых для этого
учащегося; какие веса у модели) и показывает его как вывод ячейки особого типа
:data:`OBSERVATION_MIME`. Вердикт по наблюдению выносит программа преподавателя вне
песочницы (см. :mod:`feedback.graded`), поэтому здесь нет ни эталонов, ни баллов.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from feedback.graded import find

OBSERVATION_MIME = "application/vnd.course7.observation+json"

#: Больше этого наблюдение не передаётся: так вывод ячейки не раздует отчёт.
MAX_OBSERVATION_CHARS = 1_000_000


def observation_payload(
    grade_id: str, check_name: str, get_objects: Callable[[], Any], params_json: str
) -> dict[str, Any]:
    """Наблюдение проверки ``check_name`` для ячейки ``grade_id`` в виде JSON-объекта."""
    params = json.loads(params_json)
    envelope = find(check_name).observe_envelope(get_objects, params)
    text = json.dumps(envelope, ensure_ascii=False, allow_nan=False, default=str)
    if len(text) > MAX_OBSERVATION_CHARS:
        envelope = {
            "problem": {
                "headline": "ответ слишком большой, чтобы его проверить.",
                "details": ["Проверьте, что в переменной задания лежит то, что просит задание."],
            }
        }
    else:
        envelope = json.loads(text)
    return {"grade_id": grade_id, "check": check_name, "observation": envelope}


def emit(grade_id: str, check_name: str, get_objects: Callable[[], Any], params_json: str) -> None:
    """Показывает наблюдение выводом ячейки (его прочтёт программа оценивания)."""
    from IPython.display import display

    payload = observation_payload(grade_id, check_name, get_objects, params_json)
    display({OBSERVATION_MIME: payload, "text/plain": f"[наблюдение {grade_id}]"}, raw=True)

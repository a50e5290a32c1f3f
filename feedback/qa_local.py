"""Наш маленький набор «вопрос — ответ» в пакете (``feedback/data/africa_qa_mini.json``).

Схема набора (:data:`COLUMNS`) и его чтение. Модуль лёгкий (только стандартная библиотека и
ничего из пакета): набор нужен и лабораторным (:mod:`feedback.qa_data` — запасной набор,
когда настоящий не скачать), и крошечной Gemma (:mod:`feedback.gpu.tiny_gemma` учит на нём
токенизатор), а GPU-среда не импортирует модули лабораторных.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

COLUMNS = ("category", "name", "question", "answer")
LOCAL_QA_FILE = Path(__file__).resolve().parent / "data" / "africa_qa_mini.json"


class QADataError(ValueError):
    """Файл с вопросами и ответами не похож на набор Africa Galore QA."""


def normalize_rows(raw: Any) -> list[dict[str, str]]:
    """Приводит JSON к списку словарей и проверяет, что есть все нужные столбцы.

    Понимает список записей, словарь ``{"data": [...]}`` и формат pandas
    ``orient="columns"`` (``{"question": {"0": ...}, ...}``).
    """
    if isinstance(raw, Mapping):
        for key in ("data", "records", "rows"):
            if isinstance(raw.get(key), list):
                raw = raw[key]
                break
        else:
            if all(isinstance(raw.get(column), Mapping) for column in COLUMNS):
                index = list(raw[COLUMNS[0]].keys())
                raw = [{column: raw[column][i] for column in raw} for i in index]
    if not isinstance(raw, list) or not raw:
        raise QADataError("ожидался непустой список записей с вопросами и ответами")
    rows = []
    for number, item in enumerate(raw):
        if not isinstance(item, Mapping):
            raise QADataError(f"запись {number} — не словарь")
        missing = [column for column in COLUMNS if column not in item]
        if missing:
            raise QADataError(f"в записи {number} нет столбцов: {', '.join(missing)}")
        rows.append({key: str(value) for key, value in item.items()})
    return rows


def load_local_qa(path: str | os.PathLike | None = None) -> list[dict[str, str]]:
    """Читает наш собственный набор из пакета (работает и из репозитория, и после установки)."""
    path = Path(path) if path else LOCAL_QA_FILE
    return normalize_rows(json.loads(path.read_text(encoding="utf-8")))

"""Набор «вопрос — ответ» для лабораторных 7.3, 7.5 и 7.6 и его форматирование.

Основной источник — публичный файл Africa Galore QA; он скачивается один раз и
кэшируется. Если сети нет, сервер не ответил или включён учебный режим с
крошечной моделью, используется наш собственный маленький набор
``feedback/data/africa_qa_mini.json`` той же схемы (``category``, ``name``,
``question``, ``answer``), о чём выводится заметное сообщение.
"""

from __future__ import annotations

import json
import os
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from feedback.formatting import plural
from feedback.gpu.notice import show_notice
from feedback.gpu.tiny_mode import is_tiny_mode

# Схема и наш набор — в feedback.qa_local (его читает и крошечная Gemma); имена — и отсюда.
from feedback.qa_local import COLUMNS as COLUMNS
from feedback.qa_local import LOCAL_QA_FILE as LOCAL_QA_FILE
from feedback.qa_local import QADataError as QADataError
from feedback.qa_local import load_local_qa, normalize_rows
from feedback.settings import CACHE_DIR, OFFLINE

QA_URL = (
    "https://storage.googleapis.com/dm-educational/assets/ai_foundations/africa_galore_qa_v2.json"
)
OFFLINE_ENV_VAR = OFFLINE.name
DEFAULT_TIMEOUT_S = 5.0

START_OF_TURN = "<start_of_turn>"
END_OF_TURN = "<end_of_turn>"


def default_qa_cache_dir(env: Mapping[str, str] | None = None) -> Path:
    return CACHE_DIR.read(env) / "qa"


def _offline_reason(offline: bool | None, env: Mapping[str, str]) -> str | None:
    """Почему нельзя ходить в сеть, или ``None``, если можно."""
    if offline:
        return "запрошена работа без сети (offline=True)"
    if offline is None and OFFLINE.read(env) is True:
        return f"задана переменная {OFFLINE_ENV_VAR}=1"
    return None


def _download_problem(error: BaseException) -> str:
    """Почему набор не скачался: сначала по-русски, короткая техническая причина — в конце.

    ``URLError`` без ответа сервера (нет сети, имя не найдено, таймаут) — это «нет доступа к
    интернету»; его текст ``<urlopen error …>`` учащемуся ничего не скажет, поэтому
    показываем только причину внутри него.
    """
    if isinstance(error, urllib.error.HTTPError):
        problem = f"сервер с набором Africa Galore QA ответил ошибкой {error.code}"
        detail = error.reason
    elif isinstance(error, OSError):
        problem = "похоже, нет доступа к интернету, и набор Africa Galore QA не скачался"
        detail = error.reason if isinstance(error, urllib.error.URLError) else error
    else:
        problem = "скачанный файл не похож на набор Africa Galore QA"
        detail = error
    technical = f"{type(error).__name__}: {detail}"
    if len(technical) > 120:
        technical = technical[:119] + "…"
    return f"{problem}. Техническая причина: {technical}"


def _download(url: str, timeout: float) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".part-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _fallback(reason: str, notify: Callable[[str, str], None]) -> list[dict[str, str]]:
    rows = load_local_qa()
    notify(
        "Используем наш маленький набор вопросов вместо Africa Galore QA",
        f"Причина: {reason}.\n\n"
        "Загружен запасной набор курса: "
        f"{plural(len(rows), 'вопрос', 'вопроса', 'вопросов')} об Африке той же схемы "
        "(category, name, question, answer), файл feedback/data/africa_qa_mini.json. "
        "Код лабораторной работает так же, но модель увидит меньше примеров, "
        "чем в оригинальном курсе.",
    )
    return rows


def load_qa(
    url: str = QA_URL,
    cache_dir: str | os.PathLike | None = None,
    offline: bool | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    env: Mapping[str, str] | None = None,
    notify: Callable[[str, str], None] = show_notice,
) -> list[dict[str, str]]:
    """Загружает набор QA: кэш → публичный URL → наш запасной набор.

    В учебном режиме (``COURSE7_TINY=1`` или ``choose_preset`` выбрал крошечную
    модель) сразу берётся наш набор: на нём обучен токенизатор крошечной модели.
    ``offline=True`` или ``COURSE7_OFFLINE=1`` — в сеть не ходить: кэш, если он
    есть, иначе наш набор. ``offline=False`` — скачивать даже в учебном режиме.
    Ошибка сети (таймаут ``timeout`` секунд) или неверный файл — наш набор и
    заметное сообщение. Возвращает список словарей.
    """
    env = os.environ if env is None else env
    if offline is None and is_tiny_mode(env):
        return _fallback("включён учебный режим с крошечной моделью", notify)

    cache_root = Path(cache_dir).expanduser() if cache_dir else default_qa_cache_dir(env)
    cached = cache_root / (Path(url).name or "qa.json")
    if cached.exists():
        try:
            return normalize_rows(json.loads(cached.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            cached.unlink(missing_ok=True)  # Испорченный кэш: скачаем заново.

    reason = _offline_reason(offline, env)
    if reason:
        return _fallback(reason, notify)

    try:
        data = _download(url, timeout)
        rows = normalize_rows(json.loads(data.decode("utf-8")))
    except (OSError, ValueError) as error:
        return _fallback(_download_problem(error), notify)
    try:
        _write_atomically(cached, data)
    except OSError:
        pass  # Без кэша тоже можно работать.
    return rows


def format_question(question: str, sot: str = START_OF_TURN, eot: str = END_OF_TURN) -> str:
    """Оборачивает вопрос в шаблон диалога Gemma: ход пользователя."""
    return f"{sot}user\n{question}{eot}\n"


def _field(row: Any, name: str) -> Any:
    try:
        return row[name]
    except (KeyError, TypeError, IndexError):
        return getattr(row, name)


def format_qa(row: Any, sot: str = START_OF_TURN, eot: str = END_OF_TURN) -> tuple[str, str]:
    """Превращает строку набора в пару (вопрос, ответ) в шаблоне Gemma.

    ``row`` — словарь, строка pandas (``iterrows``) или запись ``itertuples``.
    """
    question = format_question(_field(row, "question"), sot, eot)
    answer = f"{sot}model\nCategory: {_field(row, 'category')}\n{_field(row, 'answer')}{eot}"
    return question, answer


def build_training_data(
    rows: Iterable[Any], sot: str = START_OF_TURN, eot: str = END_OF_TURN
) -> dict[str, list[str]]:
    """Собирает словарь ``{"prompts": [...], "responses": [...]}`` для ``model.fit``.

    ``rows`` — список словарей из :func:`load_qa` или ``pandas.DataFrame``.
    """
    if hasattr(rows, "iterrows"):  # pandas.DataFrame: итерация по строкам, а не столбцам
        rows = (row for _, row in rows.iterrows())
    data: dict[str, list[str]] = {"prompts": [], "responses": []}
    for row in rows:
        prompt, response = format_qa(row, sot, eot)
        data["prompts"].append(prompt)
        data["responses"].append(response)
    return data

"""Тесты набора вопросов и ответов: наш файл, загрузка с кэшем и запасной вариант."""

import io
import json
import re
import socket
import urllib.error
import urllib.request
from collections import namedtuple
from pathlib import Path

import pytest

from feedback import qa_data
from feedback.gpu import tiny_mode
from feedback.qa_data import (
    COLUMNS,
    LOCAL_QA_FILE,
    QADataError,
    build_training_data,
    format_qa,
    format_question,
    load_local_qa,
    load_qa,
    normalize_rows,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_previous_choice(monkeypatch):
    """Решение choose_preset из других тестов не должно включать учебный режим здесь."""
    monkeypatch.setattr(tiny_mode, "_last_choice_tiny", None)


@pytest.fixture
def no_network(monkeypatch):
    calls = []

    def refuse(*args, **kwargs):
        calls.append(args)
        raise urllib.error.URLError("сеть отключена в тестах")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    return calls


class Notices:
    def __init__(self):
        self.items = []

    def __call__(self, title, body):
        self.items.append((title, body))


# --------------------------------------------------------------------------- наш набор


def test_local_set_schema_and_size():
    rows = load_local_qa()
    assert 30 <= len(rows) <= 40
    for row in rows:
        assert set(row) == set(COLUMNS)
        assert all(isinstance(row[c], str) and row[c].strip() for c in COLUMNS)
    questions = [row["question"] for row in rows]
    assert len(set(questions)) == len(questions)


def test_local_set_has_monitor_topics_and_nothing_about_japan():
    rows = load_local_qa()
    names = {row["name"] for row in rows}
    assert {"Kente cloth", "Mount Kilimanjaro"} <= names
    assert "What is Kente cloth?" in {row["question"] for row in rows}
    # Проверка обобщения в 7.5: в данных только «Mount Kilimanjaro».
    assert "What is Kilimanjaro?" not in {row["question"] for row in rows}
    text = LOCAL_QA_FILE.read_text(encoding="utf-8").lower()
    assert "japan" not in text and "tokyo" not in text


def test_readme_matches_data():
    readme = (REPO_ROOT / "data" / "README.md").read_text(encoding="utf-8")
    assert "CC-BY-4.0" in readme
    assert "feedback/data/africa_qa_mini.json" in readme
    count = len(load_local_qa())
    assert re.search(rf"\b{count}\b", readme), "README должен называть число строк"


# --------------------------------------------------------------------------- форматирование


def test_format_question_exact():
    assert format_question("Q?") == "<start_of_turn>user\nQ?<end_of_turn>\n"
    assert format_question("Q?", sot="[S]", eot="[E]") == "[S]user\nQ?[E]\n"


def test_format_qa_exact():
    row = {"category": "Food", "name": "Fufu", "question": "What is fufu?", "answer": "A dough."}
    question, answer = format_qa(row)
    assert question == "<start_of_turn>user\nWhat is fufu?<end_of_turn>\n"
    assert answer == "<start_of_turn>model\nCategory: Food\nA dough.<end_of_turn>"


def test_format_qa_accepts_attribute_rows():
    Row = namedtuple("Row", "Index category name question answer")
    question, answer = format_qa(Row(0, "C", "N", "Q", "A"), sot="<s>", eot="</s>")
    assert (question, answer) == ("<s>user\nQ</s>\n", "<s>model\nCategory: C\nA</s>")


def test_build_training_data():
    rows = load_local_qa()
    data = build_training_data(rows)
    assert set(data) == {"prompts", "responses"}
    assert len(data["prompts"]) == len(data["responses"]) == len(rows)
    assert data["prompts"][0] == format_question(rows[0]["question"])


# --------------------------------------------------------------------------- разбор JSON


def test_normalize_rows_formats():
    records = [{"category": "C", "name": "N", "question": "Q", "answer": "A", "extra": 1}]
    assert normalize_rows(records)[0]["extra"] == "1"
    assert normalize_rows({"data": records})[0]["question"] == "Q"
    columns = {c: {"0": c.upper(), "1": c} for c in COLUMNS}  # pandas orient="columns"
    rows = normalize_rows(columns)
    assert [row["question"] for row in rows] == ["QUESTION", "question"]


@pytest.mark.parametrize("bad", [[], {"x": 1}, [{"question": "Q"}], ["text"]])
def test_normalize_rows_rejects(bad):
    with pytest.raises(QADataError):
        normalize_rows(bad)


# --------------------------------------------------------------------------- загрузка


def test_fallback_when_offline(no_network, tmp_path):
    notices = Notices()
    rows = load_qa(cache_dir=tmp_path, env={}, notify=notices)
    assert rows == load_local_qa()
    assert len(no_network) == 1
    ((title, body),) = notices.items
    assert "набор" in title
    assert "нет доступа к интернету" in body and "URLError" in body
    assert not list(tmp_path.iterdir()), "при ошибке кэш не пишется"


def test_no_internet_is_explained_in_russian_before_the_technical_reason(monkeypatch, tmp_path):
    """Так выглядит отказ без сети в Colab: имя сервера не находится, а не «сеть отключена»."""

    def no_dns(*args, **kwargs):
        raise urllib.error.URLError(socket.gaierror(-2, "Name or service not known"))

    monkeypatch.setattr(urllib.request, "urlopen", no_dns)
    notices = Notices()
    assert load_qa(cache_dir=tmp_path, env={}, notify=notices) == load_local_qa()
    ((_, body),) = notices.items
    reason = body.split("\n\n")[0]
    assert reason.startswith("Причина: похоже, нет доступа к интернету")
    assert "<urlopen error" not in body
    assert reason.index("интернет") < reason.index("URLError") < reason.index("Errno -2")
    assert len(reason) < 250, "техническая причина — коротко"


def test_http_error_and_bad_file_are_told_apart(monkeypatch, tmp_path):
    def not_found(url, timeout=None):
        raise urllib.error.HTTPError(url, 404, "Not Found", None, None)

    monkeypatch.setattr(urllib.request, "urlopen", not_found)
    notices = Notices()
    load_qa(cache_dir=tmp_path, env={}, notify=notices)
    assert "ответил ошибкой 404" in notices.items[0][1]

    _serve(monkeypatch, b"<html>not found</html>")
    notices = Notices()
    load_qa(cache_dir=tmp_path, env={}, notify=notices)
    assert "не похож на набор" in notices.items[0][1]


def test_offline_flag_and_tiny_mode_skip_network(no_network, tmp_path):
    for kwargs in (
        {"offline": True, "env": {}},
        {"env": {"COURSE7_OFFLINE": "1"}},
        {"env": {"COURSE7_TINY": "1"}},
    ):
        notices = Notices()
        assert load_qa(cache_dir=tmp_path, notify=notices, **kwargs) == load_local_qa()
        assert len(notices.items) == 1
    assert no_network == []


def test_tiny_choice_in_process_means_offline(no_network, tmp_path, monkeypatch):
    monkeypatch.setattr(tiny_mode, "_last_choice_tiny", True)
    notices = Notices()
    load_qa(cache_dir=tmp_path, env={}, notify=notices)
    assert "крошечной" in notices.items[0][1]
    assert no_network == []


def _serve(monkeypatch, payload: bytes):
    calls = []

    def fake_urlopen(url, timeout=None):
        calls.append((url, timeout))
        return io.BytesIO(payload)

    monkeypatch.setattr(urllib.request, "urlopen", fake_urlopen)
    return calls


def test_download_then_cache(monkeypatch, tmp_path):
    remote = [{"category": "C", "name": "N", "question": f"Q{i}", "answer": "A"} for i in range(3)]
    calls = _serve(monkeypatch, json.dumps(remote).encode())
    notices = Notices()
    rows = load_qa(cache_dir=tmp_path, env={}, notify=notices, timeout=1.5)
    assert [row["question"] for row in rows] == ["Q0", "Q1", "Q2"]
    assert calls == [(qa_data.QA_URL, 1.5)]
    assert (tmp_path / "africa_galore_qa_v2.json").exists()
    assert notices.items == []

    def refuse(*args, **kwargs):
        raise AssertionError("второй раз сеть не нужна")

    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    assert load_qa(cache_dir=tmp_path, env={}, notify=notices) == rows
    # Без сети кэш тоже годится, а учебный режим берёт наш набор.
    assert load_qa(cache_dir=tmp_path, offline=True, env={}, notify=notices) == rows
    assert load_qa(cache_dir=tmp_path, env={"COURSE7_OFFLINE": "1"}, notify=notices) == rows
    assert notices.items == []
    tiny = load_qa(cache_dir=tmp_path, env={"COURSE7_TINY": "1"}, notify=notices)
    assert tiny == load_local_qa() and len(notices.items) == 1


def test_offline_false_downloads_even_in_tiny_mode(monkeypatch, tmp_path):
    remote = [{"category": "C", "name": "N", "question": "Q", "answer": "A"}]
    calls = _serve(monkeypatch, json.dumps(remote).encode())
    rows = load_qa(cache_dir=tmp_path, offline=False, env={"COURSE7_TINY": "1"}, notify=Notices())
    assert rows[0]["question"] == "Q" and len(calls) == 1


def test_broken_cache_is_refetched(monkeypatch, tmp_path):
    (tmp_path / "africa_galore_qa_v2.json").write_text("{not json", encoding="utf-8")
    remote = [{"category": "C", "name": "N", "question": "Q", "answer": "A"}]
    calls = _serve(monkeypatch, json.dumps(remote).encode())
    assert load_qa(cache_dir=tmp_path, env={}, notify=Notices())[0]["question"] == "Q"
    assert len(calls) == 1


def test_bad_remote_json_falls_back(monkeypatch, tmp_path):
    _serve(monkeypatch, b"<html>not found</html>")
    notices = Notices()
    assert load_qa(cache_dir=tmp_path, env={}, notify=notices) == load_local_qa()
    assert len(notices.items) == 1


def test_cache_dir_from_env(tmp_path):
    assert qa_data.default_qa_cache_dir({"COURSE7_CACHE_DIR": str(tmp_path)}) == tmp_path / "qa"

"""Таблицы класса — байт в байт те же: перестройка оценивания не меняет ни одной клетки.

Класс корпуса (фикстура ``graded_class``, tests/support/corpus.py) даёт таблицы преподавателя; их
снимок лежит в ``tests/data/class-tables/``. Тест сравнивает каждую таблицу со снимком байт в
байт, убрав из неё только то, что меняется от запуска к запуску: секунды (timings.csv
целиком), время сдачи в grades.csv и пути временных папок запуска.

Снимок пишется заново, когда изменение должно менять итоги (новая работа корпуса, новая
подсказка): ``COURSE7_RECORD_TABLES=tests/data/class-tables make unit`` (или этот файл
через pytest) — и разница снимка идёт в тот же коммит, где её видно при обзоре.
"""

from __future__ import annotations

import csv
import difflib
import io
import re
from pathlib import Path

import pytest

from feedback.settings import RECORD_TABLES

from notebook_runner import ROOT

pytestmark = pytest.mark.slow

SNAPSHOT = Path(__file__).parents[2] / "data" / "class-tables"

#: Таблицы итогов класса; timings.csv нет: в ней только секунды и память.
TABLES = (
    "grades.csv",
    "grades_by_task.csv",
    "cases.csv",
    "mistakes.csv",
    "problems.csv",
    "needs_review.csv",
    "similar.csv",
    "changes.csv",
    "lms_ids.csv",
    "mistakes.md",
)
#: Столбцы, в которых время запуска, а не итог.
RUN_COLUMNS = {"grades.csv": ("timestamp",)}


#: Папка единицы в units/ — своё случайное имя у каждой работы в каждом запуске.
UNIT_FOLDER = re.compile(r"course7-unit-[A-Za-z0-9_]+")


def comparable(name: str, text: str, places: dict[str, str]) -> str:
    """Текст таблицы без того, что зависит от запуска: пути папок — их имена, время — пусто."""
    for path, label in sorted(places.items(), key=lambda item: -len(item[0])):
        text = text.replace(path, label)
    text = UNIT_FOLDER.sub("course7-unit-<единица>", text)
    columns = RUN_COLUMNS.get(name)
    if not columns:
        return text
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    out = io.StringIO(newline="")
    writer = csv.DictWriter(out, fieldnames=list(rows[0]) if rows else [], lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({**row, **dict.fromkeys(columns, "")})
    return out.getvalue()


def class_tables(work: Path, folder: Path) -> dict[str, str]:
    """Таблицы рабочей папки ``work`` (работы — из ``folder``), готовые к сравнению."""
    # Путь к клону курса: злые работы корпуса пишут в его файлы (tests/conftest.py).
    places = {str(work): "<work>", str(folder): "<submissions>", str(ROOT): "<repo>"}
    found = {}
    for name in TABLES:
        path = work / name
        if path.exists():
            text = path.read_bytes().decode("utf-8")
            found[name] = comparable(name, text, places)
    return found


def test_class_tables_are_byte_for_byte_the_recorded_ones(graded_class):
    tables = class_tables(graded_class.work, graded_class.folder)
    target = RECORD_TABLES.read()
    if target:
        folder = Path(target)
        folder.mkdir(parents=True, exist_ok=True)
        for name, text in tables.items():
            (folder / name).write_bytes(text.encode("utf-8"))
        pytest.skip(f"снимок таблиц записан в {folder}")
    recorded = {path.name: path.read_bytes().decode("utf-8") for path in SNAPSHOT.iterdir()}
    assert sorted(tables) == sorted(recorded)
    differ = {
        name: "".join(
            difflib.unified_diff(
                recorded[name].splitlines(True), text.splitlines(True), "снимок", "этот запуск"
            )
        )
        for name, text in tables.items()
        if text != recorded[name]
    }
    assert differ == {}

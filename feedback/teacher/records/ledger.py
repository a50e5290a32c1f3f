"""Снимок баллов между запусками: что изменилось (changes.csv) и чьи ручные оценки чьи.

После каждого ``make grade`` в ``scores.json`` остаются баллы каждой работы по заданиям,
отпечаток сданного файла и отпечатки ответов — такими, какими их видел этот запуск (и
преподаватель в formgrader после него). Следующий запуск сравнивает с ним:

- ``changes.csv`` — чьи баллы изменились и почему (:func:`changes`);
- ручная оценка остаётся за преподавателем, пока ответ, который он оценил, тот же; изменился
  ответ — оценка снимается (:func:`feedback.teacher.records.gradebook.recording` отдаёт
  снятые оценки), прежние балл и комментарий уходят в ``manual_archive.csv``
  (:func:`archive_manual`), а задание снова ждёт проверки.

Снимок пишется последним шагом запуска: оборванный раньше запуск повторяется с тем же
прежним снимком, и его changes.csv — тот же, что у запуска без обрыва.

Ручную оценку преподаватель обычно ставит в formgrader уже после снимка, и в снимке её нет.
Поэтому в начале запуска баллы в базе записываются ещё раз (``scores-start.json``,
:func:`run_start`): снятая в этом запуске оценка, поставленная после прошлого, тоже даёт строку
changes.csv. Оборванный запуск оставляет этот файл, и повтор берёт его, а не базу, из которой
оценка к тому времени уже снята.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from feedback.teacher.core import files
from feedback.teacher.core.tables import (
    ChangeRow,
    ManualArchiveRow,
    cells,
    read_rows,
    safe_cell,
    write_rows,
)
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.records import gradebook

#: Почему ручная оценка снята (changes.csv и manual_archive.csv).
ANSWER_CHANGED = gradebook.ANSWER_CHANGED

Key = tuple[str, str]


@dataclass
class Graded:
    """Работа в снимке баллов: отпечаток сданного файла, баллы и отпечатки ответов.

    ``answers`` — задание → отпечаток того, что оценивалось: текста ответа у письменного
    ответа и кода, сданного файла у автопроверки
    (:func:`feedback.teacher.records.gradebook.recording`).
    """

    upload: str | None
    tasks: dict[str, gradebook.TaskScore]
    answers: dict[str, str] = field(default_factory=dict)


#: Снимок баллов: работа (учащийся, лабораторная) → её баллы и отпечатки.
Scores = dict[Key, Graded]


def upload_fingerprint(notebook: Any) -> str:
    """Отпечаток сданной тетрадки: тот же файл, скачанный заново, даёт тот же отпечаток."""
    text = json.dumps(notebook, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]


#: Отпечаток неоценённой работы, у которой нет тетрадки (пустой список — как и прежде).
NO_UPLOAD = upload_fingerprint([])


def _parse(data: dict[str, Any]) -> dict[Key, Graded]:
    return {
        (item["student"], item["lab"]): Graded(
            item.get("upload"),
            {name: gradebook.TaskScore(*task) for name, task in item["tasks"].items()},
            dict(item.get("answers", {})),
        )
        for item in data.get("works", [])
    }


def load_scores(workspace: Workspace) -> dict[Key, Graded] | None:
    """Снимок баллов прошлого запуска (scores.json) или ``None``, если его нет."""
    path = workspace.scores
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return _parse(data)


def previous_scores(workspace: Workspace) -> Scores:
    """Баллы прошлого запуска: снимок scores.json, а без него (первый запуск) — что в базе."""
    before = load_scores(workspace)
    return current_scores(workspace, {}) if before is None else before


def current_scores(
    workspace: Workspace,
    uploads_now: dict[Key, str],
    earlier: dict[Key, Graded] | None = None,
    answers_now: dict[Key, dict[str, str]] | None = None,
) -> dict[Key, Graded]:
    """Баллы из базы сейчас; отпечатки — этого запуска или, если работа не оценивалась, прежние."""
    earlier, answers_now = earlier or {}, answers_now or {}
    found = {}
    for key, result in gradebook.results(workspace).items():
        before = earlier.get(key)
        upload = uploads_now.get(key) or (before.upload if before else None)
        answers = answers_now.get(key, before.answers if before else {})
        found[key] = Graded(upload, result.tasks, dict(answers))
    return found


def _dump(scores: dict[Key, Graded]) -> list[dict[str, Any]]:
    return [
        {
            "student": student,
            "lab": lab,
            "upload": graded.upload,
            "tasks": {
                name: [task.auto, task.manual, task.max, task.needs_manual]
                for name, task in sorted(graded.tasks.items())
            },
            "answers": dict(sorted(graded.answers.items())),
        }
        for (student, lab), graded in sorted(scores.items())
    ]


def save_scores(workspace: Workspace, scores: dict[Key, Graded]) -> None:
    data = {"works": _dump(scores)}
    files.write_text(workspace.scores, json.dumps(data, ensure_ascii=False, indent=1))


def _snapshot_digest(workspace: Workspace) -> str:
    try:
        return hashlib.sha256(workspace.scores.read_bytes()).hexdigest()
    except OSError:
        return ""


def run_start(workspace: Workspace, before: dict[Key, Graded]) -> dict[Key, Graded]:
    """Баллы в базе в начале запуска, отпечатки — из снимка ``before`` (см. модуль).

    Файл запуска, оборванного после того же снимка, берётся как есть; файл от другого снимка
    (запуск дошёл до конца) — нет.
    """
    path, basis = workspace.scores_start, _snapshot_digest(workspace)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("basis") == basis:
            return _parse(data)
    except (OSError, ValueError, KeyError, TypeError):
        pass
    start = current_scores(workspace, {}, before)
    data = {"basis": basis, "works": _dump(start)}
    files.write_text(path, json.dumps(data, ensure_ascii=False, indent=1))
    return start


def finish_run(workspace: Workspace) -> None:
    """Запуск дошёл до конца (снимок записан): баллы начала запуска больше не нужны."""
    workspace.scores_start.unlink(missing_ok=True)


def _points(value: float | None) -> str:
    return "" if value is None else f"{value:g}"


def changes(
    before: dict[Key, Graded],
    after: dict[Key, Graded],
    graded_now: set[Key],
    start: dict[Key, Graded] | None = None,
) -> list[ChangeRow]:
    """Строки changes.csv: задание, прежние и новые баллы и почему они изменились.

    Почему: «ручная оценка» — в formgrader поставили или изменили оценку; :data:`ANSWER_CHANGED`
    — ручная оценка снята, потому что учащийся изменил оценённый ответ; «новая работа» —
    работа оценена заново и файл другой; «изменилась проверка» — файл тот же, а баллы
    другие (исправлена проверка, рубрика или баллы задания). Работы, оценённые впервые, сюда
    не попадают: менять было нечего. Пустые баллы — ждёт ручной проверки (или задания не было).

    ``start`` — баллы в начале запуска (:func:`run_start`): ручная оценка, поставленная после
    снимка ``before`` и снятая в этом запуске, — строка с этой оценкой в прежних баллах.
    """
    rows = []
    for key, now in sorted(after.items()):
        earlier = before.get(key)
        if earlier is None:
            continue
        began = (start or {}).get(key)
        for task in sorted(set(earlier.tasks) | set(now.tasks)):
            old, new = earlier.tasks.get(task), now.tasks.get(task)
            given = began.tasks.get(task) if began else None
            if _taken(given, new) and not (old and old.manual is not None):
                why = _why(given, new, key in graded_now, earlier, now)
                rows.append(ChangeRow(*key, task, _points(given.score), _points(new.score), why))
                continue
            old_score = old.score if old else None
            new_score = new.score if new else None
            if old_score == new_score and (old is None) == (new is None):
                continue
            why = _why(old, new, key in graded_now, earlier, now)
            rows.append(ChangeRow(*key, task, _points(old_score), _points(new_score), why))
    return rows


def _taken(given: gradebook.TaskScore | None, new: gradebook.TaskScore | None) -> bool:
    """Ручная оценка была и снята: задание снова ждёт проверки."""
    return (
        given is not None
        and new is not None
        and given.manual is not None
        and new.manual is None
        and new.waiting
    )


def _why(
    old: gradebook.TaskScore | None,
    new: gradebook.TaskScore | None,
    graded_now: bool,
    earlier: Graded,
    now: Graded,
) -> str:
    why = []
    if _taken(old, new):
        why.append(ANSWER_CHANGED)
    elif (old.manual if old else None) != (new.manual if new else None):
        why.append("ручная оценка")
    if graded_now and _automatic_changed(old, new):
        if earlier.upload is None or now.upload is None:
            why.append("оценено заново (прежний файл не записан)")
        elif earlier.upload != now.upload:
            why.append("новая работа")
        elif ANSWER_CHANGED not in why:
            why.append("изменилась проверка")
    return "; ".join(why) or "изменилась проверка"


def _automatic_changed(old: gradebook.TaskScore | None, new: gradebook.TaskScore | None) -> bool:
    """Изменилось ли решение автопроверки: балл или, пока оценки вручную нет, её просьба."""
    if old is None or new is None:
        return (old is None) != (new is None)
    unreviewed = old.manual is None and new.manual is None
    return old.auto != new.auto or (unreviewed and old.needs_manual != new.needs_manual)


def write_changes(workspace: Workspace, rows: Iterable[ChangeRow]) -> None:
    """changes.csv этого запуска (:func:`changes`): прежний файл заменяется целиком."""
    write_rows(workspace.table(ChangeRow), ChangeRow, rows)


def archive_manual(workspace: Workspace, rows: Iterable[ManualArchiveRow]) -> None:
    """Дописывает снятые ручные оценки в manual_archive.csv (целиком, атомарно).

    Пишется до того, как оценка уйдёт из базы; строка, уже записанная прерванным запуском, не
    повторяется. Прочитанные строки — как в файле (с апострофом :func:`safe_cell`), поэтому
    сравниваются обезвреженными: комментарий «=…» тоже узнаётся.
    """
    path = workspace.table(ManualArchiveRow)
    kept = read_rows(path, ManualArchiveRow)
    written = {tuple(safe_cell(cell) for cell in cells(row)) for row in kept}
    new = [row for row in rows if tuple(safe_cell(cell) for cell in cells(row)) not in written]
    if new:
        write_rows(path, ManualArchiveRow, [*kept, *new])

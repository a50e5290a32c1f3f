"""Чьи и какие работы сданы: файлы из папки или архива LMS → «учащийся, лабораторная, тетрадка».

Файлы читает :mod:`feedback.teacher.intake.archives` (с пределами размера), тетрадку из байтов
разбирает :mod:`feedback.teacher.intake.notebook_json`; здесь решается, чья это работа и
какой лабораторной, и всё, что не удалось, становится строкой списка проблем
(:class:`Problem`) — но никогда исключением, которое остановило бы оценивание остальных.

Кто сдал: папка учащегося первого уровня или, если папок нет, начало имени файла до
названия лабораторной (``ivanov_1234_lab_7_2_training_flops.ipynb`` → ``ivanov_1234``).
Со списком учащихся это имя сопоставляется с ним (:mod:`feedback.teacher.intake.roster`), без
списка папка Moodle даёт id по имени (``Иванов Иван_123_assignsubmission_file_/`` →
``иванов_иван``, :func:`feedback.teacher.intake.names.by_name`), а тёзки одного задания
разводятся (:func:`route`). Какая лабораторная: по ``grade_id`` ячеек, а если разметки
нет — по совпадающему тексту ячеек; имя файла — лишь подсказка. Имена папок и файлов
приводятся к NFC: «Й» одной буквой и «И» с надстрочным знаком — один и тот же учащийся;
имена в архиве без флага UTF-8 читаются в кодировке архиватора
(:func:`feedback.teacher.intake.zip_names.zip_names`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from feedback.formatting import plural
from feedback.teacher.core.tables import Problem
from feedback.teacher.intake.archives import Upload
from feedback.teacher.intake.names import (
    Match,
    apart,
    by_name,
    clean_name,
    parse_lms_name,
    student_id,  # noqa: F401 — его берут отсюда
)
from feedback.teacher.intake.notebook_json import UnreadableUpload, read_notebook
from feedback.teacher.notebook.assemble import cell_source, normalize


@dataclass
class Submission:
    """Работа, готовая к оцениванию."""

    student: str
    lab: str
    file: str
    notebook: dict[str, Any]
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- кто сдал


def _strip_wrappers(uploads: list[Upload], labs: Iterable[str]) -> None:
    """Убирает общую папку-обёртку (``export/ivanov/…`` → ``ivanov/…``)."""
    labs = set(labs)
    while uploads and all(len(upload.parts) >= 3 for upload in uploads):
        first = {upload.parts[0] for upload in uploads}
        if len(first) != 1 or any(upload.parts[1] in labs for upload in uploads):
            return
        for upload in uploads:
            upload.parts = upload.parts[1:]


#: Начало имени файла из архива Moodle без папок: ``Иванов Иван_123_assignsubmission_file_``.
_MOODLE_PREFIX = re.compile(r"^.+?_\d+_assignsubmission_[A-Za-z0-9]+_")


def owner_name(upload: Upload, labs: Iterable[str]) -> str | None:
    """Владелец, как он написан: папка первого уровня, префикс Moodle или начало имени файла."""
    if len(upload.parts) >= 2:
        return clean_name(upload.parts[0])
    stem = upload.parts[0][: -len(".ipynb")]
    moodle = _MOODLE_PREFIX.match(stem)
    if moodle:
        return moodle[0]
    for lab in sorted(labs, key=len, reverse=True):
        position = stem.find(lab)
        if position > 0:
            return stem[:position]
    return None


def owner(upload: Upload, labs: Iterable[str]) -> str | None:
    """Чья это работа без списка учащихся: :func:`owner_name` → id (:func:`by_name`)."""
    name = owner_name(upload, labs)
    return by_name(name).student if name is not None else None


def _cells(nb: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [cell for cell in nb.get("cells", []) if isinstance(cell, dict)]


def grade_ids(nb: Mapping[str, Any]) -> set[str]:
    ids = set()
    for cell in _cells(nb):
        metadata = cell.get("metadata")
        grading = metadata.get("nbgrader") if isinstance(metadata, dict) else None
        if isinstance(grading, dict) and isinstance(grading.get("grade_id"), str):
            ids.add(grading["grade_id"])
    return ids


def _texts(nb: Mapping[str, Any]) -> set[str]:
    texts = set()
    for cell in _cells(nb):
        source = cell_source(cell)
        if len(source.strip()) > 20:
            texts.add(normalize(source))
    return texts


def identify_lab(
    nb: Mapping[str, Any], releases: Mapping[str, Mapping[str, Any]], hint: str | None
) -> str | None:
    """Лабораторная работы: по grade_id, иначе по тексту ячеек, иначе по имени файла."""
    ids = grade_ids(nb)
    by_ids = {lab: len(ids & grade_ids(release)) for lab, release in releases.items()}
    best = max(by_ids.values(), default=0)
    winners = [lab for lab, count in by_ids.items() if count == best]
    if best > 0 and len(winners) == 1:
        return winners[0]
    texts = _texts(nb)
    by_text = {lab: len(texts & _texts(release)) for lab, release in releases.items()}
    best = max(by_text.values(), default=0)
    winners = [lab for lab, count in by_text.items() if count == best]
    if best >= 3 and len(winners) == 1:
        return winners[0]
    return hint if hint in releases else None


def _hint(upload: Upload, labs: Iterable[str]) -> str | None:
    parts = [clean_name(part) for part in upload.parts]
    for lab in sorted(labs, key=len, reverse=True):
        if any(lab in part for part in parts):
            return lab
    return None


class Identifies(Protocol):
    """Кто сдал, по владельцу и лабораторной (:class:`feedback.teacher.intake.roster.Matcher`).

    ``seen`` — номера участников этого запуска, (id, лабораторная) → номер (lms_ids.csv).
    """

    seen: dict[tuple[str, str], str]

    def identify(self, text: str, lab: str | None) -> Match: ...


class _ByName:
    """Без списка учащихся и без :class:`feedback.teacher.intake.roster.Matcher`: id — по имени."""

    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], str] = {}

    def identify(self, text: str, lab: str | None) -> Match:
        return by_name(text)


def _joined(problem: str, other: str | None) -> str:
    return f"{problem}; {other}" if other else problem


Routed = Submission | Problem


def _namesakes(
    entries: list[tuple[Routed, Match | None, str]],
    labs: Iterable[str],
    seen: dict[tuple[str, str], str],
) -> list[Problem]:
    """Разводит тёзок: разные участники одного задания, чьё id взято из одного имени.

    Без списка учащихся id — имя (:func:`feedback.teacher.intake.names.by_name`), и у двух Ивановых
    Иванов одной лабораторной оно одно; их работы смешались бы (или обе стали бы «несколько
    файлов»). Каждый получает id с номером участника (:func:`feedback.teacher.intake.names.apart`),
    а problems.csv — строку о каждом: в других лабораторных номера другие, и свести их
    лабораторные может только список учащихся. ``entries`` и ``seen`` правятся на месте.
    """
    labs = set(labs)
    numbers: dict[tuple[str, str], set[str]] = defaultdict(set)
    for item, match, _ in entries:
        if match and match.by_name and match.participant and item.lab in labs:
            numbers[(item.student, item.lab)].add(match.participant)
    clashes = {key: sorted(found, key=int) for key, found in numbers.items() if len(found) > 1}
    notes = []
    for index, (item, match, name) in enumerate(entries):
        key = (item.student, item.lab)
        if key not in clashes or not (match and match.by_name and match.participant):
            continue
        student = apart(item.student, match.participant)
        entries[index] = (replace(item, student=student), match, name)
        seen.pop(key, None)
        seen[(student, item.lab)] = match.participant
        lms = parse_lms_name(name)
        people = plural(len(clashes[key]), "участник", "участника", "участников")
        notes.append(
            Problem(
                student,
                item.lab,
                item.file,
                f"в этом задании Moodle {people} с именем «{lms.name if lms else name}» "
                f"(номера {', '.join(clashes[key])}) — это разные люди: "
                f"работа участника {match.participant} оценена под id «{student}», а не "
                f"«{item.student}». В других лабораторных номера у них другие, и свести их "
                "работы по имени нельзя: дайте список учащихся (make grade ROSTER=students.csv) "
                "и оцените заново",
            )
        )
    return notes


def route(
    uploads: list[Upload],
    releases: Mapping[str, Mapping[str, Any]],
    matcher: Identifies | None = None,
) -> tuple[list[Submission], list[Problem]]:
    """Работы для оценивания и проблемы: чьи, какой лабораторной, одна ли на лабораторную.

    ``matcher`` (список учащихся, :mod:`feedback.teacher.intake.roster`) решает, чья работа, когда
    лабораторная уже известна; не нашёл — строка проблем с id «?», и работа не оценивается.
    Без списка id — имя из папки Moodle или папка целиком
    (:func:`feedback.teacher.intake.names.by_name`); тёзки одного задания разводятся
    (:func:`_namesakes`).
    """
    labs = list(releases)
    _strip_wrappers(uploads, labs)
    identifies: Identifies = matcher if matcher is not None else _ByName()
    entries: list[tuple[Routed, Match | None, str]] = []

    def add(item: Routed, match: Match | None = None, name: str = "") -> None:
        entries.append((item, match, name))

    for upload in uploads:
        name = owner_name(upload, labs)
        hint = _hint(upload, labs)
        if name is None or (matcher is None and owner(upload, labs) is None):
            add(Problem("?", hint or "?", upload.path, "не удалось понять, чья это работа"))
            continue
        notes: list[str] = []
        try:
            nb = read_notebook(upload.data, notes)
        except UnreadableUpload as error:
            match = identifies.identify(name, hint)
            add(
                Problem(
                    match.student or "?",
                    hint or "?",
                    upload.path,
                    _joined(str(error), match.problem),
                ),
                match,
                name,
            )
            continue
        lab = identify_lab(nb, releases, hint)
        match = identifies.identify(name, lab or hint)
        student, unknown = match.student, match.problem
        if lab is None:
            add(
                Problem(
                    student or "?",
                    hint or "?",
                    upload.path,
                    _joined("не удалось понять, какая это лабораторная", unknown),
                ),
                match,
                name,
            )
            continue
        if student is None:
            add(Problem("?", lab, upload.path, unknown or "не удалось понять, чья это работа"))
            continue
        if hint and hint != lab:
            notes.append(f"Файл {upload.path} назван как {hint}, но это {lab}: оценен как {lab}.")
        add(Submission(student, lab, upload.path, nb, notes), match, name)
    problems = _namesakes(entries, labs, identifies.seen)
    found: dict[tuple[str, str], list[Submission]] = defaultdict(list)
    for item, _, _ in entries:
        if isinstance(item, Submission):
            found[(item.student, item.lab)].append(item)
        else:
            problems.append(item)
    submissions = []
    for (student, lab), items in sorted(found.items()):
        if len(items) == 1:
            submissions.append(items[0])
            continue
        files = ", ".join(item.file for item in items)
        for item in items:
            problems.append(
                Problem(
                    student,
                    lab,
                    item.file,
                    f"у учащегося несколько файлов этой лабораторной ({files}) — ни один не "
                    "оценён; оставьте один и оцените заново",
                )
            )
    return submissions, problems

"""Что сдали учащиеся: папка или архив LMS → работы «учащийся, лабораторная, тетрадка».

Всё, что приходит от учащихся, считается недоверенным: архив может содержать пути
наружу (``../``) и ссылки, файл — быть пустым, битым или чужой лабораторной. Здесь
всё это превращается либо в работу для оценивания, либо в строку списка проблем
(:class:`Problem`) — но никогда в исключение, которое остановило бы оценивание
остальных.

Кто сдал: в архиве LMS — папка учащегося целиком (``Иванов Иван_123_assignsubmission_file_/``)
или, если папок нет, начало имени файла до названия лабораторной
(``ivanov_1234_lab_7_2_training_flops.ipynb`` → ``ivanov_1234``). Какая лабораторная:
по ``grade_id`` ячеек, а если разметки нет — по совпадающему тексту ячеек; имя
файла — лишь подсказка.
"""

from __future__ import annotations

import json
import re
import stat
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from feedback.teacher.assemble import normalize

#: Больше этого тетрадка учащегося не бывает (с картинками — несколько мегабайт).
MAX_NOTEBOOK_BYTES = 32 * 1024**2
#: Предел распакованного архива целиком.
MAX_ARCHIVE_BYTES = 2 * 1024**3

_UNSAFE = re.compile(r"[^\w.\-]+")


@dataclass(frozen=True)
class Problem:
    """Строка problems.csv: чья работа, какая лабораторная, файл и что случилось."""

    student: str
    lab: str
    file: str
    problem: str


@dataclass
class Upload:
    """Один файл из папки или архива: путь внутри него и содержимое."""

    parts: tuple[str, ...]
    data: bytes

    @property
    def path(self) -> str:
        return "/".join(self.parts)


@dataclass
class Submission:
    """Работа, готовая к оцениванию."""

    student: str
    lab: str
    file: str
    notebook: dict[str, Any]
    notes: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- сбор файлов


def _skipped(parts: tuple[str, ...]) -> bool:
    return any(part == "__MACOSX" or part.startswith(".") for part in parts)


def from_folder(folder: Path) -> tuple[list[Upload], list[Problem]]:
    """Тетрадки из папки (ссылки не разыменовываются, скрытые папки пропускаются)."""
    uploads, problems = [], []
    for path in sorted(folder.rglob("*.ipynb")):
        parts = path.relative_to(folder).parts
        if _skipped(parts):
            continue
        if path.is_symlink() or any(parent.is_symlink() for parent in path.parents):
            problems.append(Problem("?", "?", "/".join(parts), "ссылка вместо файла — не открыта"))
            continue
        if path.stat().st_size > MAX_NOTEBOOK_BYTES:
            problems.append(Problem("?", "?", "/".join(parts), _too_big()))
            continue
        uploads.append(Upload(parts, path.read_bytes()))
    return uploads, problems


def _too_big() -> str:
    return f"файл больше {MAX_NOTEBOOK_BYTES // 1024**2} МиБ — не похоже на тетрадку курса"


def from_zip(archive: Path) -> tuple[list[Upload], list[Problem]]:
    """Тетрадки из архива LMS; пути наружу, ссылки и огромные файлы — в проблемы."""
    uploads, problems = [], []
    total = 0
    with zipfile.ZipFile(archive) as zf:
        for info in zf.infolist():
            name = info.filename.replace("\\", "/")
            if info.is_dir() or not name.lower().endswith(".ipynb"):
                continue
            pure = PurePosixPath(name)
            if pure.is_absolute() or ".." in pure.parts or re.match(r"^[A-Za-z]:", name):
                problems.append(Problem("?", "?", name, "путь ведёт за пределы архива — отказано"))
                continue
            if _skipped(pure.parts):
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                problems.append(Problem("?", "?", name, "ссылка вместо файла — не открыта"))
                continue
            if info.file_size > MAX_NOTEBOOK_BYTES:
                problems.append(Problem("?", "?", name, _too_big()))
                continue
            total += info.file_size
            if total > MAX_ARCHIVE_BYTES:
                problems.append(
                    Problem("?", "?", name, "архив слишком большой — остальное не прочитано")
                )
                break
            with zf.open(info) as fh:
                data = fh.read(MAX_NOTEBOOK_BYTES + 1)
            if len(data) > MAX_NOTEBOOK_BYTES:
                problems.append(Problem("?", "?", name, _too_big()))
                continue
            uploads.append(Upload(tuple(pure.parts), data))
    return uploads, problems


# --------------------------------------------------------------------------- кто сдал


def student_id(text: str) -> str:
    """Имя учащегося, пригодное для папок и CSV: буквы, цифры, «.», «-», «_»."""
    return _UNSAFE.sub("_", text.strip()).strip("._-")[:120]


def _strip_wrappers(uploads: list[Upload], labs: Iterable[str]) -> None:
    """Убирает общую папку-обёртку (``export/ivanov/…`` → ``ivanov/…``)."""
    labs = set(labs)
    while uploads and all(len(upload.parts) >= 3 for upload in uploads):
        first = {upload.parts[0] for upload in uploads}
        if len(first) != 1 or any(upload.parts[1] in labs for upload in uploads):
            return
        for upload in uploads:
            upload.parts = upload.parts[1:]


def owner(upload: Upload, labs: Iterable[str]) -> str | None:
    """Чья это работа: папка первого уровня целиком или начало имени файла до лабораторной."""
    if len(upload.parts) >= 2:
        return student_id(upload.parts[0]) or None
    stem = upload.parts[0][: -len(".ipynb")]
    for lab in sorted(labs, key=len, reverse=True):
        position = stem.find(lab)
        if position > 0:
            return student_id(stem[:position]) or None
    return None


# --------------------------------------------------------------------------- что сдал


class UnreadableUpload(ValueError):
    """Файл не удаётся прочитать как тетрадку; текст — русское объяснение."""


def read_notebook(data: bytes) -> dict[str, Any]:
    """Тетрадка из байтов: любой формат 4.x (Colab, Kaggle), без строгой проверки схемы."""
    if not data.strip():
        raise UnreadableUpload("пустой файл")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableUpload("файл не в кодировке UTF-8 — это не тетрадка Jupyter") from None
    try:
        nb = json.loads(text)
    except RecursionError:
        raise UnreadableUpload("файл повреждён: слишком глубокая вложенность JSON") from None
    except ValueError as error:
        raise UnreadableUpload(f"файл повреждён: это не JSON ({error})") from None
    if not isinstance(nb, dict):
        raise UnreadableUpload("это не тетрадка Jupyter: в файле нет ячеек")
    if "worksheets" in nb and "cells" not in nb:  # формат 3
        worksheets = nb.get("worksheets") or [{}]
        nb = {"cells": worksheets[0].get("cells", []) if isinstance(worksheets[0], dict) else []}
        for cell in nb["cells"]:
            if isinstance(cell, dict) and "input" in cell:
                cell["source"] = cell.pop("input")
    if not isinstance(nb.get("cells"), list):
        raise UnreadableUpload("это не тетрадка Jupyter: в файле нет ячеек")
    return nb


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
        source = cell.get("source")
        if isinstance(source, list):
            source = "".join(part for part in source if isinstance(part, str))
        if isinstance(source, str) and len(source.strip()) > 20:
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
    for lab in sorted(labs, key=len, reverse=True):
        if any(lab in part for part in upload.parts):
            return lab
    return None


def route(
    uploads: list[Upload], releases: Mapping[str, Mapping[str, Any]]
) -> tuple[list[Submission], list[Problem]]:
    """Работы для оценивания и проблемы: чьи, какой лабораторной, одна ли на лабораторную."""
    labs = list(releases)
    _strip_wrappers(uploads, labs)
    problems: list[Problem] = []
    found: dict[tuple[str, str], list[Submission]] = defaultdict(list)
    for upload in uploads:
        student = owner(upload, labs)
        hint = _hint(upload, labs)
        if student is None:
            problems.append(
                Problem("?", hint or "?", upload.path, "не удалось понять, чья это работа")
            )
            continue
        try:
            nb = read_notebook(upload.data)
        except UnreadableUpload as error:
            problems.append(Problem(student, hint or "?", upload.path, str(error)))
            continue
        lab = identify_lab(nb, releases, hint)
        if lab is None:
            problems.append(
                Problem(
                    student, hint or "?", upload.path, "не удалось понять, какая это лабораторная"
                )
            )
            continue
        notes = []
        if hint and hint != lab:
            notes.append(f"Файл {upload.path} назван как {hint}, но это {lab}: оценен как {lab}.")
        found[(student, lab)].append(Submission(student, lab, upload.path, nb, notes))
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

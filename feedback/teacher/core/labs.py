"""Лабораторные курса: один список, из которого берут выпуск, оценивание, сервер курса, выгрузка
и сводка.

Лабораторная — это её исходник ``solutions/<id>/<id>.ipynb``: всё остальное выводится из
него. Номер («7.2») — из id (``lab_7_2_training_flops``), название — первый заголовок
«# …» тетрадки, GPU-лабораторная — пометка ``metadata.course7.extra = "gpu"``. Поэтому новая
лабораторная или новое название — правка одной тетрадки в solutions/, а не списков в модулях.
Найти лабораторную по id или номеру — :func:`find_lab`. Модуль лёгкий: только стандартная
библиотека (тетрадка читается как JSON).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: id лабораторной: lab_<курс>_<номер>_<слова>.
LAB_ID = re.compile(r"^lab_(?P<course>\d+)_(?P<number>\d+)_[a-z0-9_]+$")


class UnknownLab(LookupError):
    """Лабораторной с таким id или номером в курсе нет; текст — для преподавателя, по-русски."""


@dataclass(frozen=True)
class Lab:
    """Одна лабораторная курса: id, номер, название, исходник, выпуск и нужен ли GPU."""

    id: str
    number: str
    title: str
    source: Path  # solutions/<id>/<id>.ipynb — с решениями и критериями
    release: Path  # notebooks/<id>/<id>.ipynb — то, что получает учащийся
    gpu: bool


def is_gpu_notebook(notebook: Mapping[str, Any]) -> bool:
    """GPU-лабораторная (7.1, 7.3, 7.5, 7.6): тетрадка помечена ``metadata.course7.extra = "gpu"``.

    Годится и тетрадка nbformat, и её JSON.
    """
    metadata = notebook.get("metadata") or {}
    return (metadata.get("course7") or {}).get("extra") == "gpu"


def notebook_title(notebook: Mapping[str, Any], default: str) -> str:
    """Первый заголовок «# …» тетрадки; без него — ``default``."""
    for cell in notebook.get("cells", []):
        if cell.get("cell_type") != "markdown":
            continue
        source = cell.get("source", "")
        text = ("".join(source) if isinstance(source, list) else source).lstrip()
        if text.startswith("# "):
            return text[2:].splitlines()[0].strip()
    return default


def lab_number(lab_id: str) -> str:
    """Номер лабораторной по её id: ``lab_7_2_training_flops`` → «7.2» (иначе — сам id)."""
    match = LAB_ID.match(lab_id)
    return f"{match['course']}.{match['number']}" if match else lab_id


def _lab(source: Path, root: Path) -> Lab:
    notebook = json.loads(source.read_text(encoding="utf-8"))
    lab_id = source.parent.name
    return Lab(
        id=lab_id,
        number=lab_number(lab_id),
        title=notebook_title(notebook, lab_id),
        source=source,
        release=root / "notebooks" / lab_id / source.name,
        gpu=is_gpu_notebook(notebook),
    )


@functools.cache
def _course_labs(root: Path, stamps: tuple[tuple[str, int], ...]) -> tuple[Lab, ...]:
    return tuple(_lab(root / name, root) for name, _ in stamps)


def course_labs(root: Path) -> tuple[Lab, ...]:
    """Лабораторные курса в корне ``root`` по порядку id: по одной на solutions/<id>/<id>.ipynb.

    Прочитанное запоминается, пока исходники не меняются (время изменения каждого файла).
    """
    sources = sorted(
        path for path in (root / "solutions").glob("*/*.ipynb") if path.stem == path.parent.name
    )
    stamps = tuple((str(path.relative_to(root)), path.stat().st_mtime_ns) for path in sources)
    return _course_labs(root, stamps)


def find_lab(text: str, labs: Iterable[Lab]) -> Lab:
    """Лабораторная по id (``lab_7_2_training_flops``) или по номеру (``7.2``).

    Ничего или несколько — :class:`UnknownLab` со списком лабораторных курса.
    """
    labs = list(labs)
    wanted = text.strip()
    found = [lab for lab in labs if wanted in (lab.id, lab.number)]
    if len(found) != 1:
        known = ", ".join(f"{lab.number} ({lab.id})" for lab in labs) or "—"
        raise UnknownLab(f"нет лабораторной «{wanted}»; в курсе есть: {known}")
    return found[0]

"""Публичная копия курса для учащихся: всё, кроме решений и инструментов преподавателя.

``make public DEST=../course7-public`` (:mod:`feedback.teacher.commands.public`)
складывает в папку пакет проверок, тетрадки учащихся и то, что нужно для их установки.
``solutions/`` (эталоны и критерии ручной проверки), тесты и рабочая папка оценивания
остаются в закрытом репозитории преподавателя.

README.md в копии — только для учащихся: части между ``<!-- teachers -->`` и
``<!-- /teachers -->`` (ссылки на docs/ для преподавателей и разработчиков, ``make test``)
вырезаются — docs/ в копию не попадает, и эти ссылки там вели бы в никуда. Makefile
копируется ради ``make lab``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from feedback.teacher.course.release import ROOT

#: Что попадает в публичную копию (пути от корня репозитория).
PUBLIC = (
    "feedback",
    "notebooks",
    "data",
    "pyproject.toml",
    "Makefile",
    "README.md",
    "environment.yml",
)
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info")
#: Часть README не для учащихся: от ``<!-- teachers -->`` до ``<!-- /teachers -->`` и перевод
#: строки после неё.
TEACHERS_ONLY = re.compile(r"<!-- teachers -->.*?<!-- /teachers -->\n?", re.S)


def learners_readme(text: str) -> str:
    """README для публичной копии: без частей для преподавателей и разработчиков."""
    if text.count("<!-- teachers -->") != text.count("<!-- /teachers -->"):
        raise ValueError("README.md: у каждой <!-- teachers --> должна быть <!-- /teachers -->")
    return re.sub(r"\n{3,}", "\n\n", TEACHERS_ONLY.sub("", text))


def export(destination: Path, root: Path = ROOT) -> list[Path]:
    """Копирует публичную часть курса в ``destination`` (папка должна быть пустой или новой)."""
    destination.mkdir(parents=True, exist_ok=True)
    if any(destination.iterdir()):
        raise FileExistsError(f"{destination} не пуста: выберите новую папку")
    copied = []
    for name in PUBLIC:
        source, target = root / name, destination / name
        if name == "README.md" and source.exists():
            text = learners_readme(source.read_text(encoding="utf-8"))
            target.write_text(text, encoding="utf-8")
        elif source.is_dir():
            shutil.copytree(source, target, ignore=IGNORED)
        elif source.exists():
            shutil.copy2(source, target)
        else:
            continue
        copied.append(target)
    return copied

"""Публичная копия курса для учащихся: всё, кроме решений и инструментов преподавателя.

``make public DEST=../course7-public`` (или ``python -m feedback.teacher.public ПАПКА``)
складывает в папку пакет проверок, тетрадки учащихся и то, что нужно для их установки.
``solutions/`` (эталоны и критерии ручной проверки), тесты и рабочая папка оценивания
остаются в закрытом репозитории преподавателя.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from feedback.teacher.release import ROOT

#: Что попадает в публичную копию (пути от корня репозитория).
PUBLIC = ("feedback", "notebooks", "data", "pyproject.toml", "README.md", "environment.yml")
IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints", "*.egg-info")


def export(destination: Path, root: Path = ROOT) -> list[Path]:
    """Копирует публичную часть курса в ``destination`` (папка должна быть пустой или новой)."""
    destination.mkdir(parents=True, exist_ok=True)
    if any(destination.iterdir()):
        raise FileExistsError(f"{destination} не пуста: выберите новую папку")
    copied = []
    for name in PUBLIC:
        source, target = root / name, destination / name
        if source.is_dir():
            shutil.copytree(source, target, ignore=IGNORED)
        elif source.exists():
            shutil.copy2(source, target)
        else:
            continue
        copied.append(target)
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("destination", type=Path, help="новая папка для публичной копии")
    args = parser.parse_args(argv)
    try:
        export(args.destination)
    except FileExistsError as error:
        print(error, file=sys.stderr)
        return 2
    print(f"Публичная копия курса: {args.destination} (без solutions/ и тестов)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

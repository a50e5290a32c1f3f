"""Рабочая копия лабораторных: учащийся работает в ``my-labs/``, а не в ``notebooks/``.

``notebooks/`` — выпуск курса в git: ``make release`` и ``git pull`` переписывают его целиком.
Поэтому ``make lab`` открывает JupyterLab в игнорируемой папке ``my-labs/`` и перед этим
вызывает ``python -m feedback.workspace``: тот копирует из ``notebooks/`` только то, чего в
рабочей копии ещё нет, и **никогда не переписывает существующий файл**.

Если выпуск лабораторной изменился с тех пор, как её скопировали, тетрадка учащегося
остаётся как есть, а новая версия кладётся рядом: ``lab.ipynb`` → ``lab.new.ipynb``
(так же и для файлов данных). Чтобы отличить новый выпуск от правок учащегося, в
``my-labs/.course7-release.json`` записаны отпечатки (SHA-256) скопированных версий.
Занятое имя ``.new`` тоже не переписывается: тогда модуль просит убрать старую копию.

Лабораторную, которой нужно дополнение пакета (``"course7": {"extra": "gpu"}`` в метаданных
тетрадки: keras, keras-hub и jax для GPU-лабораторных), модуль копирует, только если эти модули
в окружении есть: ``make lab LAB_EXTRAS=lab`` ставит лишь JupyterLab, и тетрадка 7.5 упала бы
там на первом ``import keras``. Какие лабораторные не скопированы и что поставить, чтобы они
появились, модуль говорит по-русски; уже скопированные лабораторные не трогает.

Только стандартная библиотека: модуль запускается до JupyterLab и ничего тяжёлого не тянет.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

#: Папка выпуска (в git) и рабочая копия учащегося (в .gitignore).
RELEASE_DIR = "notebooks"
WORKSPACE_DIR = "my-labs"
#: Отпечатки версий выпуска, уже скопированных в рабочую копию: путь → SHA-256.
MANIFEST = ".course7-release.json"
#: Служебные папки, которые не копируются.
SKIP = frozenset({".ipynb_checkpoints", "__pycache__"})
#: Дополнение пакета из метаданных тетрадки → модули, без которых она не выполнится. GPU-
#: лабораторным нужны keras и keras-hub (дополнение gpu) и jax: Keras в них работает на JAX
#: (в Colab и Kaggle jax уже стоит, локально его ставит дополнение tiny).
EXTRA_MODULES = {"gpu": ("keras", "keras_hub", "jax")}
#: Как назвать модули в сообщении: так же, как их ставит pip.
PACKAGE_NAMES = {"keras_hub": "keras-hub"}


@dataclass
class Update:
    """Новая версия файла выпуска при уже существующем файле учащегося."""

    path: str  #: файл учащегося, относительно рабочей копии
    beside: str  #: куда положена (или положилась бы) новая версия
    copied: bool  #: False — имя ``beside`` занято другим файлом, ничего не скопировано
    known: bool  #: True — выпуск изменился с прошлого копирования; False — отпечатка не было


@dataclass
class Report:
    """Что сделал :func:`sync`: лабораторные — по папкам первого уровня ``notebooks/``."""

    added: list[str] = field(default_factory=list)  #: лабораторные, скопированные целиком
    kept: list[str] = field(default_factory=list)  #: уже были в рабочей копии
    new_files: list[str] = field(default_factory=list)  #: новые файлы в уже бывших лабораторных
    updates: list[Update] = field(default_factory=list)
    #: не скопированы: лабораторная → модули, которых для неё нет в окружении
    skipped: dict[str, list[str]] = field(default_factory=dict)


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _release_files(release: Path) -> list[Path]:
    """Файлы выпуска (относительные пути) без служебных папок, по порядку."""
    files = []
    for path in sorted(release.rglob("*")):
        rel = path.relative_to(release)
        if path.is_file() and not SKIP.intersection(rel.parts):
            files.append(rel)
    return files


def module_available(name: str) -> bool:
    """Есть ли модуль в окружении (без импорта: keras импортируется секунды)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def lab_extras(lab: Path) -> set[str]:
    """Дополнения пакета, которые называют метаданные тетрадок лабораторной."""
    extras = set()
    for path in sorted(lab.glob("*.ipynb")):
        try:
            metadata = json.loads(path.read_text(encoding="utf-8")).get("metadata", {})
            extra = metadata.get("course7", {}).get("extra")
        except (OSError, ValueError, AttributeError):
            continue
        if isinstance(extra, str):
            extras.add(extra)
    return extras


def missing_modules(lab: Path, available: Callable[[str], bool] = module_available) -> list[str]:
    """Модули, без которых лабораторная ``lab`` не выполнится в этом окружении."""
    needed = [name for extra in sorted(lab_extras(lab)) for name in EXTRA_MODULES.get(extra, ())]
    return [name for name in dict.fromkeys(needed) if not available(name)]


def beside_name(path: Path) -> Path:
    """``lab.ipynb`` → ``lab.new.ipynb``: имя для новой версии рядом с файлом учащегося."""
    return path.with_name(f"{path.stem}.new{path.suffix}")


def _load_manifest(workspace: Path) -> dict[str, str]:
    try:
        data = json.loads((workspace / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def _save_manifest(workspace: Path, manifest: dict[str, str]) -> None:
    target = workspace / MANIFEST
    tmp = target.with_name(target.name + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, target)


def _copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, dst)


def sync(
    release: Path, workspace: Path, available: Callable[[str], bool] = module_available
) -> Report:
    """Дополнить рабочую копию ``workspace`` из выпуска ``release``, ничего не переписывая.

    Новую лабораторную, которой в окружении не хватает модулей (``available`` отвечает, есть
    ли модуль), не копирует и называет в :attr:`Report.skipped`.
    """
    release, workspace = Path(release), Path(workspace)
    workspace.mkdir(parents=True, exist_ok=True)
    manifest = _load_manifest(workspace)
    report = Report()
    labs_before = {p.name for p in workspace.iterdir() if p.is_dir()}
    for lab in sorted(p for p in release.iterdir() if p.is_dir() and p.name not in SKIP):
        missing = missing_modules(lab, available)
        if missing and lab.name not in labs_before:
            report.skipped[lab.name] = missing

    for rel in _release_files(release):
        key = rel.as_posix()
        lab = rel.parts[0] if len(rel.parts) > 1 else None  # файл в корне выпуска — не лаба
        if lab in report.skipped:
            continue
        existed = lab in labs_before
        if lab is not None:
            listed = report.kept if existed else report.added
            if lab not in listed:
                listed.append(lab)

        src, dst = release / rel, workspace / rel
        digest = _digest(src)
        if not dst.exists():
            _copy(src, dst)
            manifest[key] = digest
            if lab is None or existed:
                report.new_files.append(key)
            continue

        recorded = manifest.get(key)
        if recorded == digest:
            continue  # выпуск не менялся: файл учащегося — его ответы
        if recorded is None and _digest(dst) == digest:
            manifest[key] = digest  # копия совпадает с выпуском, только отпечатка не было
            continue

        beside = beside_name(dst)
        rel_beside = beside.relative_to(workspace).as_posix()
        if not beside.exists():
            _copy(src, beside)
        elif _digest(beside) != digest:
            report.updates.append(Update(key, rel_beside, copied=False, known=recorded is not None))
            continue  # имя занято: не переписываем и не запоминаем — скажем ещё раз
        manifest[key] = digest
        report.updates.append(Update(key, rel_beside, copied=True, known=recorded is not None))

    _save_manifest(workspace, manifest)
    return report


def describe(report: Report, workspace: str = WORKSPACE_DIR) -> str:
    """Отчёт :func:`sync` по-русски, для терминала перед запуском JupyterLab."""
    lines = [f"Ваша работа — в папке {workspace}/ (JupyterLab откроется там)."]
    if report.added:
        lines.append("Добавлены лабораторные: " + ", ".join(report.added) + ".")
    if report.kept:
        lines.append("Уже были и оставлены как есть: " + ", ".join(report.kept) + ".")
    if report.new_files:
        lines.append(
            "Добавлены файлы выпуска, которых у вас не было: " + ", ".join(report.new_files)
        )
    if report.skipped:
        missing = [name for names in report.skipped.values() for name in names]
        packages = ", ".join(PACKAGE_NAMES.get(name, name) for name in dict.fromkeys(missing))
        lines.append(
            "Не скопированы: " + ", ".join(report.skipped) + f". Им нужны {packages}, а в этом "
            "окружении их нет (так бывает после make lab LAB_EXTRAS=lab). Чтобы выполнять их "
            "здесь, запустите make lab без LAB_EXTRAS: он поставит и их, а без видеокарты "
            "лабораторные пойдут в учебном режиме. Или откройте их в Colab или Kaggle по "
            "ссылкам из README. Ваши файлы это не трогает."
        )
    for update in report.updates:
        why = (
            "в notebooks/ новая версия"
            if update.known
            else "версия в notebooks/ отличается от вашей"
        )
        if update.copied:
            lines.append(
                f"{update.path}: {why}. Ваш файл не тронут, новая версия лежит рядом — "
                f"{update.beside}. Перенесите в неё свои ответы (или продолжайте в своём "
                "файле), а лишний файл удалите."
            )
        else:
            lines.append(
                f"{update.path}: {why}, но {update.beside} уже есть и отличается от неё. "
                f"Ничего не тронуто: переименуйте или удалите {update.beside} и запустите "
                "make lab ещё раз — новая версия ляжет на его место."
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m feedback.workspace",
        description="Дополнить рабочую копию лабораторных из выпуска, ничего не переписывая.",
    )
    parser.add_argument("--release", default=RELEASE_DIR, help="папка выпуска (notebooks)")
    parser.add_argument("--workspace", default=WORKSPACE_DIR, help="рабочая копия (my-labs)")
    args = parser.parse_args(argv)
    release = Path(args.release)
    if not release.is_dir():
        print(f"Нет папки выпуска {release}/: запустите команду из корня курса.", file=sys.stderr)
        return 1
    print(describe(sync(release, Path(args.workspace)), args.workspace.rstrip("/")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

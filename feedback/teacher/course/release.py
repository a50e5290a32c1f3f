"""Выпуск тетрадок учащихся из solutions/ с помощью nbgrader (``make notebooks``).

1. В каждой исходной тетрадке обновляются две первые ячейки — значки «Открыть в
   Colab/Kaggle» и ячейка установки пакета — по адресу репозитория и тегу из
   ``[tool.course]`` в pyproject.toml (форку достаточно поменять одну строку).
2. ``nbgrader generate_assignment`` делает из них тетрадки учащихся в notebooks/:
   решения заменены русскими заглушками, скрытые тесты убраны, выводов нет.

``make check-notebooks`` (:mod:`feedback.teacher.commands.release`) ничего не меняет и завершается с
ошибкой, если notebooks/ или значки устарели (это же проверяет тест).
"""

from __future__ import annotations

import filecmp
import json
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from feedback.teacher.core.labs import course_labs
from feedback.teacher.core.settings import ROOT
from feedback.teacher.notebook.assemble import cell_source

PACKAGE = "course7-feedback"

BADGES = (
    '<a href="https://colab.research.google.com/github/{repo}/blob/{tag}/{path}" '
    'target="_parent"><img src="https://colab.research.google.com/assets/colab-badge.svg" '
    'alt="Открыть в Colab"/></a>\n'
    '<a href="https://kaggle.com/kernels/welcome?src=https://github.com/{repo}/blob/{tag}/{path}" '
    'target="_parent"><img src="https://kaggle.com/static/images/open-in-kaggle.svg" '
    'alt="Открыть в Kaggle"/></a>'
)

INSTALL = """\
# Пакет курса с проверками: в Colab и Kaggle он ставится здесь, локально уже установлен.
import importlib
import importlib.util
import subprocess
import sys

COURSE_REPOSITORY = "{repository}"
COURSE_TAG = "{tag}"
COURSE_PACKAGE = f"{package} @ git+https://github.com/{{COURSE_REPOSITORY}}@{{COURSE_TAG}}"
if importlib.util.find_spec("feedback") is None:
    print("Ставлю из GitHub пакет курса с проверками.")
{what}    print("Дождитесь конца ячейки: pip работает молча, а закончив, ячейка скажет об этом.")
    _pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", COURSE_PACKAGE],
        capture_output=True,
        text=True,
    )
    importlib.invalidate_caches()
    if _pip.returncode != 0:
        print("Не удалось установить пакет курса. Проверьте, что есть интернет, и выполните")
        print("ячейку ещё раз. Ответ pip:", _pip.stderr[-1500:], sep="\\n")
    else:
        print("Готово: пакет курса установлен.")"""

#: Что ещё ставит первая ячейка — по дополнению тетрадки (что pip меняет в Colab, проверяет
#: tests/project/test_colab_versions.py, а README описывает в «Что первая ячейка меняет в Colab»).
WHAT = {
    None: '    print("Всё остальное, что нужно лабораторной, в Colab и Kaggle уже есть.")\n',
    "gpu": (
        '    print("Вместе с ним pip поставит keras-hub 0.32, Keras 3.15 и kagglesdk 0.1.28;")\n'
        '    print("в Kaggle иногда ещё и TensorFlow — тогда установка займёт несколько минут.")\n'
    ),
}


def course_settings(root: Path = ROOT) -> dict[str, str]:
    """Адрес репозитория и тег выпуска из pyproject.toml."""
    with open(root / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["tool"]["course"]


def stamped_cells(notebook_path: Path, nb: dict, root: Path = ROOT) -> dict[str, str]:
    """Правильный текст ячеек «badges» и «install» для этой тетрадки."""
    settings = course_settings(root)
    extra = nb.get("metadata", {}).get("course7", {}).get("extra")
    name = f"{PACKAGE}[{extra}]" if extra else PACKAGE
    return {
        "badges": BADGES.format(
            repo=settings["repository"],
            tag=settings["release_tag"],
            path=notebook_path.relative_to(root).as_posix(),
        ),
        "install": INSTALL.format(
            repository=settings["repository"],
            tag=settings["release_tag"],
            package=name,
            what=WHAT.get(extra, WHAT[None]),
        ),
    }


def _stamp(nb: dict, cells: dict[str, str]) -> bool:
    changed = False
    for cell in nb["cells"]:
        role = cell.get("metadata", {}).get("course7")
        if role in cells and cell_source(cell) != cells[role]:
            cell["source"] = cells[role]
            changed = True
    return changed


def _read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _write(path: Path, nb: dict) -> None:
    path.write_text(
        json.dumps(nb, ensure_ascii=False, indent=1, sort_keys=True) + "\n", encoding="utf-8"
    )


def stamp_sources(root: Path = ROOT, write: bool = True) -> list[Path]:
    """Обновляет значки и ячейку установки в solutions/; возвращает изменённые файлы."""
    stale = []
    for path in (lab.source for lab in course_labs(root)):
        nb = _read(path)
        if _stamp(nb, stamped_cells(path, nb, root)):
            stale.append(path)
            if write:
                _write(path, nb)
    return stale


def _clean(nb: dict) -> dict:
    """Убирает из выпуска всё случайное: выводы, номера запусков, метаданные запуска."""
    nb.get("metadata", {}).pop("celltoolbar", None)
    nb.get("metadata", {}).pop("widgets", None)
    for cell in nb["cells"]:
        cell.get("metadata", {}).pop("execution", None)
        if cell["cell_type"] == "code":
            cell["outputs"] = []
            cell["execution_count"] = None
    return nb


def generate(release_dir: Path, root: Path = ROOT) -> None:
    """Строит тетрадки учащихся nbgrader'ом в ``release_dir`` и подписывает их значками.

    Все лабораторные — одним вызовом nbgrader (``"*"``): сам его запуск стоит секунды три.
    """
    subprocess.run(
        [
            sys.executable,
            "-m",
            "nbgrader",
            "generate_assignment",
            "*",
            "--force",
            "--no-db",
            "--log-level=WARN",
            f"--CourseDirectory.release_directory={release_dir}",
        ],
        cwd=root,
        check=True,
    )
    for lab in course_labs(root):
        for path in (release_dir / lab.id).glob("*.ipynb"):
            nb = _clean(_read(path))
            student_path = lab.release.parent / path.name
            _stamp(nb, stamped_cells(student_path, nb, root))
            _write(path, nb)


def stale_notebooks(root: Path = ROOT) -> list[str]:
    """Что в notebooks/ не совпадает со свежим выпуском из solutions/ (пусто — всё в порядке)."""
    problems = [
        f"{path}: устарели значки или ячейка установки" for path in stamp_sources(root, False)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "notebooks"
        generate(fresh, root)
        current = root / "notebooks"
        comparison = filecmp.dircmp(fresh, current, ignore=[".ipynb_checkpoints"])
        problems += _differences(comparison, Path("notebooks"))
    return problems


def _differences(comparison: filecmp.dircmp, where: Path) -> list[str]:
    problems = [f"{where / name}: нет в notebooks/" for name in comparison.left_only]
    problems += [f"{where / name}: лишний файл" for name in comparison.right_only]
    _, mismatch, errors = filecmp.cmpfiles(
        comparison.left, comparison.right, comparison.common_files, shallow=False
    )
    problems += [f"{where / name}: отличается от solutions/" for name in mismatch + errors]
    for name, sub in comparison.subdirs.items():
        problems += _differences(sub, where / name)
    return problems

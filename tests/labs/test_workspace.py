"""Рабочая копия учащегося (feedback.workspace): дополняется из выпуска и ничего не теряет."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from feedback.workspace import (
    EXTRA_MODULES,
    MANIFEST,
    PACKAGE_NAMES,
    describe,
    lab_extras,
    sync,
)

from notebook_runner import ROOT

LABS = sorted(p.name for p in (ROOT / "notebooks").iterdir() if p.is_dir())


def notebook(text: str, extra: str | None = None) -> str:
    """Крошечная тетрадка с одной ячейкой кода ``text``; ``extra`` — дополнение пакета."""
    cell = {"cell_type": "code", "metadata": {}, "source": text, "outputs": []}
    metadata = {"course7": {"extra": extra}} if extra else {}
    return json.dumps({"cells": [cell], "metadata": metadata, "nbformat": 4, "nbformat_minor": 5})


def release(tmp_path: Path) -> Path:
    """Выпуск из двух лабораторных: тетрадка и файл данных рядом с ней во второй."""
    root = tmp_path / "notebooks"
    for lab in ("lab_a", "lab_b"):
        (root / lab).mkdir(parents=True)
        (root / lab / f"{lab}.ipynb").write_text(notebook("# ваш код"), encoding="utf-8")
    (root / "lab_b" / "data.csv").write_text("x,y\n1,2\n", encoding="utf-8")
    (root / "lab_b" / ".ipynb_checkpoints").mkdir()
    (root / "lab_b" / ".ipynb_checkpoints" / "lab_b-checkpoint.ipynb").write_text("{}")
    return root


def test_first_run_copies_every_real_lab_with_its_files(tmp_path):
    work = tmp_path / "my-labs"
    report = sync(ROOT / "notebooks", work)
    assert report.added == LABS and not report.kept and not report.updates
    for lab in LABS:
        for src in (ROOT / "notebooks" / lab).iterdir():
            if src.is_file():
                assert (work / lab / src.name).read_bytes() == src.read_bytes()
    assert "Добавлены лабораторные: lab_7_1_compare_models" in describe(report)


def test_gpu_labs_are_not_copied_where_their_packages_are_missing(tmp_path):
    """make lab LAB_EXTRAS=lab: без keras тетрадка 7.5 упала бы на первом import keras."""
    work = tmp_path / "my-labs"
    gpu_labs = [lab for lab in LABS if "gpu" in lab_extras(ROOT / "notebooks" / lab)]
    assert gpu_labs == [
        "lab_7_1_compare_models",
        "lab_7_3_memory_wall",
        "lab_7_5_bfloat16_lora",
        "lab_7_6_gradient_accumulation",
    ]

    report = sync(ROOT / "notebooks", work, available=lambda name: name not in ("keras",))

    assert report.added == [lab for lab in LABS if lab not in gpu_labs]
    assert report.skipped == {lab: ["keras"] for lab in gpu_labs}
    assert not any((work / lab).exists() for lab in gpu_labs)
    text = describe(report)
    assert "Не скопированы: " + ", ".join(gpu_labs) + ". Им нужны keras" in text
    assert "make lab без LAB_EXTRAS" in text and "Colab" in text

    # Поставили пакеты — следующий make lab добавляет эти лабораторные, не трогая остальные.
    again = sync(ROOT / "notebooks", work, available=lambda name: True)
    assert again.added == gpu_labs and not again.skipped and not again.updates


def test_a_copied_gpu_lab_is_kept_and_updated_without_its_packages(tmp_path):
    rel, work = release(tmp_path), tmp_path / "my-labs"
    (rel / "lab_b" / "lab_b.ipynb").write_text(notebook("# GPU", extra="gpu"), encoding="utf-8")
    sync(rel, work)
    (rel / "lab_b" / "lab_b.ipynb").write_text(notebook("# GPU 2", extra="gpu"), encoding="utf-8")

    report = sync(rel, work, available=lambda name: False)

    assert not report.skipped and report.kept == ["lab_a", "lab_b"]
    assert [update.beside for update in report.updates] == ["lab_b/lab_b.new.ipynb"]


def test_modules_of_the_gpu_labs_come_with_the_default_make_lab():
    """Модули, которых ждёт рабочая копия, ставит make lab по умолчанию (LAB_EXTRAS=lab,tiny)."""
    import re
    import tomllib

    from packaging.requirements import Requirement

    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    extras = re.search(r"^LAB_EXTRAS \?= (.+)$", makefile, re.M)[1].split(",")
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]

    def requirements(extra):
        for item in map(Requirement, optional[extra]):
            if item.name == "course7-feedback":
                for inner in item.extras:
                    yield from requirements(inner)
            else:
                yield item.name.lower()

    installed = {name for extra in extras for name in requirements(extra)}
    for modules in EXTRA_MODULES.values():
        for module in modules:
            assert PACKAGE_NAMES.get(module, module) in installed, module


def test_data_files_are_copied_and_checkpoints_are_not(tmp_path):
    work = tmp_path / "my-labs"
    sync(release(tmp_path), work)
    assert (work / "lab_b" / "data.csv").read_text(encoding="utf-8") == "x,y\n1,2\n"
    assert not (work / "lab_b" / ".ipynb_checkpoints").exists()


def test_learner_answers_survive_a_second_run(tmp_path):
    rel, work = release(tmp_path), tmp_path / "my-labs"
    sync(rel, work)
    mine = work / "lab_a" / "lab_a.ipynb"
    mine.write_text(notebook("answer = 42"), encoding="utf-8")

    report = sync(rel, work)

    assert mine.read_text(encoding="utf-8") == notebook("answer = 42")
    assert report.kept == ["lab_a", "lab_b"] and not report.added and not report.updates
    assert not (work / "lab_a" / "lab_a.new.ipynb").exists()
    assert "Уже были и оставлены как есть: lab_a, lab_b." in describe(report)


def test_new_release_goes_beside_the_learner_notebook(tmp_path):
    rel, work = release(tmp_path), tmp_path / "my-labs"
    sync(rel, work)
    mine = work / "lab_a" / "lab_a.ipynb"
    mine.write_text(notebook("answer = 42"), encoding="utf-8")
    (rel / "lab_a" / "lab_a.ipynb").write_text(notebook("# исправленное задание"), "utf-8")

    report = sync(rel, work)

    assert mine.read_text(encoding="utf-8") == notebook("answer = 42")
    beside = work / "lab_a" / "lab_a.new.ipynb"
    assert beside.read_text(encoding="utf-8") == notebook("# исправленное задание")
    [update] = report.updates
    assert (update.path, update.beside, update.copied) == (
        "lab_a/lab_a.ipynb",
        "lab_a/lab_a.new.ipynb",
        True,
    )
    text = describe(report)
    assert "lab_a/lab_a.ipynb: в notebooks/ новая версия. Ваш файл не тронут" in text
    assert "lab_a/lab_a.new.ipynb" in text

    # Третий запуск с тем же выпуском молчит: новая версия уже отдана.
    assert not sync(rel, work).updates
    # Учащийся перенёс ответы и удалил копию — она не возвращается, пока выпуск тот же.
    beside.unlink()
    assert not sync(rel, work).updates and not beside.exists()


def test_a_taken_new_name_is_not_overwritten(tmp_path):
    rel, work = release(tmp_path), tmp_path / "my-labs"
    sync(rel, work)
    (rel / "lab_a" / "lab_a.ipynb").write_text(notebook("# выпуск 2"), encoding="utf-8")
    sync(rel, work)
    beside = work / "lab_a" / "lab_a.new.ipynb"
    beside.write_text(notebook("ответы и во второй копии"), encoding="utf-8")
    (rel / "lab_a" / "lab_a.ipynb").write_text(notebook("# выпуск 3"), encoding="utf-8")

    report = sync(rel, work)

    assert beside.read_text(encoding="utf-8") == notebook("ответы и во второй копии")
    assert [u.copied for u in report.updates] == [False]
    assert "переименуйте или удалите lab_a/lab_a.new.ipynb" in describe(report)
    # Пока имя занято, напоминание повторяется; после переименования ложится выпуск 3.
    assert [u.copied for u in sync(rel, work).updates] == [False]
    beside.rename(work / "lab_a" / "lab_a.mine.ipynb")
    assert [u.copied for u in sync(rel, work).updates] == [True]
    assert beside.read_text(encoding="utf-8") == notebook("# выпуск 3")


def test_a_newly_released_lab_and_file_appear(tmp_path):
    rel, work = release(tmp_path), tmp_path / "my-labs"
    sync(rel, work)
    (rel / "lab_c").mkdir()
    (rel / "lab_c" / "lab_c.ipynb").write_text(notebook("# новая лаба"), encoding="utf-8")
    (rel / "lab_a" / "weights.json").write_text("[1, 2]", encoding="utf-8")

    report = sync(rel, work)

    assert report.added == ["lab_c"] and report.kept == ["lab_a", "lab_b"]
    assert report.new_files == ["lab_a/weights.json"]
    assert (work / "lab_c" / "lab_c.ipynb").read_text(encoding="utf-8") == notebook("# новая лаба")
    assert (work / "lab_a" / "weights.json").read_text(encoding="utf-8") == "[1, 2]"


def test_without_a_manifest_a_differing_file_is_still_kept(tmp_path):
    """Отпечатков нет (папку собрали вручную): отличие не выдаётся за правки учащегося молча."""
    rel, work = release(tmp_path), tmp_path / "my-labs"
    (work / "lab_a").mkdir(parents=True)
    mine = work / "lab_a" / "lab_a.ipynb"
    mine.write_text(notebook("answer = 1"), encoding="utf-8")

    report = sync(rel, work)

    assert mine.read_text(encoding="utf-8") == notebook("answer = 1")
    [update] = report.updates
    assert update.copied and not update.known
    assert "отличается от вашей" in describe(report)
    assert json.loads((work / MANIFEST).read_text(encoding="utf-8"))["lab_a/lab_a.ipynb"]


def test_module_entry_point_prints_in_russian_and_imports_only_stdlib(tmp_path):
    rel = release(tmp_path)
    code = (
        "import sys\n"
        "before = set(sys.modules)\n"
        "import runpy\n"
        "sys.argv = ['x', '--release', sys.argv[1], '--workspace', sys.argv[2]]\n"
        "try:\n"
        "    runpy.run_module('feedback.workspace', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = {m.split('.')[0] for m in set(sys.modules) - before}\n"
        "third = loaded - set(sys.stdlib_module_names)\n"
        "print('THIRD', sorted(third - {'feedback', '__main__'}))\n"
    )
    run = [sys.executable, "-c", code, str(rel), str(tmp_path / "my-labs")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(run, cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert "Добавлены лабораторные: lab_a, lab_b." in out.stdout
    assert out.stdout.strip().endswith("THIRD []")

    missing = subprocess.run(
        [sys.executable, "-m", "feedback.workspace", "--release", str(tmp_path / "нет")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 1 and "Нет папки выпуска" in missing.stderr


def test_make_lab_opens_the_ignored_working_copy():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    lab = makefile.split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert "-m feedback.workspace --release notebooks --workspace $(WORKSPACE)" in lab
    assert "--notebook-dir=$(WORKSPACE)" in lab and "notebooks/" not in lab
    assert "WORKSPACE := my-labs" in makefile
    assert "my-labs/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()

"""environment.yml и pyproject.toml описывают одно и то же окружение; пакет лёгкий."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib

import pytest
import yaml
from packaging.requirements import Requirement

from notebook_runner import ROOT


def pyproject():
    with open(ROOT / "pyproject.toml", "rb") as fh:
        return tomllib.load(fh)


def test_conda_environment_matches_base_dependencies():
    env = yaml.safe_load((ROOT / "environment.yml").read_text(encoding="utf-8"))
    conda = {}
    pip = []
    for item in env["dependencies"]:
        if isinstance(item, dict):
            pip += item["pip"]
        else:
            requirement = Requirement(item)
            conda[requirement.name] = str(requirement.specifier)
    python = pyproject()["project"]["requires-python"]
    assert conda.pop("python") == python
    conda.pop("pip")
    base = {
        Requirement(dep).name: str(Requirement(dep).specifier)
        for dep in pyproject()["project"]["dependencies"]
    }
    assert conda == base
    assert pip == ["-e .[dev]"]


def test_base_dependencies_are_what_colab_ships():
    names = {Requirement(dep).name for dep in pyproject()["project"]["dependencies"]}
    assert names == {"numpy", "pandas", "ipython", "matplotlib", "ipywidgets"}


HEAVY = ("jax", "keras", "keras_hub", "tensorflow", "torch")
#: Модули, которые тетрадки импортируют до загрузки модели; второй элемент — что ещё
#: не должно подгружаться при импорте этого модуля.
LIGHT_MODULES = [
    ("feedback", ()),
    ("feedback.flops", ()),
    ("feedback.memory", ()),
    ("feedback.formatting", ()),
    ("feedback.plots", ("matplotlib",)),
    ("feedback.explore", ()),
    ("feedback.calling", ()),
    ("feedback.wall", ()),
    ("feedback.runtime", ()),
    ("feedback.qa_data", ()),
    ("feedback.tiny_mode", ()),
    ("feedback.host", ()),
    ("feedback.kaggle_access", ("kagglehub", "requests")),
    ("feedback.xla_memory", ()),
    ("feedback.quiet", ("sentencepiece",)),
    ("feedback.accumulation", ()),
    ("feedback.precision", ()),
    ("feedback.monitor", ()),
    ("feedback.generation", ("matplotlib",)),
]


@pytest.mark.parametrize(
    ("module", "also_absent"), LIGHT_MODULES, ids=[module for module, _ in LIGHT_MODULES]
)
def test_modules_import_nothing_heavy(module, also_absent):
    """Свежий интерпретатор: импорт модуля не тянет jax, keras, tensorflow, torch."""
    absent = (*HEAVY, *also_absent)
    code = (
        f"import sys, {module}\n"
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {absent!r}))"
    )
    env = {key: value for key, value in os.environ.items() if key != "KERAS_BACKEND"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"

"""environment.yml и pyproject.toml описывают одно и то же окружение; пакет лёгкий."""

from __future__ import annotations

import subprocess
import sys
import tomllib

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


def test_cpu_lab_modules_import_nothing_heavy():
    code = (
        "import sys, feedback, feedback.flops, feedback.memory, feedback.formatting, "
        "feedback.plots, feedback.explore, feedback.calling\n"
        "heavy = {'jax', 'keras', 'keras_hub', 'tensorflow', 'torch'}\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in heavy))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"

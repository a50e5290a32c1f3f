"""environment.yml и pyproject.toml описывают одно и то же окружение; пакет лёгкий.

Учащемуся (make lab, environment.yml) ставится только то, что нужно лабораторным: ни
инструментов тестов, ни nbgrader, ни Dask. Всё, что импортирует оценивание, названо в
дополнении grading.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

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
    assert pip == [f"-e .[{lab_extras()}]"]  # то же, что ставит make lab


SELF = "course7-feedback"


def extra_requirements(*extras: str) -> set[str]:
    """Имена пакетов из дополнений, со ссылками ``course7-feedback[...]`` раскрытыми."""
    optional = pyproject()["project"]["optional-dependencies"]
    names, todo, seen = set(), list(extras), set()
    while todo:
        extra = todo.pop()
        if extra in seen:
            continue
        seen.add(extra)
        for dep in optional[extra]:
            requirement = Requirement(dep)
            if canonicalize_name(requirement.name) == SELF:
                todo += sorted(requirement.extras)
            else:
                names.add(canonicalize_name(requirement.name))
    return names


def base_requirements() -> set[str]:
    return {
        canonicalize_name(Requirement(dep).name) for dep in pyproject()["project"]["dependencies"]
    }


def lab_extras() -> str:
    """Дополнения, которые ставит make lab (LAB_EXTRAS в Makefile)."""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    return re.search(r"^LAB_EXTRAS \?= (\S+)$", makefile, re.MULTILINE).group(1)


#: Только для разработки и преподавателя: учащемуся на своём компьютере не ставится.
NOT_FOR_LEARNERS = {
    "pytest",
    "pytest-xdist",
    "ruff",
    "nbval",
    "playwright",
    "nbgrader",
    "distributed",
    "dask",
}


def test_learner_install_has_no_test_tools_grading_or_dask():
    extras = lab_extras().split(",")
    assert "lab" in extras and "tiny" in extras
    for learner in (["lab"], extras, ["lab", "gpu"]):
        installed = base_requirements() | extra_requirements(*learner)
        assert not installed & NOT_FOR_LEARNERS, learner
    assert "jupyterlab" in extra_requirements("lab")


def test_dev_is_everything_plus_test_tools():
    dev = extra_requirements("dev")
    assert extra_requirements("lab", "grading", "cluster") <= dev
    assert {"pytest", "pytest-xdist", "ruff", "nbval", "playwright", "nbgrader"} <= dev
    assert extra_requirements("cluster") == {"distributed", "cryptography"}
    assert "distributed" not in extra_requirements("grading")


#: Имя модуля → пакет, где они не совпадают (после canonicalize_name).
DISTRIBUTIONS = {"yaml": "pyyaml", "google": "google-colab", "PIL": "pillow"}


def third_party_imports(source: str) -> set[str]:
    """Пакеты (имена дистрибутивов), которые импортирует код; вложенные import тоже."""
    lines = [line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))]
    modules = set()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
    modules -= set(sys.stdlib_module_names) | {"feedback", "__future__"}
    return {canonicalize_name(DISTRIBUTIONS.get(module, module)) for module in modules}


def grading_sources():
    """Код оценивания: feedback/teacher/, настройки nbgrader и ядро под присмотром."""
    yield from sorted((ROOT / "feedback" / "teacher").rglob("*.py"))
    yield ROOT / "nbgrader_config.py"
    guard = ROOT / "feedback" / "kernel_guard.py"  # его запускает песочница оценивания
    if guard.exists():
        yield guard


def test_everything_grading_imports_is_declared_in_grading():
    declared = extra_requirements("grading") | base_requirements()
    missing = {}
    for path in grading_sources():
        for name in third_party_imports(path.read_text(encoding="utf-8")):
            if name in {"distributed", "cryptography"}:  # make grade SCHEDULER=…: cluster
                assert name in extra_requirements("cluster")
            elif name == "jupyterhub":  # только серверы make hub (hub_spawner.py): дополнение hub
                assert name in extra_requirements("hub")
            elif name not in declared:
                missing.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert not missing, f"не названы в дополнении grading: {missing}"


#: Импортируются учащимся, но не названы в дополнениях сами: torch — только если уже стоит
#: (find_spec в 7.6), google.colab — только в Colab, kagglehub и requests приходят с keras-hub.
LEARNER_UNDECLARED = {"torch", "google-colab", "kagglehub", "requests"}


def learner_sources():
    """Код, который выполняется у учащегося: тетрадки решений и пакет без оценивания."""
    for path in sorted((ROOT / "solutions").glob("*/*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        code = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
        yield path, code
    grading = set(grading_sources())
    for path in sorted((ROOT / "feedback").rglob("*.py")):
        if path not in grading:
            yield path, path.read_text(encoding="utf-8")


def test_everything_the_labs_import_comes_with_make_lab():
    declared = base_requirements() | extra_requirements(*lab_extras().split(","))
    missing = {}
    for path, code in learner_sources():
        for name in third_party_imports(code) - declared - LEARNER_UNDECLARED:
            missing.setdefault(name, []).append(str(path.relative_to(ROOT)))
    assert not missing, f"make lab не ставит: {missing}"


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
    ("feedback.engine", ()),
    ("feedback.engine.calling", ()),
    ("feedback.engine.graded", ()),
    ("feedback.wall", ()),
    ("feedback.runtime", ()),
    ("feedback.qa_data", ()),
    ("feedback.gpu", ()),
    ("feedback.gpu.tiny_mode", ()),
    ("feedback.gpu.host", ()),
    ("feedback.gpu.kaggle_access", ("kagglehub", "requests")),
    ("feedback.gpu.xla_memory", ()),
    ("feedback.quiet", ("sentencepiece",)),
    ("feedback.accumulation", ()),
    ("feedback.precision", ()),
    ("feedback.precision_loading", ()),
    ("feedback.monitor", ()),
    ("feedback.generation", ("matplotlib",)),
    ("feedback.workspace", ("IPython", "numpy", "pandas", "matplotlib")),
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

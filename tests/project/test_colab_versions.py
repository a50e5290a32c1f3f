"""Лабораторные на CPU с версиями библиотек, как в Google Colab.

Colab до сих пор ставит IPython 7.34 и ipywidgets 7.7, а наше окружение .venv — самые
свежие версии. Тест один раз собирает отдельное окружение ``.course-work/colab-venv``
(заново — только при изменении pyproject.toml или списка версий ниже), ставит в него пакет
курса без зависимостей (``uv pip install --no-deps -e``) и в нём:

* проверяет версии и в интерпретаторе, и в ядре Jupyter;
* выполняет решения лабораторных 7.2 и 7.4 через nbval в строгом режиме
  (``FEEDBACK_STRICT=1``), как ``make nbval``;
* выполняет тетрадки учащихся «как есть»: у каждой проверки русский вердикт, без трассировок;
* двигает ползунок ipywidgets 7 и смотрит, что число FLOPs пересчиталось;
* показывает план установки ``course7-feedback[gpu]`` поверх набора пакетов Colab с GPU
  (``tests/data/colab_gpu_packages.txt``): что первая ячейка GPU-лабораторной поменяет.

Части, которые выполняются внутри Colab-окружения, — функции ``probe_*`` этого же файла:
файл запускается там как скрипт (``python tests/project/test_colab_versions.py versions``).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENV = ROOT / ".course-work" / "colab-venv"
CPU_LABS = ["lab_7_2_training_flops", "lab_7_4_gpu_memory"]

#: Версии Google Colab (IPython 7.34, ipywidgets 7.7, ipykernel 6.17 и библиотеки данных).
COLAB_PINS = (
    "ipython==7.34.0",
    "ipywidgets==7.7.1",
    "ipykernel==6.17.1",
    "numpy==2.0.2",
    "pandas==2.2.2",
    "matplotlib==3.10.0",
)
#: Чем выполняем тетрадки; на код курса эти версии не влияют.
TOOLS = ("pytest>=8", "nbval==0.11.0", "nbformat>=5.9", "nbclient>=0.10")
EXPECTED = {"IPython": "7.34.", "ipywidgets": "7.7."}

COLAB_GPU_PACKAGES = ROOT / "tests" / "data" / "colab_gpu_packages.txt"
COLAB_GPU_METADATA = ROOT / "tests" / "data" / "colab_gpu_metadata.json"
#: Что ``pip install course7-feedback[gpu]`` меняет в Colab, и куда: так и написано в README.
#: keras-hub 0.32 — версия, на которой курс проверен (дополнение tiny, CI); ей нужны
#: keras>=3.15 и ровно kagglesdk 0.1.28. TensorFlow и tensorflow-text остаются как есть.
GPU_CHANGES_IN_COLAB = {"keras": "up", "keras-hub": "up", "kagglesdk": "down"}

pytestmark = pytest.mark.slow
#: Тесты окружения Colab (фикстура colab_python) — в одном процессе xdist: окружение
#: собирается один раз; остальные тесты модуля идут в любой процесс.
IN_COLAB_VENV = pytest.mark.xdist_group("colab_venv")


# --- окружение ---------------------------------------------------------------------------


def venv_key() -> str:
    """Ключ кэша: pyproject.toml, версии, путь к репозиторию и Python, из которого строим."""
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes())
    for part in (*COLAB_PINS, *TOOLS, str(ROOT), sys.version):
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()


def clean_env(**extra: str) -> dict[str, str]:
    """Окружение подпроцесса без следов .venv и без строгого режима, если его не просили."""
    # PYTHONDONTWRITEBYTECODE (так на машинах CI) убран: без байт-кода каждый процесс заново
    # компилировал бы numpy, pandas и IPython окружения — втрое дольше каждый импорт.
    drop = {
        "VIRTUAL_ENV",
        "PYTHONPATH",
        "PYTHONHOME",
        "FEEDBACK_STRICT",
        "MPLBACKEND",
        "PYTHONDONTWRITEBYTECODE",
    }
    env = {key: value for key, value in os.environ.items() if key not in drop}
    env.update(MPLBACKEND="Agg", PYDEVD_DISABLE_FILE_VALIDATION="1", PIP_NO_INPUT="1")
    env.update(extra)
    return env


def run(command: list[str], timeout: int, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        command,
        cwd=ROOT,
        env=clean_env(**extra),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def build_colab_venv() -> Path:
    """Собирает окружение, если его нет или ключ устарел; возвращает путь к его python."""
    python = VENV / "bin" / "python"
    stamp = VENV / ".course7-key"
    key = venv_key()
    if python.exists() and stamp.exists() and stamp.read_text() == key:
        return python
    shutil.rmtree(VENV, ignore_errors=True)
    VENV.parent.mkdir(parents=True, exist_ok=True)
    # Ставит uv из дополнения dev (как make env): в разы быстрее pip. Байт-код появится при
    # первом импорте и только для нужных модулей (clean_env не запрещает его писать). Сам pip
    # в окружении остаётся тем, что положил venv, — им тесты ниже строят план установки, как
    # первая ячейка в Colab. --no-config: настройки uv из pyproject.toml курса (например,
    # override-dependencies) не должны менять окружение, которое повторяет Colab.
    install = [
        *(sys.executable, "-m", "uv", "pip", "install", "-q", "--no-config"),
        *("--python", str(python)),
    ]
    steps = [
        [sys.executable, "-m", "venv", str(VENV)],
        [*install, *COLAB_PINS, *TOOLS],
        [*install, "--no-deps", "-e", str(ROOT)],
    ]
    for step in steps:
        done = run(step, timeout=900)
        if done.returncode != 0:
            shutil.rmtree(VENV, ignore_errors=True)
            pytest.fail(
                f"не собралось Colab-окружение: {' '.join(step)}\n"
                f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
            )
    stamp.write_text(key)
    return python


@pytest.fixture(scope="module")
def colab_python() -> Path:
    start = time.monotonic()
    python = build_colab_venv()
    print(f"Colab-окружение готово за {time.monotonic() - start:.1f} с: {VENV}")
    return python


def probe(python: Path, name: str, timeout: int = 600) -> dict:
    """Запускает ``probe_<name>`` этого файла внутри Colab-окружения и читает его JSON."""
    done = run([str(python), str(Path(__file__)), name], timeout=timeout)
    assert done.returncode == 0, f"{name}:\n{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- тесты ------------------------------------------------------------------------------


@IN_COLAB_VENV
def test_base_install_changes_nothing_colab_ships(colab_python):
    """Первая ячейка ставит пакет с зависимостями: в Colab он не должен ничего менять."""
    done = run(
        [
            str(colab_python),
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--report",
            "-",
            "--disable-pip-version-check",
            str(ROOT),
        ],
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    would_install = sorted(item["metadata"]["name"] for item in report["install"])
    assert would_install == ["course7-feedback"]


def _colab_gpu_pins() -> list[str]:
    lines = COLAB_GPU_PACKAGES.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def _normalise(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def probe_gpu_metadata() -> list[dict]:
    """Метаданные пакетов Colab из ``colab_gpu_packages.txt``: имя, версия, зависимости.

    Берутся из отчёта ``pip install --dry-run --report`` (колёса не скачиваются) и лежат в
    ``tests/data/colab_gpu_metadata.json``: обновить после правки списка пакетов —
    ``python tests/project/test_colab_versions.py gpu_metadata tests/data/colab_gpu_metadata.json``.
    """
    done = run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--no-deps",
            "--quiet",
            "--disable-pip-version-check",
            "--report",
            "-",
            *_colab_gpu_pins(),
        ],
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    keep = ("name", "version", "requires_python", "requires_dist", "provides_extra")
    found = [
        {key: item["metadata"][key] for key in keep if item["metadata"].get(key)}
        for item in json.loads(done.stdout)["install"]
    ]
    return sorted(found, key=lambda meta: _normalise(meta["name"]))


def colab_gpu_metadata() -> list[dict]:
    return json.loads(COLAB_GPU_METADATA.read_text(encoding="utf-8"))


def test_colab_metadata_is_that_of_the_package_list():
    """Снимок метаданных обновлён вместе со списком пакетов Colab (те же имена и версии)."""
    pins = {_normalise(pin.split("==")[0]): pin.split("==")[1] for pin in _colab_gpu_pins()}
    shot = {_normalise(meta["name"]): meta["version"] for meta in colab_gpu_metadata()}
    assert shot == pins


def fake_colab_gpu_env(where: Path) -> Path:
    """Окружение, где «установлены» пакеты Colab: только их метаданные (.dist-info).

    Метаданные (зависимости каждой версии) — из снимка :func:`probe_gpu_metadata`. pip
    считает такие пакеты установленными и строит план установки так же, как в настоящем
    Colab.
    """
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where)], check=True)
    site = next(where.glob("lib/python3*/site-packages"))
    for meta in colab_gpu_metadata():
        info = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
        info.mkdir()
        lines = ["Metadata-Version: 2.1", f"Name: {meta['name']}", f"Version: {meta['version']}"]
        if meta.get("requires_python"):
            lines.append(f"Requires-Python: {meta['requires_python']}")
        lines += [f"Requires-Dist: {req}" for req in meta.get("requires_dist", [])]
        lines += [f"Provides-Extra: {extra}" for extra in meta.get("provides_extra", [])]
        (info / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (info / "INSTALLER").write_text("pip\n", encoding="utf-8")
        (info / "RECORD").write_text("", encoding="utf-8")
    return where / "bin" / "python"


def test_gpu_install_in_colab_changes_only_what_readme_says(tmp_path):
    """План первой ячейки GPU-лабораторной в Colab: меняются ровно пакеты из README.

    Набор Colab обновляется так: свежий pip-freeze.gpu.txt как ограничения (-c) и
    ``pip install --dry-run --ignore-installed --report`` для пакетов Colab из дерева
    ``course7-feedback[gpu]`` — его список ``install`` и есть новый файл данных.
    """
    colab = fake_colab_gpu_env(tmp_path / "colab-gpu")
    installed = {_normalise(pin.split("==")[0]): pin.split("==")[1] for pin in _colab_gpu_pins()}
    done = run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(colab),
            "install",
            "--dry-run",
            "--quiet",
            "--disable-pip-version-check",
            "--report",
            "-",
            f"{ROOT}[gpu]",
        ],
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    plan = {
        _normalise(item["metadata"]["name"]): item["metadata"]["version"]
        for item in json.loads(done.stdout)["install"]
    }
    assert plan.pop("course7-feedback")
    from packaging.version import Version

    changes = {}
    for name, version in plan.items():
        assert name in installed, f"{name} {version}: в Colab такого пакета нет"
        changes[name] = "up" if Version(version) > Version(installed[name]) else "down"
    assert changes == GPU_CHANGES_IN_COLAB, {n: (installed[n], plan[n]) for n in plan}
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in readme for name in changes), "README должен назвать эти пакеты"


@IN_COLAB_VENV
def test_versions_are_those_of_colab(colab_python):
    found = probe(colab_python, "versions")
    for where in ("interpreter", "kernel"):
        for package, prefix in EXPECTED.items():
            assert found[where][package].startswith(prefix), (where, found)
    assert found["kernel"]["prefix"] == found["interpreter"]["prefix"], found
    assert found["kernel"]["feedback"].startswith(str(ROOT)), found


@IN_COLAB_VENV
def test_solutions_pass_in_strict_mode(colab_python):
    notebooks = [f"solutions/{lab}/{lab}.ipynb" for lab in CPU_LABS]
    nbval = ["-p", "no:cacheprovider", "-q", "--nbval-lax", "--nbval-current-env"]
    done = run(
        [str(colab_python), "-m", "pytest", *nbval, *notebooks],
        timeout=600,
        FEEDBACK_STRICT="1",
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert " passed" in done.stdout and "failed" not in done.stdout, done.stdout[-3000:]


@IN_COLAB_VENV
def test_student_notebooks_show_russian_verdicts(colab_python):
    found = probe(colab_python, "students")
    for lab in CPU_LABS:
        report = found[lab]
        assert report["errors"] == [], report
        assert report["checks"] > 0, report
        assert report["bad_checks"] == [], report
        assert not report["traceback"], report


@IN_COLAB_VENV
def test_flops_sliders_update_with_ipywidgets_7(colab_python):
    found = probe(colab_python, "sliders")
    assert found["ipywidgets"].startswith(EXPECTED["ipywidgets"]), found
    assert "6·10²¹ FLOPs" in found["before"], found
    assert "6·10²² FLOPs" in found["after"], found


# --- выполняется внутри Colab-окружения --------------------------------------------------


def _versions_here() -> dict[str, str]:
    import IPython
    import ipywidgets

    import feedback

    return {
        "IPython": IPython.__version__,
        "ipywidgets": ipywidgets.__version__,
        "prefix": sys.prefix,
        "feedback": str(Path(feedback.__file__).resolve()),
    }


def probe_versions() -> dict:
    """Версии в самом интерпретаторе и в ядре, которое запускает nbclient."""
    import nbformat
    from nbclient import NotebookClient

    cell = (
        "import json, sys, IPython, ipywidgets, feedback, pathlib\n"
        "print(json.dumps({'IPython': IPython.__version__, "
        "'ipywidgets': ipywidgets.__version__, 'prefix': sys.prefix, "
        "'feedback': str(pathlib.Path(feedback.__file__).resolve())}))"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    NotebookClient(nb, timeout=120, kernel_name="python3").execute()
    kernel = json.loads(nb.cells[0].outputs[0].text)
    return {"interpreter": _versions_here(), "kernel": kernel}


def probe_students() -> dict:
    """Тетрадки учащихся «как есть», как в tests/project/test_student_notebooks.py."""
    from notebook_runner import graded_cells, outputs_text, run_notebook

    not_done = ("ещё не реализована", "осталось «…»")
    report = {}
    for lab in CPU_LABS:
        nb = run_notebook(ROOT / "notebooks" / lab / f"{lab}.ipynb")
        checks = graded_cells(nb)
        bad = [
            cell.source
            for cell in checks
            if "data-passed='false'" not in outputs_text(cell)
            or not any(phrase in outputs_text(cell) for phrase in not_done)
        ]
        report[lab] = {
            "errors": [
                outputs_text(cell)
                for cell in nb.cells
                if any(out.output_type == "error" for out in cell.get("outputs", []))
            ],
            "checks": len(checks),
            "bad_checks": bad,
            "traceback": any("Traceback" in outputs_text(cell) for cell in nb.cells),
        }
    return report


def probe_sliders() -> dict:
    """Ползунки ipywidgets 7: шаг log_param_count 9 → 10 умножает FLOPs на 10."""
    import ipywidgets

    from feedback import explore

    box = explore.flops_sliders(lambda param_count, num_tokens: 6 * param_count * num_tokens)
    params, _, summary = box.children
    before = summary.value
    params.value = params.value + 1
    return {"ipywidgets": ipywidgets.__version__, "before": before, "after": summary.value}


if __name__ == "__main__":
    os.environ.setdefault("MPLBACKEND", "Agg")
    # Как скрипт (в окружении Colab) помощники тестов не на пути: pytest кладёт их туда сам.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "support"))
    found = globals()[f"probe_{sys.argv[1]}"]()
    if len(sys.argv) > 2:  # в файл данных: по строке на поле, чтобы правки читались в diff
        Path(sys.argv[2]).write_text(json.dumps(found, ensure_ascii=False, indent=1) + "\n")
    else:
        print(json.dumps(found, ensure_ascii=False))

"""Установка не молчит (issue 42, п. 7): что ставится, сколько весит и что это надолго."""

from __future__ import annotations

import json
import re
import subprocess
import tomllib

from notebook_runner import ROOT


def _install_cell(lab_dir) -> str:
    notebook = next((ROOT / "notebooks" / lab_dir.name).glob("*.ipynb"))
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    return "".join(next(c for c in cells if c["metadata"].get("course7") == "install")["source"])


def _pins(extra: str) -> dict[str, str]:
    with open(ROOT / "pyproject.toml", "rb") as fh:
        listed = tomllib.load(fh)["project"]["optional-dependencies"][extra]
    return dict(re.findall(r"^([\w-]+)==([\d.]+)$", "\n".join(listed), flags=re.M))


def test_every_install_cell_says_what_it_installs_and_when_it_is_done():
    for lab_dir in sorted((ROOT / "solutions").iterdir()):
        cell = _install_cell(lab_dir)
        before_pip = cell.split("subprocess.run")[0]
        assert 'print("Ставлю из GitHub пакет курса с проверками.")' in before_pip, lab_dir.name
        assert "Дождитесь конца ячейки" in before_pip
        assert 'print("Готово: пакет курса установлен.")' in cell


def test_gpu_install_cell_names_the_pinned_versions():
    version = _pins("gpu")["keras-hub"]
    for lab_dir in sorted((ROOT / "solutions").iterdir()):
        cell = _install_cell(lab_dir)
        if "[gpu]" in cell:
            assert f"keras-hub {version.rsplit('.', 1)[0]}" in cell, lab_dir.name
        else:
            assert "keras-hub" not in cell, lab_dir.name


def test_make_lab_announces_what_it_installs_before_installing(tmp_path):
    """make -n lab на свежей копии: объявление идёт раньше установки, с размером и временем."""
    venv = tmp_path / "venv"
    dry = subprocess.run(
        ["make", "-n", "lab", f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.replace("\\\n", "")
    notice = dry.index("Ставлю окружение курса")
    assert notice < dry.index("uv pip install")
    line = dry[notice : dry.index("\n", notice)]
    assert "ГиБ" in line and "минут" in line
    # Объявление печатается на деле, а при готовом окружении — нет.
    shown = subprocess.run(
        ["make", "-s", "lab-notice", f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert shown.startswith("Ставлю окружение курса") and "около 3,3 ГиБ" in shown
    venv.mkdir()
    (venv / ".installed-lab-tiny").touch()
    quiet = subprocess.run(
        ["make", "-s", "lab-notice", f"VENV={venv}"], cwd=ROOT, capture_output=True, text=True
    ).stdout
    assert quiet == ""

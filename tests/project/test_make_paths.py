"""Пути и имена из командной строки make доходят до программы одним аргументом, как есть.

Настоящий ``make`` с подменённым окружением: ``VENV`` — временная папка, где ``bin/python``
только записывает свои аргументы. Имена — как у преподавателя: второе скачивание браузера
«7.2 (1).zip», пробелы, кавычки, кириллица, имя с «-» в начале.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

NASTY = [
    "~/Загрузки/7.2 (1).zip",
    "папка с пробелами/students list.csv",
    'it\'s "quoted" & `echo no`; #x.csv',
    "-starts-with-dash.zip",
]


@pytest.fixture
def fake_venv(tmp_path: Path) -> tuple[Path, Path]:
    """Окружение, чей python пишет свои аргументы строкой JSON в calls.jsonl."""
    venv, calls = tmp_path / "venv", tmp_path / "calls.jsonl"
    (venv / "bin").mkdir(parents=True)
    python = venv / "bin" / "python"
    python.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"with open({str(calls)!r}, 'a', encoding='utf-8') as out:\n"
        "    out.write(json.dumps(sys.argv[1:], ensure_ascii=False) + '\\n')\n",
        encoding="utf-8",
    )
    python.chmod(0o755)
    # Отметка установки свежее pyproject.toml: make не ставит окружение заново.
    for extras in ("dev-tiny", "lab-tiny"):
        (venv / f".installed-{extras}").touch()
    return venv, calls


def _make(venv: Path, calls: Path, target: str, **variables: str) -> list[list[str]]:
    calls.unlink(missing_ok=True)
    # -o sandbox: настоящий рецепт песочницы (apt-get install bubblewrap) тест не запускает.
    command = ["make", "-o", "sandbox", "--no-print-directory", "-s", target, f"VENV={venv}"]
    command += [f"{name}={value}" for name, value in variables.items()]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in calls.read_text(encoding="utf-8").splitlines()]


@pytest.mark.skipif(shutil.which("make") is None, reason="нет make")
@pytest.mark.parametrize("name", NASTY)
def test_every_path_variable_reaches_the_program_as_one_argument(fake_venv, name):
    venv, calls = fake_venv
    grade = _make(venv, calls, "grade", SUBMISSIONS=name, ROSTER=name, JOBS="2")
    assert grade == [
        ["-m", "feedback.teacher.commands.grade", "--jobs=2", f"--roster={name}", "--", name]
    ]
    export = _make(venv, calls, "export", WORKSHEET=name, LAB=name)
    assert export[0] == [
        "-m",
        "feedback.teacher.commands.export",
        f"--worksheet={name}",
        f"--lab={name}",
    ]
    assert _make(venv, calls, "public", DEST=name) == [
        ["-m", "feedback.teacher.commands.public", "--", name]
    ]
    assert _make(venv, calls, "hub-release", LAB=name) == [
        ["-m", "feedback.teacher.commands.hub", "release", "--", name]
    ]


@pytest.mark.skipif(shutil.which("make") is None, reason="нет make")
def test_without_variables_the_program_gets_no_empty_arguments(fake_venv):
    venv, calls = fake_venv
    assert _make(venv, calls, "grade") == [["-m", "feedback.teacher.commands.grade"]]
    assert _make(venv, calls, "public") == [["-m", "feedback.teacher.commands.public"]]

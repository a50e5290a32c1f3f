"""Node.js для ``make hub``: одна нижняя граница — engines.node в hub/package.json.

Её принимают все пакеты hub/package-lock.json (``npm ci --engine-strict`` на этом Node
пройдёт), её называет docs/teaching.md, а ``make hub`` со старым Node говорит, какой нужен,
до npm (:mod:`feedback.teacher.hub.node_version`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from feedback.teacher.hub import node_version

from notebook_runner import ROOT

PACKAGE = ROOT / "hub" / "package.json"
LOCK = ROOT / "hub" / "package-lock.json"


def _admits(spec: str, version: tuple[int, int, int]) -> bool:
    """Допускает ли диапазон npm ``spec`` версию ``version`` (виды из lock-файла: «>=N»,
    «>= N.N.N», «^N», «*», «A || B»)."""
    for part in spec.split("||"):
        part = part.strip()
        if part in ("*", ""):
            return True
        match = re.fullmatch(r"(>=|\^)?\s*v?(\d+)(?:\.(\d+))?(?:\.(\d+))?", part)
        assert match, f"незнакомый диапазон {spec!r}"
        low = tuple(int(x or 0) for x in match.groups()[1:])
        if match[1] == "^" and version[0] == low[0] and version >= low:
            return True
        if match[1] == ">=" and version >= low:
            return True
        if match[1] is None and version == low:
            return True
    return False


def test_every_locked_package_runs_on_the_node_the_hub_asks_for():
    need = node_version.required(PACKAGE)
    packages = json.loads(LOCK.read_text(encoding="utf-8"))["packages"]
    refusing = {
        name: info["engines"]["node"]
        for name, info in packages.items()
        if name and "node" in info.get("engines", {}) and not _admits(info["engines"]["node"], need)
    }
    assert refusing == {}
    assert packages[""]["engines"]["node"] == json.loads(PACKAGE.read_text())["engines"]["node"]


def test_the_guide_names_the_same_node():
    guide = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    named = {int(major) for major in re.findall(r"Node\.js (\d+)", guide)}
    assert named == {node_version.required(PACKAGE)[0]}


@pytest.fixture
def fake_node(tmp_path, monkeypatch):
    """``node`` в PATH, который называет заданную версию."""

    def install(version: str | None) -> None:
        bin_dir = tmp_path / "bin"
        bin_dir.mkdir(exist_ok=True)
        node = bin_dir / "node"
        node.unlink(missing_ok=True)
        if version is not None:
            node.write_text(f"#!/bin/sh\necho {version}\n")
            node.chmod(0o755)
        monkeypatch.setenv("PATH", str(bin_dir))

    return install


def test_an_old_or_missing_node_is_named_before_npm(fake_node):
    fake_node("v18.19.0")
    said = node_version.problem(PACKAGE)
    assert said is not None and "Node.js 18.19.0 старше нужного" in said
    assert "поставьте Node.js 20.0.0 или новее" in said
    fake_node("v20.20.2")
    assert node_version.problem(PACKAGE) is None
    fake_node(None)
    assert "не найден Node.js" in (node_version.problem(PACKAGE) or "")


def test_make_checks_node_before_npm_and_the_check_needs_only_the_standard_library(fake_node):
    dry = subprocess.run(
        ["make", "--no-print-directory", "-n", "-B", "hub-proxy"],
        cwd=ROOT, capture_output=True, text=True, check=True,
    )  # fmt: skip
    lines = dry.stdout.splitlines()
    check = next(i for i, line in enumerate(lines) if "node_version.py hub/package.json" in line)
    assert check < next(i for i, line in enumerate(lines) if line.startswith("npm ci"))
    # Файлом, без окружения курса (-I: без site-packages и переменных PYTHON*).
    fake_node("v18.19.0")
    done = subprocess.run(
        [sys.executable, "-I", str(ROOT / "feedback/teacher/hub/node_version.py"), str(PACKAGE)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 1 and "старше нужного" in done.stderr

"""``make formgrader``: JupyterLab из .venv в папке курса, браузер — сразу на formgrader.

Быстрые тесты проверяют команду по частям: какой ``jupyter``, где корень, какое расширение,
какая первая страница, где токен, что напечатано. Медленный запускает её по-настоящему над
рабочей папкой, где зарегистрированы лабораторные, и смотрит в Chromium, что меню Nbgrader
предлагает один formgrader.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from feedback.teacher.commands import formgrader as command
from feedback.teacher.core.labs import course_labs
from feedback.teacher.hub import formgrader

from browser_support import ROOT, chromium_or_skip, course_formgrader, server_page


def _option(parts: list[str], name: str) -> str:
    (value,) = [part.split("=", 1)[1] for part in parts if part.startswith(f"--{name}=")]
    return value


def test_the_command_is_jupyterlab_of_the_course_environment_in_the_course_folder():
    parts = formgrader.command(ROOT, 8890, open_browser=False)
    jupyter = Path(parts[0])
    assert jupyter.parent == Path(sys.executable).parent  # .venv/bin, а не PATH
    assert os.access(jupyter, os.X_OK) and parts[1] == "lab"
    root = Path(_option(parts, "ServerApp.root_dir"))
    assert root == ROOT and (root / "nbgrader_config.py").is_file()
    assert _option(parts, "ServerApp.jpserver_extensions") == (
        "nbgrader.server_extensions.formgrader=True"
    )
    assert _option(parts, "LabApp.default_url") == "/formgrader"
    assert (_option(parts, "ServerApp.ip"), _option(parts, "ServerApp.port")) == (
        "127.0.0.1",
        "8890",
    )
    assert _option(parts, "ServerApp.port_retries") == "0"  # напечатанный адрес — верный
    assert "--no-browser" in parts and "--no-browser" not in formgrader.command(ROOT, 8890)
    assert not any("token" in part.lower() for part in parts)  # токен не виден в ps


def test_the_environment_carries_the_token_and_the_course_scripts():
    env = formgrader.environment("secret", {"PATH": "/usr/bin"})
    assert env["JUPYTER_TOKEN"] == "secret"
    first, rest = env["PATH"].split(os.pathsep, 1)
    assert Path(first) == Path(sys.executable).parent and rest == "/usr/bin"
    assert (Path(first) / "alembic").is_file()  # nbgrader зовёт alembic из PATH


def test_main_prints_the_address_and_starts_that_very_server(monkeypatch, capsys):
    started = {}

    def execve(path, args, env):
        started.update(path=path, args=args, env=env)

    monkeypatch.setattr(command.os, "execve", execve)
    monkeypatch.setattr(command.os, "chdir", lambda path: started.update(chdir=Path(path)))
    command.main(["--port", "8891", "--no-browser"])
    out = capsys.readouterr().out
    token = started["env"]["JUPYTER_TOKEN"]
    assert len(token) >= 32
    assert f"formgrader: http://127.0.0.1:8891/formgrader?token={token}\n" in out
    assert started["args"] == formgrader.command(ROOT, 8891, open_browser=False)
    assert started["path"] == started["args"][0] and started["chdir"] == ROOT


def test_a_busy_port_is_skipped():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        port = busy.getsockname()[1]
        assert formgrader.free_port(range(port, port + 1)) != port


def test_make_formgrader_runs_the_module():
    dry = subprocess.run(
        ["make", "--no-print-directory", "-n", "formgrader"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert (
        dry.stdout.strip()
        .splitlines()[-1]
        .endswith("python -m feedback.teacher.commands.formgrader")
    )


# --------------------------------------------------------------------------- по-настоящему


def _get(server, path: str) -> tuple[int, str, str]:
    """GET без переадресации: код, адрес переадресации и текст."""

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args, **kwargs):
            return None

    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(
        f"{server.url}{path}", headers={"Authorization": f"token {server.token}"}
    )
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, "", response.read().decode("utf-8")
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Location", ""), error.read().decode("utf-8")


@pytest.mark.browser
def test_make_formgrader_serves_the_course_labs_and_one_formgrader_menu_item(tmp_path, fresh_work):
    work = fresh_work(tmp_path / "work")
    labs = {lab.id for lab in course_labs(ROOT)}
    with course_formgrader(tmp_path / "server", work) as server:
        assert server.printed.startswith(f"{server.url}/formgrader?token=")
        status, location, _ = _get(server, "/")
        assert status == 302 and location.startswith("/formgrader")
        status, _, body = _get(server, "/formgrader/api/assignments")
        assert status == 200, server.log_tail()
        assert {item["name"] for item in json.loads(body)} == labs

        chromium = chromium_or_skip("меню Nbgrader в JupyterLab make formgrader")
        from playwright.sync_api import expect

        with server_page(server, chromium, timeout_ms=60_000) as page:
            page.goto(server.printed, wait_until="load")  # адрес, который напечатан
            for lab in sorted(labs):
                expect(page.locator("#main-table")).to_contain_text(lab)
            page.goto(f"{server.url}/lab?token={server.token}", wait_until="domcontentloaded")
            menu = page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader")
            menu.click()
            items = page.locator(".lm-Menu-item:not(.lm-mod-hidden) .lm-Menu-itemLabel")
            items.first.wait_for()
            labels = [label.strip() for label in items.all_inner_texts()]
            assert "Formgrader" in labels and "Formgrader (local)" not in labels
            page.locator(".lm-Menu-item", has_text="Formgrader").first.click()
            frame = page.frame_locator("iframe").first
            expect(frame.locator("#main-table")).to_contain_text("lab_7_2_training_flops")

"""Помощники браузерного теста: JupyterLab без окна и Chromium из Debian под Playwright.

JupyterLab запускается так же, как в ``make lab`` (``.venv/bin/jupyter lab``), но на
свободном порту 127.0.0.1, с токеном и без браузера, в своих временных папках настроек.
Так же запускается и ``jupyter server`` с formgrader для
tests/teacher/hub/test_formgrader_browser.py, а
:func:`course_formgrader` запускает саму команду ``make formgrader``.
Браузер — системный Chromium (``apt-get install chromium``): Playwright только управляет
им и ничего не скачивает.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from feedback.settings import CHROMIUM, REQUIRE_BROWSER

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOTS = ROOT / ".course-work" / "screenshots"

#: Флаги, без которых Chromium в закрытой сети стучится наружу и тормозит.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


def find_chromium() -> str | None:
    """Путь к Chromium: ``COURSE7_CHROMIUM``, затем /usr/bin/chromium и ``PATH``."""
    candidates = [CHROMIUM.read(), "/usr/bin/chromium"]
    candidates += [shutil.which(name) for name in ("chromium", "chromium-browser")]
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _server_env(**settings: str) -> dict[str, str]:
    """Окружение сервера Jupyter: окружение тестов без строгого режима проверок и их бэкенда
    matplotlib, со своими папками настроек ``settings``."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"FEEDBACK_STRICT", "MPLBACKEND", "JUPYTER_CONFIG_DIR"}
    }
    return {**env, **settings}


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


@dataclass
class LabServer:
    """Запущенный JupyterLab: адрес, токен и журнал сервера."""

    url: str
    token: str
    log: Path
    #: адрес, который напечатала команда запуска (make formgrader)
    printed: str = ""

    def notebook_url(self, relative: str, workspace: str) -> str:
        """Адрес тетрадки в своём рабочем пространстве JupyterLab (без чужих вкладок)."""
        return f"{self.url}/lab/workspaces/{workspace}/tree/{relative}?reset&token={self.token}"

    def log_tail(self, chars: int = 4000) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")[-chars:]


@contextmanager
def jupyter_lab(root_dir: Path, work_dir: Path, timeout: float = 60) -> Iterator[LabServer]:
    """Запускает ``jupyter lab`` из окружения тестов и останавливает его по выходе."""
    jupyter = Path(sys.executable).with_name("jupyter")
    port, token = _free_port(), os.urandom(16).hex()
    config_dir, settings_dir = work_dir / "config", work_dir / "settings"
    # Чистые настройки: без всплывающих новостей, все ячейки в DOM (без «ленивой» отрисовки).
    _write_json(
        config_dir / "labconfig" / "page_config.json",
        {"disabledExtensions": {"@jupyterlab/apputils-extension:announcements": True}},
    )
    _write_json(
        settings_dir / "@jupyterlab" / "notebook-extension" / "tracker.jupyterlab-settings",
        {"windowingMode": "none"},
    )
    env = _server_env(
        JUPYTER_CONFIG_DIR=str(config_dir),
        JUPYTER_RUNTIME_DIR=str(work_dir / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(settings_dir),
        JUPYTERLAB_WORKSPACES_DIR=str(work_dir / "workspaces"),
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    log = work_dir / "jupyter-lab.log"
    command = [
        str(jupyter),
        "lab",
        "--no-browser",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--port-retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
    ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        command.append("--allow-root")  # CI и машины разработчиков работают от root
    with _serve(command, root_dir, env, log, f"http://127.0.0.1:{port}", token, timeout) as server:
        yield server


@contextmanager
def formgrader_server(
    root_dir: Path, work_dir: Path, grading_dir: Path, timeout: float = 60
) -> Iterator[LabServer]:
    """Запускает ``jupyter server`` с formgrader nbgrader, как его видит преподаватель.

    Корень сервера — курс (там nbgrader_config.py), ``COURSE7_GRADING_DIR`` — папка
    оценивания с базой и autograded/. Настройки и runtime — во временной ``work_dir``.
    """
    jupyter = Path(sys.executable).with_name("jupyter")
    port, token = _free_port(), os.urandom(16).hex()
    env = _server_env(
        COURSE7_GRADING_DIR=str(grading_dir),
        JUPYTER_CONFIG_DIR=str(work_dir / "config"),
        JUPYTER_RUNTIME_DIR=str(work_dir / "runtime"),
        # nbgrader зовёт alembic из PATH: папка скриптов окружения тестов — первой.
        PATH=os.pathsep.join([str(jupyter.parent), os.environ.get("PATH", "")]),
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    log = work_dir / "jupyter-server.log"
    command = [
        str(jupyter),
        "server",
        "--no-browser",
        "--allow-root",
        "--ip=127.0.0.1",
        f"--port={port}",
        "--port-retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        "--ServerApp.jpserver_extensions=nbgrader.server_extensions.formgrader=True",
    ]
    work_dir.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{port}"
    with _serve(command, root_dir, env, log, url, token, timeout, "jupyter server") as server:
        yield server


@contextmanager
def course_formgrader(
    work_dir: Path, grading_dir: Path, timeout: float = 60
) -> Iterator[LabServer]:
    """Запускает ``make formgrader`` (``-m feedback.teacher.commands.formgrader``) без браузера.

    Адрес с токеном берётся из того, что команда печатает преподавателю. Настройки JupyterLab
    и runtime — во временной ``work_dir``, ``COURSE7_GRADING_DIR`` — папка оценивания.
    """
    port = _free_port()
    env = _server_env(
        COURSE7_GRADING_DIR=str(grading_dir),
        JUPYTER_CONFIG_DIR=str(work_dir / "config"),
        JUPYTER_RUNTIME_DIR=str(work_dir / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(work_dir / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(work_dir / "workspaces"),
        PYDEVD_DISABLE_FILE_VALIDATION="1",
    )
    command = [
        sys.executable,
        "-m",
        "feedback.teacher.commands.formgrader",
        "--no-browser",
        f"--port={port}",
    ]
    work_dir.mkdir(parents=True, exist_ok=True)
    log = work_dir / "formgrader.log"
    with log.open("w", encoding="utf-8") as log_file:
        process = subprocess.Popen(
            command,
            cwd=work_dir,  # команда сама переходит в папку курса
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        printed = _printed_url(log, process, timeout)
        token = re.search(r"token=(\w+)", printed)[1]
        server = LabServer(f"http://127.0.0.1:{port}", token, log, printed)
        _wait_until_ready(server, process, timeout, "make formgrader")
        yield server
    finally:
        _stop(process)


def _printed_url(log: Path, process: subprocess.Popen, timeout: float) -> str:
    """Первый адрес, который напечатала команда (``formgrader: http://…``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(r"^formgrader: (http\S+)$", log.read_text(encoding="utf-8"), re.M)
        if found:
            return found[1]
        if process.poll() is not None:
            break
        time.sleep(0.2)
    raise RuntimeError(f"make formgrader не напечатал адрес:\n{log.read_text(encoding='utf-8')}")


@contextmanager
def _serve(
    command: list[str],
    root_dir: Path,
    env: dict[str, str],
    log: Path,
    url: str,
    token: str,
    timeout: float,
    name: str = "jupyter lab",
) -> Iterator[LabServer]:
    """Запускает сервер Jupyter с журналом в ``log``, ждёт готовности и всегда останавливает."""
    with log.open("w", encoding="utf-8") as log_file:
        process = subprocess.Popen(
            command,
            cwd=root_dir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    server = LabServer(url, token, log)
    try:
        _wait_until_ready(server, process, timeout, name)
        yield server
    finally:
        _stop(process)


def chromium_or_skip(what: str) -> str:
    """Путь к Chromium для браузерного теста ``what``.

    Без Chromium тест пропускается с причиной, а при ``COURSE7_REQUIRE_BROWSER=1`` падает;
    без пакета playwright (extra dev) падает всегда.
    """
    chromium = find_chromium()
    if chromium is None and REQUIRE_BROWSER.read() is True:
        pytest.fail(f"Chromium не найден, а COURSE7_REQUIRE_BROWSER=1 требует {what}")
    if chromium is None:
        pytest.skip(
            "Chromium не найден: нет /usr/bin/chromium (поставьте `apt-get install chromium` "
            f"или запустите .ci/install-browser) — {what} не выполнялся"
        )
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.fail("нет пакета playwright: обновите окружение (`make env`, extra dev)")
    return chromium


@contextmanager
def server_page(server: LabServer, chromium: str, timeout_ms: int = 30_000) -> Iterator:
    """Страница Chromium без окна, которая ходит только на ``server`` и с его токеном.

    Наружу сети нет и не нужно: запросы к MathJax на CDN и к значкам Colab сразу получают отказ.
    """
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            context = browser.new_context(
                extra_http_headers={"Authorization": f"token {server.token}"},
                viewport={"width": 1280, "height": 900},
            )
            context.set_default_timeout(timeout_ms)
            context.route(
                "**/*",
                lambda route: (
                    route.continue_()
                    if route.request.url.startswith(server.url + "/")
                    else route.abort()
                ),
            )
            yield context.new_page()
        finally:
            browser.close()


# --- formgrader в браузере -------------------------------------------------------------


def open_submission(page, base_url: str, submission_id: str) -> None:
    """Страница работы в formgrader (``base_url`` — адрес сервера преподавателя)."""
    page.goto(f"{base_url}/formgrader/submissions/{submission_id}/", wait_until="load")
    page.wait_for_load_state("networkidle")


def grade_in_formgrader(page, grade_id: str, score: str, comment: str) -> None:
    """Балл и комментарий ответу ``grade_id`` на открытой странице работы formgrader.

    Как их ставит преподаватель: набрал и ушёл с поля — formgrader сохраняет по событию
    change через свой API; ждём ответа на каждый PUT и проверяем, что он успешен. Поля
    заполняются, только когда скрипты formgrader уже загрузили баллы и комментарии работы
    (иначе набранное никто не сохранит): тогда у полей появляются подсказки.
    """
    from playwright.sync_api import expect

    score_field = page.locator(f"input.score#{grade_id}")
    comment_field = page.locator(f"textarea#{grade_id}-comment")
    extra_credit = page.locator(f"input#{grade_id}_extra_credit")
    expect(extra_credit).to_have_attribute("placeholder", "0", timeout=30_000)
    expect(comment_field).to_have_attribute("placeholder", re.compile(r"\S"), timeout=30_000)
    for field, value, kind in ((score_field, score, "grade"), (comment_field, comment, "comment")):
        with page.expect_response(
            lambda r, kind=kind: f"/formgrader/api/{kind}/" in r.url and r.request.method == "PUT"
        ) as saved:
            field.fill(value)
            field.blur()
        assert saved.value.ok, (kind, saved.value.status, saved.value.text())


def _wait_until_ready(
    server: LabServer, process: subprocess.Popen, timeout: float, name: str = "jupyter lab"
) -> None:
    request = urllib.request.Request(
        f"{server.url}/api/status", headers={"Authorization": f"token {server.token}"}
    )
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{name} завершился сам:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(request, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError(f"{name} не ответил за {timeout} с:\n{server.log_tail()}")


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM группе процессов сервера (он сам гасит ядра), через 15 с — SIGKILL."""
    if process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


# --- JupyterLab в браузере -------------------------------------------------------------

_RUN_ALL = re.compile(r"^\s*Run All Cells\s*$")

_ALL_EXECUTED_JS = """
() => {
  const cells = [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-CodeCell')];
  return cells.length > 0 && cells.every(cell => {
    const prompt = cell.querySelector('.jp-InputArea-prompt');
    return prompt && /\\[\\d+\\]/.test(prompt.textContent);
  });
}
"""

_CELLS_JS = """
() => [...document.querySelectorAll('.jp-NotebookPanel .jp-Notebook .jp-Cell')].map(cell => ({
  code: cell.classList.contains('jp-CodeCell'),
  text: cell.querySelector('.jp-OutputArea')?.innerText ?? '',
  checks: [...cell.querySelectorAll('.course7-check')].map(div => ({
    passed: div.getAttribute('data-passed'),
    text: div.innerText,
  })),
}))
"""


def open_notebook(page, url: str, timeout_ms: int = 60_000) -> None:
    """Открывает тетрадку и ждёт, пока ядро запустится и станет свободным."""
    page.goto(url, wait_until="domcontentloaded", timeout=timeout_ms)
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell", timeout=timeout_ms)
    wait_kernel_idle(page, timeout_ms)


_KERNEL_IDLE_JS = """
() => {
  const indicator = document.querySelector('.jp-NotebookPanel .jp-Notebook-ExecutionIndicator');
  const status = document.querySelector('#jp-main-statusbar')?.innerText ?? '';
  return indicator?.getAttribute('data-status') === 'idle'
    && /\\(ipykernel\\) \\| Idle/.test(status);
}
"""


def wait_kernel_idle(page, timeout_ms: int = 60_000) -> None:
    """Ядро запущено и свободно: индикатор на панели тетрадки и строка состояния.

    Индикатор один говорит «idle» и до запуска ядра («No Kernel | Initializing»), поэтому
    ждём ещё и «Python 3 (ipykernel) | Idle» в строке состояния.
    """
    page.wait_for_function(_KERNEL_IDLE_JS, timeout=timeout_ms, polling=250)


_ANY_STARTED_JS = """
() => [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputArea-prompt')]
  .some(prompt => /\\[(\\*|\\d+)\\]/.test(prompt.textContent))
"""


def run_all_cells(page, timeout_ms: int = 90_000) -> None:
    """Меню Run → Run All Cells, как сделал бы учащийся; ждём, пока выполнятся все ячейки.

    Если меню открылось, а выполнение не началось (щелчок пришёлся на перерисовку),
    пункт меню выбирается ещё раз — повторный запуск ячеек тетрадке не вредит.
    """
    for attempt in range(3):
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        item = page.locator(".lm-Menu-item:not(.lm-mod-hidden)", has_text=_RUN_ALL)
        item.first.click()
        try:
            page.wait_for_function(_ANY_STARTED_JS, timeout=10_000, polling=250)
            break
        except Exception:
            page.keyboard.press("Escape")
            if attempt == 2:
                screenshot(page, "failed_run_all.png", whole_notebook=False)
                raise
    try:
        page.wait_for_function(_ALL_EXECUTED_JS, timeout=timeout_ms, polling=250)
        wait_kernel_idle(page, timeout_ms)
    except Exception:
        screenshot(page, "failed_run_all.png", whole_notebook=False)
        raise


def cell_summaries(page) -> list[dict]:
    """Для каждой ячейки по порядку: код ли это, текст выводов и плашки проверок."""
    return page.evaluate(_CELLS_JS)


def screenshot(page, name: str, whole_notebook: bool = True) -> Path:
    """Снимок страницы в .course-work/screenshots/ (папка не в git).

    JupyterLab прокручивает тетрадку внутри окна, поэтому «вся страница» — это только
    видимая часть. Для снимка всей тетрадки окно на время вытягивается по её высоте.
    """
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / name
    viewport = page.viewport_size
    height = page.evaluate(_NOTEBOOK_HEIGHT_JS) if whole_notebook else 0
    if viewport and height > viewport["height"]:
        page.set_viewport_size({"width": viewport["width"], "height": min(height, 30_000)})
        page.evaluate(_SCROLL_TO_TOP_JS)
        page.wait_for_timeout(500)
    try:
        page.screenshot(path=str(path), full_page=True)
    finally:
        if viewport and page.viewport_size != viewport:
            page.set_viewport_size(viewport)
    return path


_SCROLL_TO_TOP_JS = """
() => { const s = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer');
        if (s) s.scrollTop = 0; }
"""

_NOTEBOOK_HEIGHT_JS = """
() => {
  const scroller = document.querySelector('.jp-NotebookPanel .jp-WindowedPanel-outer');
  if (!scroller) return 0;
  return scroller.scrollHeight + (window.innerHeight - scroller.clientHeight) + 40;
}
"""

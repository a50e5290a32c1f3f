"""Быстрый прогон (``make test``) проходит настоящий путь оценивания один раз, целиком.

Маленький класс — верная и ошибочная работы 7.2, верная работа GPU-лабораторной 7.6 в
крошечном режиме и враждебная работа, подменяющая проверку, — оценивается командой
``make grade`` в пустой рабочей папке: регистрация лабораторных, прогрев эталонами, песочница
bubblewrap, ядра из заготовок, вердикты вне песочницы, таблицы и отчёты. Отчёт ошибочной работы
открывается в Chromium: подсказка видна, ни один запрос не ушёл дальше файла отчёта.
Всё остальное о тех же путях проверяет полный прогон (``make test-all``).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from corpus import FORWARD, LAB2, LAB6, TABLE, lab2

from browser_support import CHROMIUM_FLAGS, chromium_or_skip
from submissions import read_csv, submission, write_submission

pytestmark = pytest.mark.smoke

CLASS = {
    "correct": (LAB2, lab2()),
    "forward_only": (LAB2, lab2(FORWARD, TABLE)),
    "gpu_correct": (LAB6, submission(LAB6)),
    "patched_checker": (
        LAB2,
        lab2(FORWARD + "\n\nflops.check_compute_num_flops = lambda *a, **k: None", TABLE),
    ),
}
POINTS = {"correct": 4, "forward_only": 2, "gpu_correct": 4, "patched_checker": 2}


def test_a_small_mixed_class_is_graded_end_to_end(tmp_path, sandbox):
    folder, work = tmp_path / "submitted", tmp_path / "work"
    for student, (lab, notebook) in CLASS.items():
        write_submission(folder, student, lab, notebook)
    env = {**os.environ, "COURSE7_GRADING_DIR": str(work)}
    done = subprocess.run(
        [sys.executable, "-m", "feedback.teacher.commands.grade", str(folder), "--jobs", "2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    scores = {r["student_id"]: float(r["score"]) for r in read_csv(work / "grades.csv")}
    assert scores == POINTS
    flagged = {r["student_id"] for r in read_csv(work / "needs_review.csv")}
    assert flagged == {"patched_checker"}
    kernels = {r["student_id"]: r["kernel"] for r in read_csv(work / "timings.csv")}
    assert kernels == dict.fromkeys(CLASS, "template")
    report = next((work / "feedback_reports" / "forward_only").glob("*/*.html"))
    _open_in_chromium(report)


def _open_in_chromium(report) -> None:
    """Отчёт в Chromium: русская подсказка видна, запросов за пределы файла нет."""
    chromium = chromium_or_skip("отчёт в браузере")
    from playwright.sync_api import sync_playwright

    requests: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            page = browser.new_page()

            def route(request_route):
                url = request_route.request.url
                if url != report.as_uri():
                    requests.append(url)
                    return request_route.abort()
                return request_route.continue_()

            page.route("**/*", route)
            page.goto(report.as_uri(), wait_until="load", timeout=60_000)
            text = page.inner_text("body")
        finally:
            browser.close()
    assert "прямой проход" in text, text[:2000]
    assert requests == [], requests

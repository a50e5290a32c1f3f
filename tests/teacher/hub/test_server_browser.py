"""Семестр через JupyterHub курса, как его проходят люди, — в настоящем JupyterHub и Chromium.

``make hub`` (:mod:`feedback.teacher.commands.hub`) поднимает JupyterHub с
configurable-http-proxy из npm (его ставит ``make hub-proxy``: тест ничего не скачивает).
Преподаватель выпускает 7.2 в exchange (``make hub-release``) и видит её в formgrader
«released»; двое учащихся входят, берут её во вкладке Assignments, правят ответ в
JupyterLab, сохраняют и сдают. Преподаватель собирает (``make collect``) и оценивает
(``make grade``) — оценивается ровно то, что учащийся набрал; ставит балл и комментарий
письменному ответу в formgrader, ``make feedback`` выдаёт отчёты через exchange, и каждый
учащийся забирает и открывает в JupyterLab отчёт своей работы.

Затем Иванов переписывает оценённый ответ и сдаёт ещё раз: ``make collect`` и ``make grade``
берут пересдачу, а ручная оценка снята — ответ снова ждёт проверки.

Отдельно (без браузера): тот же учащийся, оценённый через JupyterHub и через архив Moodle, —
один id и те же баллы; пересдача, сдача после срока и учащийся без сдачи — как с Moodle.

Снимки экранов каждого шага — в .course-work/screenshots/hub/.
"""

from __future__ import annotations

import json
import re
import shutil
import time
import zipfile
from contextlib import contextmanager
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import pytest
from corpus import CORRECT, FORWARD, LAB2, lab2
from nbgrader.utils import parse_utc

from feedback.settings import REQUIRE_BROWSER
from feedback.teacher.commands import feedback as feedback_command
from feedback.teacher.commands import hub as hub_command
from feedback.teacher.core.settings import COURSE_ID, GIB, Limits, Settings
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.grading import grade
from feedback.teacher.hub import collect as hub_collect
from feedback.teacher.hub import handback, lateness
from feedback.teacher.hub import logins as hub_logins
from feedback.teacher.hub import prepare as hub_prepare
from feedback.teacher.hub import process as hub_process
from feedback.teacher.hub import release as hub_release
from feedback.teacher.hub import state as hub_state
from feedback.teacher.intake import exchange
from feedback.teacher.lms import export
from feedback.teacher.records import gradebook, ledger

from browser_support import (
    CHROMIUM_FLAGS,
    SCREENSHOTS,
    chromium_or_skip,
    grade_in_formgrader,
    open_submission,
)
from submissions import read_csv, write_submission

pytestmark = [pytest.mark.slow, pytest.mark.browser]

SHOTS = SCREENSHOTS / "hub"
ROSTER = (
    "id,first_name,last_name,email\n"
    "ivanov,Иван,Иванов,ivanov@example.org\n"
    "Petrova,Мария,Петрова,petrova@example.org\n"
)
#: Что набирают учащиеся (ответ на задание 1 и на вопрос 1).
TYPED = {"ivanov": CORRECT, "Petrova": FORWARD}
ANSWER = {"ivanov": "В 100 раз: FLOPs растут как P·N.", "Petrova": "В 20 раз."}
COMMENT = "Верно: FLOPs пропорциональны и P, и N."
#: Ответ Иванова на вопрос 1 в пересдаче.
REWRITTEN = "Переписал: в 100 раз, ведь 6·P·N линейна и по P, и по N."
NOTEBOOK = f"{COURSE_ID}/{LAB2}/{LAB2}.ipynb"
#: Письменный ответ, который оценивает преподаватель (вопрос 1), и время сдач в exchange, как
#: его пишет учащийся (в имени папки и timestamp.txt): make collect ему не верит и берёт время,
#: которое записало ядро, — сдачи здесь идут по порядку.
QUESTION = "reflection_scaling"
FIRST_ANSWER = "FLOPs растут в 100 раз: и параметров, и токенов в 10 раз больше."
FIRST_TIME = "2026-12-01 10:00:00.000000 UTC"
SECOND_TIME = "2026-12-02 10:00:00.000000 UTC"
SHORT = Limits(notebook_seconds=120, cell_seconds=30, memory_bytes=int(1.5 * GIB))


def _settings(work: Path) -> Settings:
    return replace(Settings.from_env(), work=work, cpu_limits=SHORT)


def _roster(tmp_path: Path) -> Path:
    path = tmp_path / "students.csv"
    path.write_text(ROSTER, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- JupyterHub и Moodle


def _moodle_zip(path: Path, notebook: dict) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(
            f"Иванов Иван_123_assignsubmission_file_/{LAB2}.ipynb",
            json.dumps(notebook, ensure_ascii=False),
        )
    return path


def test_one_learner_through_the_hub_and_through_moodle_is_one_id(tmp_path, fresh_work):
    """Работа из exchange (раскладка ``nbgrader collect``) и та же работа из архива Moodle
    оцениваются под одним id из списка и с теми же баллами; ручной балл переживает второй путь."""
    work = fresh_work(tmp_path / "work")
    settings = _settings(work)
    notebook = lab2(CORRECT)
    collected = write_submission(settings.workspace.submitted, "ivanov", LAB2, notebook).parent
    (collected / exchange.TIMESTAMP).write_text("2026-12-02 10:00:00.000000 UTC")
    (collected / exchange.SUBMISSION_SECRET).write_text("secret")
    grade.grade(roster_file=_roster(tmp_path), settings=settings)
    through_hub = {key: scores for key, scores in ledger.load_scores(Workspace(work)).items()}
    assert list(through_hub) == [("ivanov", LAB2)]

    grade.grade(_moodle_zip(tmp_path / "7.2.zip", notebook), settings=settings)
    through_moodle = ledger.load_scores(Workspace(work))
    assert list(through_moodle) == [("ivanov", LAB2)]
    assert through_moodle[("ivanov", LAB2)].tasks == through_hub[("ivanov", LAB2)].tasks
    assert through_moodle[("ivanov", LAB2)].upload == through_hub[("ivanov", LAB2)].upload
    assert [row["student_id"] for row in read_csv(work / "grades.csv")] == ["ivanov"]
    assert read_csv(work / "changes.csv") == []
    assert read_csv(work / "lms_ids.csv") == [
        {"student_id": "ivanov", "lab": LAB2, "lms_participant": "123"}
    ]
    # Отчёт выдаётся сдаче из exchange: оценена та же тетрадка.
    assert [item.problem for item in handback.hub_feedback(settings)] == [None]


def _submit(
    settings: Settings, student: str, stamp: str, function: str, answer: str | None = None
) -> Path:
    """Сдача в inbound, как её кладёт ``nbgrader submit``: тетрадка, время и секрет сдачи.

    ``answer`` — письменный ответ на вопрос 1 (без него — нетронутая заготовка)."""
    folder = (
        settings.workspace.exchange
        / COURSE_ID
        / "inbound"
        / f"{student}+{LAB2}+{stamp}+{stamp[-6:]}"
    )
    folder.mkdir(parents=True)
    notebook = lab2(function, **({QUESTION: answer} if answer is not None else {}))
    (folder / f"{LAB2}.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    (folder / exchange.TIMESTAMP).write_text(stamp)
    (folder / exchange.SUBMISSION_SECRET).write_text(f"secret-{stamp}")
    time.sleep(0.02)  # ctime ядра идёт тиками в несколько миллисекунд: следующая сдача — позже
    return folder


def test_collect_takes_each_learners_latest_submission(tmp_path, fresh_work):
    """make collect: последняя сдача каждого — в submitted/ (пересдача заменяет прежнюю)."""
    settings = _settings(fresh_work(tmp_path / "work"))
    _submit(settings, "ivanov", "2026-12-01 10:00:00.000000 UTC", FORWARD)
    _submit(settings, "ivanov", "2026-12-02 10:00:00.000000 UTC", CORRECT)
    _submit(settings, "Petrova", "2026-12-01 12:00:00.000000 UTC", FORWARD)
    hub_collect.collect(settings)
    collected = {
        path.parent.parent.name: parse_utc(path.read_text())
        for path in settings.workspace.submitted.glob("*/*/timestamp.txt")
    }
    assert set(collected) == {"ivanov", "Petrova"}
    assert collected["ivanov"] < collected["Petrova"]  # время ядра, а не написанное учащимся
    notebook = json.loads(
        (settings.workspace.submitted / "ivanov" / LAB2 / f"{LAB2}.ipynb").read_text()
    )
    assert CORRECT in ["".join(cell["source"]) for cell in notebook["cells"]]


def _manual(work: Path, student: str, score: float, comment: str) -> None:
    """Как formgrader: балл и комментарий письменному ответу, ответ больше не ждёт проверки."""
    with gradebook._open(Workspace(work)) as gb:
        found = gb.find_grade(QUESTION, LAB2, LAB2, student)
        found.manual_score, found.needs_manual_grade = score, False
        gb.find_comment(QUESTION, LAB2, LAB2, student).manual_comment = comment
        gb.db.commit()


def _changes(work: Path) -> dict[tuple[str, str], tuple[str, str, str]]:
    return {
        (row["student_id"], row["task"]): (row["old_points"], row["new_points"], row["why"])
        for row in read_csv(work / Workspace.CHANGES)
    }


def test_a_resubmission_through_the_exchange_is_graded_as_a_new_moodle_upload(
    tmp_path, sandbox, fresh_work
):
    """Пересдача через exchange — как новый архив Moodle: оценивается последняя сдача; ручная
    оценка неизменённого ответа остаётся, изменённый ответ снова ждёт проверки (changes.csv,
    manual_archive.csv), а отчёт выдаётся оценённой пересдаче."""
    settings = _settings(fresh_work(tmp_path / "work"))
    work = settings.work
    _submit(settings, "ivanov", FIRST_TIME, FORWARD, FIRST_ANSWER)
    _submit(settings, "Petrova", FIRST_TIME, CORRECT, FIRST_ANSWER)
    hub_collect.collect(settings)
    grade.grade(roster_file=_roster(tmp_path), settings=settings)
    first = {key: item.timestamp for key, item in gradebook.results(Workspace(work)).items()}
    _manual(work, "ivanov", 1.0, COMMENT)
    _manual(work, "Petrova", 1.0, "Верно.")

    # Иванов исправил функцию, а ответ не трогал; Петрова переписала только ответ.
    _submit(settings, "ivanov", SECOND_TIME, CORRECT, FIRST_ANSWER)
    _submit(settings, "Petrova", SECOND_TIME, CORRECT, "Переписала: в 100 раз, 6·P·N.")
    hub_collect.collect(settings)
    grade.grade(settings=settings)

    results = gradebook.results(Workspace(work))
    ivanov, petrova = results[("ivanov", LAB2)], results[("Petrova", LAB2)]
    assert ivanov.timestamp > first[("ivanov", LAB2)]
    assert petrova.timestamp > first[("Petrova", LAB2)]
    assert ivanov.tasks["check_compute_num_flops"].score == 2  # оценена пересдача
    assert (ivanov.tasks[QUESTION].manual, ivanov.tasks[QUESTION].waiting) == (1.0, False)
    assert (petrova.tasks[QUESTION].manual, petrova.tasks[QUESTION].pending) == (None, True)
    with gradebook._open(Workspace(work)) as gb:
        assert gb.find_comment(QUESTION, LAB2, LAB2, "ivanov").manual_comment == COMMENT
        assert gb.find_comment(QUESTION, LAB2, LAB2, "Petrova").manual_comment is None
    changes = _changes(work)
    assert changes[("ivanov", "check_compute_num_flops")] == ("0", "2", "новая работа")
    assert changes[("ivanov", QUESTION)] == ("", "1", "ручная оценка")  # поставлена и осталась
    assert changes[("Petrova", QUESTION)] == ("1", "", ledger.ANSWER_CHANGED)
    assert ("Petrova", "check_compute_num_flops") not in changes  # баллы функции те же
    (archived,) = read_csv(work / Workspace.MANUAL_ARCHIVE)
    assert (archived["student_id"], archived["task"], archived["manual_points"]) == (
        "Petrova",
        QUESTION,
        "1",
    )
    # Отчёты — пересдаче: её тетрадка та, что оценена.
    assert {item.student: item.problem for item in handback.hub_feedback(settings)} == {
        "ivanov": None,
        "Petrova": None,
    }


def _due(settings: Settings, when: str) -> None:
    """Срок лабораторной в базе nbgrader — как его ставит преподаватель в formgrader."""
    with gradebook._open(settings.workspace) as gb:
        gb.update_or_create_assignment(LAB2, duedate=when)


def test_late_work_and_a_learner_without_work_are_as_with_moodle(
    tmp_path, sandbox, fresh_work, monkeypatch, capsys
):
    """Сдача после срока собирается и оценивается без штрафа (``make collect`` называет её), а
    учащийся из списка, который ничего не сдал, в grades.csv и moodle_grades.csv — тот же, что с
    архивом Moodle: строки работы нет, оценка пуста, а не 0."""
    roster = _roster(tmp_path)
    through_hub = _settings(fresh_work(tmp_path / "hub"))
    through_moodle = _settings(fresh_work(tmp_path / "moodle"))
    _submit(through_hub, "ivanov", "2026-12-01 10:00:00.000000 UTC", FORWARD)  # вовремя
    due = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")  # срок — между сдачами
    time.sleep(0.02)
    for settings in (through_hub, through_moodle):
        _due(settings, due)
    # После срока, хотя в имени папки и timestamp.txt учащийся написал время до него.
    _submit(through_hub, "ivanov", "2026-12-01 11:00:00.000000 UTC", CORRECT)
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(through_hub.work))
    monkeypatch.delenv("COURSE7_EXCHANGE_DIR", raising=False)
    assert hub_command.main(["collect"]) == 0
    printed = capsys.readouterr().out
    assert f"ivanov · {LAB2}: сдана " in printed and " — на 1 минуту" in printed
    (late,) = lateness.late(through_hub)
    assert (late.student, late.lab) == ("ivanov", LAB2) and 0 < late.seconds < 60

    grade.grade(roster_file=roster, settings=through_hub)
    moodle = _moodle_zip(tmp_path / "7.2.zip", lab2(CORRECT))
    grade.grade(moodle, roster_file=roster, settings=through_moodle)
    grades, lms = {}, {}
    for road, settings in (("hub", through_hub), ("moodle", through_moodle)):
        gradebook.export(settings.workspace)
        export.moodle_grades(settings)
        grades[road] = read_csv(settings.work / "grades.csv")
        lms[road] = read_csv(Workspace(settings.work).moodle_grades)

    # Опоздание видно по времени сдачи рядом со сроком; баллы — как у работы из Moodle.
    (late_row,), (moodle_row,) = grades["hub"], grades["moodle"]
    assert late_row["student_id"] == moodle_row["student_id"] == "ivanov"
    assert late_row["timestamp"] > late_row["duedate"] == moodle_row["duedate"] != ""
    assert moodle_row["timestamp"] == ""  # в архиве Moodle времени сдачи нет
    assert {**late_row, "timestamp": ""} == moodle_row
    assert float(late_row["late_submission_penalty"]) == 0
    assert float(late_row["score"]) == float(late_row["raw_score"])  # без штрафа
    # Оценена поздняя сдача (верная функция), а не сданная вовремя.
    tasks = gradebook.results(Workspace(through_hub.work))[("ivanov", LAB2)].tasks
    assert tasks["check_compute_num_flops"].score == 2
    # Петрова ничего не сдала: её строка в выгрузке та же, что с Moodle, и без нулей.
    assert lms["hub"] == lms["moodle"]
    petrova = next(row for row in lms["hub"] if row["id"] == "Petrova")
    title = Settings().find_lab(LAB2).title
    assert (petrova[title], petrova[f"{title} — отзыв"]) == ("", "")
    named = {"email", "id", "first_name", "last_name"}
    assert all(value == "" for key, value in petrova.items() if key not in named)
    assert [item.student for item in handback.hub_feedback(through_hub)] == ["ivanov"]


# --------------------------------------------------------------------------- в браузере


def _proxy_or_skip() -> Path:
    proxy = hub_prepare.find_proxy()
    if proxy is None:
        message = "нет configurable-http-proxy: make hub-proxy (npm ci из hub/package-lock.json)"
        if REQUIRE_BROWSER.read() is True:
            pytest.fail(message)
        pytest.skip(message)
    return proxy


@pytest.fixture
def course_hub(tmp_path, sandbox):
    """JupyterHub курса над пустой рабочей папкой и списком из двух учащихся."""
    chromium = chromium_or_skip("семестр через JupyterHub")
    proxy = _proxy_or_skip()
    settings = _settings(tmp_path / "work")
    chosen = hub_state.Hub(settings, port=hub_prepare.free_port())
    state = hub_prepare.prepare(chosen, _roster(tmp_path), proxy=proxy)
    # В снимках вся тетрадка в DOM (без «ленивой» отрисовки ячеек), как в
    # tests/project/test_lab_7_2_browser.py.
    for name in ("ivanov", "petrova", "teacher"):
        settings_file = (
            (chosen.users / name / ".jupyter" / "lab" / "user-settings" / "@jupyterlab")
            / "notebook-extension"
            / "tracker.jupyterlab-settings"
        )
        settings_file.parent.mkdir(parents=True)
        settings_file.write_text(json.dumps({"windowingMode": "none"}))
    shutil.rmtree(SHOTS, ignore_errors=True)
    SHOTS.mkdir(parents=True)
    with hub_process.running(chosen, tmp_path / "jupyterhub.log"):
        yield chosen, state, chromium, tmp_path / "jupyterhub.log"


@contextmanager
def person(course_hub, name: str):
    """Chromium одного человека (свои cookie), вошедшего в JupyterHub курса; JupyterLab открыт."""
    from playwright.sync_api import sync_playwright

    chosen, _, chromium, _ = course_hub
    url = chosen.url.rstrip("/")
    password = hub_logins.passwords(chosen.workspace)[
        "teacher" if name == "teacher" else "learners"
    ]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900})
            context.set_default_timeout(60_000)
            context.route(
                "**/*",
                lambda route: (
                    route.continue_() if route.request.url.startswith(url + "/") else route.abort()
                ),
            )
            page = context.new_page()
            page.goto(f"{url}/hub/login")
            page.fill("#username_input", name)
            page.fill("#password_input", password)
            page.click("#login_submit")
            # Сервер пользователя запускается при первом входе: на занятой машине — минута.
            page.wait_for_url(re.compile(r"/user/[^/]+/lab"), timeout=240_000)
            page.wait_for_selector(_MENU_NBGRADER, timeout=240_000)
            page.wait_for_selector("#jupyterlab-splash", state="detached", timeout=240_000)
            try:
                yield page
            except Exception:
                shot(page, f"failed_{name}")
                raise
        finally:
            browser.close()


_MENU_NBGRADER = ".lm-MenuBar-itemLabel:text-is('Nbgrader')"


def shot(page, name: str) -> None:
    page.wait_for_timeout(500)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def _open_menu(page):
    """Меню Nbgrader открыто (щелчок, пришедшийся на перерисовку, повторяется)."""
    menu = page.locator(".lm-Menu:visible")
    for _ in range(3):
        page.locator(_MENU_NBGRADER).click()
        try:
            menu.locator(".lm-Menu-item:visible").first.wait_for(timeout=5_000)
            return menu
        except Exception:
            page.keyboard.press("Escape")
    menu.locator(".lm-Menu-item:visible").first.wait_for(timeout=5_000)
    return menu


def _close_menu(page) -> None:
    """Меню закрыто: Escape, а если меню без фокуса его не заметило, — щелчок по заголовку."""
    opened = page.locator(".lm-Menu:visible").first
    page.keyboard.press("Escape")
    try:
        opened.wait_for(state="detached", timeout=3_000)
    except Exception:
        page.locator(_MENU_NBGRADER).click()
        opened.wait_for(state="detached", timeout=10_000)


def nbgrader_menu(page) -> list[str]:
    menu = _open_menu(page)
    items = menu.locator(".lm-Menu-item:not(.lm-mod-hidden) .lm-Menu-itemLabel")
    labels = [text.strip() for text in items.all_inner_texts() if text.strip()]
    _close_menu(page)
    return labels


def open_from_menu(page, label: str) -> None:
    menu = _open_menu(page)
    menu.locator(".lm-Menu-item", has_text=re.compile(rf"^{re.escape(label)}\s*$")).click()


def assignments(page):
    """Вкладка Assignments (Nbgrader → Assignment List), как её открывает учащийся."""
    open_from_menu(page, "Assignment List")
    page.locator("#released_assignments_list").wait_for(state="attached")


def save(page) -> None:
    """Тетрадка сохранена (Ctrl+S), и JupyterLab больше не считает её изменённой.

    Отрисовка ячейки Markdown может изменить тетрадку уже после того, как сохранение началось:
    тогда вкладка остаётся «изменённой», хотя файл записан, — сохраняется ещё раз, как сделал бы
    человек, увидев точку на вкладке.
    """
    dirty = page.locator(".jp-mod-dirty")
    for _ in range(3):
        page.keyboard.press("Control+s")
        try:
            dirty.wait_for(state="detached", timeout=15_000)
            return
        except Exception:
            page.wait_for_timeout(500)
    dirty.wait_for(state="detached")


def type_into(page, cell, text: str) -> None:
    """Текст ячейки целиком заменяется набранным (как выделить всё и набрать своё)."""
    cell.scroll_into_view_if_needed()
    editor = cell.locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+a")
    page.keyboard.insert_text(text)


def edit_and_submit(
    page, attempt: int, shot_name: str, shown: str, answer: str, code: str | None = None
) -> None:
    """Сдача номер ``attempt`` из своей копии лабораторной: функция (если ``code``) и ответ на
    вопрос 1 вместо ``shown``, сохранить (снимок ``shot_name``) и Submit во вкладке Assignments.
    """
    from playwright.sync_api import expect

    page.goto(page.url.split("/lab")[0] + f"/lab/tree/{NOTEBOOK}")
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    task = notebook.locator(".jp-CodeCell", has_text="def compute_num_flops")
    task.wait_for()
    if code is not None:
        type_into(page, task, code)
    cell = notebook.locator(".jp-MarkdownCell", has_text=shown).first
    cell.scroll_into_view_if_needed()
    cell.dblclick()
    type_into(page, cell, answer)
    page.keyboard.press("Shift+Enter")
    save(page)
    task.scroll_into_view_if_needed()
    shot(page, shot_name)
    assignments(page)
    # Каждая сдача — своя строка со временем сдачи под лабораторной в «Submitted assignments».
    attempts = page.locator("#submitted_assignments_list .nested_list_item", has_text="UTC")
    expect(attempts).to_have_count(attempt - 1)
    page.locator("#fetched_assignments_list").get_by_role("button", name="Submit").click()
    expect(attempts).to_have_count(attempt)


def learner_fetches_edits_and_submits(course_hub, name: str) -> None:
    with person(course_hub, name.lower()) as page:
        # У учащегося в меню nbgrader — только его вкладка, без formgrader.
        assert nbgrader_menu(page) == ["Assignment List"]
        assignments(page)
        released = page.locator("#released_assignments_list")
        row = released.locator(".list_item", has_text=LAB2)
        row.wait_for()
        shot(page, f"{name}_1_released")
        row.get_by_role("button", name="Fetch").click()
        fetched = page.locator("#fetched_assignments_list .list_item", has_text=LAB2).first
        fetched.wait_for()
        edit_and_submit(
            page, 1, f"{name}_2_edited", "Впишите сюда свой ответ", ANSWER[name], TYPED[name]
        )
        shot(page, f"{name}_3_submitted")


def learner_resubmits(course_hub, name: str, answer: str) -> None:
    """Учащийся переписал ответ в той же копии и сдал ещё раз: в списке сдач — обе."""
    with person(course_hub, name.lower()) as page:
        edit_and_submit(page, 2, f"{name}_6_edited_again", ANSWER[name], answer)
        shot(page, f"{name}_7_resubmitted")


def teacher_sees_formgrader(course_hub) -> None:
    with person(course_hub, "teacher") as page:
        labels = nbgrader_menu(page)
        assert "Formgrader" in labels and "Assignment List" not in labels
        open_from_menu(page, "Formgrader")
        frame = page.frame_locator(".jp-MainAreaWidget:not(.lm-mod-hidden) iframe")
        row = frame.locator("#main-table tr", has_text=LAB2)
        row.wait_for()
        assert "released" in row.inner_text()
        shot(page, "teacher_1_formgrader_released")


def teacher_grades_the_answer(course_hub, student: str) -> None:
    """Балл и комментарий письменному ответу — в formgrader сервера преподавателя."""
    from playwright.sync_api import expect

    with person(course_hub, "teacher") as page:
        base = page.url.split("/lab")[0]
        listed = page.request.get(f"{base}/formgrader/api/submitted_notebooks/{LAB2}/{LAB2}")
        assert listed.ok, listed.text()
        item = next(item for item in listed.json() if item["student"] == student)
        open_submission(page, base, item["id"])
        # formgrader показывает балл автопроверки этой работы.
        expect(page.locator("input.score#check_compute_num_flops")).to_have_attribute(
            "placeholder", "2"
        )
        # Оценено ровно то, что учащийся набрал в своём JupyterLab.
        page.locator(".nbgrader_cell", has_text=ANSWER[student]).first.wait_for()
        grade_in_formgrader(page, QUESTION, "1", COMMENT)
        page.locator(f"input.score#{QUESTION}").scroll_into_view_if_needed()
        shot(page, "teacher_2_manual_grade")


def learner_opens_feedback(course_hub, name: str) -> str:
    """Учащийся забирает отчёт во вкладке Assignments и открывает его в JupyterLab."""
    with person(course_hub, name.lower()) as page:
        assignments(page)
        submitted = page.locator("#submitted_assignments_list")
        submitted.get_by_role("button", name="Fetch Feedback").click()
        link = submitted.get_by_text("(view feedback)")
        link.wait_for()
        shot(page, f"{name}_4_feedback_fetched")
        link.click()
        page.locator(".jp-DirListing-item", has_text=f"{LAB2}.html").dblclick()
        viewer = page.frame_locator(".jp-HTMLViewer:not(.lm-mod-hidden) iframe")
        viewer.locator("h4").first.wait_for()
        shot(page, f"{name}_5_feedback_opened")
        text = viewer.locator("body").inner_text()
        if COMMENT in text:
            # Переход по оглавлению отчёта в просмотрщике HTML JupyterLab (issue 42, п. 6):
            # отчёт остаётся на месте, к комментарию, а не «127.0.0.1 refused to connect».
            viewer.get_by_text("Комментарий преподавателя: Вопрос 1").first.click()
            page.wait_for_timeout(500)
            assert viewer.get_by_text(COMMENT).first.is_visible()
            assert viewer.locator("h4").first.count() == 1  # тот же отчёт во фрейме
            shot(page, f"{name}_5b_comment_link")
        return text


def summary_section(course_hub, settings: Settings, section: str, name: str) -> str:
    """Раздел ``section`` сводки summary.html в Chromium: его текст и снимок экрана."""
    from playwright.sync_api import sync_playwright

    chromium = course_hub[2]
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, headless=True, args=CHROMIUM_FLAGS
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto((settings.work / "summary.html").as_uri())
            found = page.locator(f"section#{section}")
            found.scroll_into_view_if_needed()
            page.wait_for_timeout(300)
            found.screenshot(path=str(SHOTS / f"{name}.png"))
            return found.inner_text()
        finally:
            browser.close()


def graded_sources(settings: Settings, student: str) -> dict[str, str]:
    """Ячейки проверенной тетрадки учащегося (autograded/) по grade_id: что оценено."""
    autograded = settings.workspace.autograded / student / LAB2 / f"{LAB2}.ipynb"
    cells = json.loads(autograded.read_text(encoding="utf-8"))["cells"]
    return {
        cell["metadata"].get("nbgrader", {}).get("grade_id"): "".join(cell["source"])
        for cell in cells
    }


def test_the_semester_through_the_hub(course_hub, monkeypatch):
    chosen, state, _, log = course_hub
    settings = chosen.settings
    assert state.learners == {"ivanov": "ivanov", "petrova": "Petrova"}

    hub_release.release(settings, LAB2)  # make hub-release LAB=7.2
    teacher_sees_formgrader(course_hub)
    for name in TYPED:
        learner_fetches_edits_and_submits(course_hub, name)
    inbound = {item["student"] for item in hub_collect.inbound(settings)}
    assert inbound == set(TYPED)  # id из списка, хотя Petrova входит как petrova

    hub_collect.collect(settings)  # make collect
    grade.grade(settings=settings)  # make grade
    graded = {}
    for name in TYPED:
        source = graded_sources(settings, name)
        assert source["compute_num_flops"].strip() == TYPED[name]
        assert source[QUESTION].strip() == ANSWER[name]
        graded[name] = ledger.load_scores(settings.workspace)[(name, LAB2)].tasks
    assert graded["ivanov"]["check_compute_num_flops"].score == 2
    assert graded["Petrova"]["check_compute_num_flops"].score == 0

    teacher_grades_the_answer(course_hub, "ivanov")
    # make feedback: отчёты и оценки заново, затем выдача отчётов через exchange.
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(settings.work))
    assert feedback_command.main([]) == 0
    assert hub_command.main(["feedback"]) == 0
    ready = handback.hub_feedback(settings)
    assert sorted((item.student, item.problem) for item in ready) == [
        ("Petrova", None),
        ("ivanov", None),
    ]
    assert len(list((settings.workspace.exchange / COURSE_ID / "feedback").glob("*.html"))) == 2
    seen = {name: learner_opens_feedback(course_hub, name) for name in TYPED}
    scores = {row["student_id"]: row for row in read_csv(settings.work / "grades.csv")}
    # Автопроверка 2 балла и ручной 1 — в оценках и в заголовке отчёта, который видит учащийся.
    assert float(scores["ivanov"]["score"]) == 3
    for name, text in seen.items():
        report = settings.workspace.feedback_reports / name / LAB2 / f"{LAB2}.html"
        fetched = chosen.users / name.lower() / COURSE_ID / LAB2 / "feedback"
        (copy,) = fetched.glob(f"*/{LAB2}.html")
        assert copy.read_bytes() == report.read_bytes()  # отчёт этой работы, и ничей другой
        assert TYPED[name].splitlines()[-1].strip() in text
    assert COMMENT in seen["ivanov"] and COMMENT not in seen["Petrova"]
    ivanov = scores["ivanov"]
    assert f"{float(ivanov['score']):g} из {float(ivanov['max_score']):g} баллов" in seen["ivanov"]
    # Сводка после formgrader и make feedback (issue 42, п. 3): Иванов оценён и больше не ждёт.
    pending = summary_section(course_hub, settings, "pending", "teacher_3_summary_after_formgrader")
    assert "Petrova" in pending and "ivanov" not in pending

    # Пересдача во вкладке Assignments: Иванов переписал оценённый ответ — make collect и
    # make grade берут её, а ручная оценка снята, и ответ снова ждёт проверки.
    started = time.monotonic()
    learner_resubmits(course_hub, "ivanov", REWRITTEN)
    hub_collect.collect(settings)
    grade.grade(settings=settings)
    answer = gradebook.results(settings.workspace)[("ivanov", LAB2)].tasks[QUESTION]
    assert (answer.manual, answer.pending) == (None, True)
    assert _changes(settings.work)[("ivanov", QUESTION)] == ("1", "", ledger.ANSWER_CHANGED)
    assert graded_sources(settings, "ivanov")[QUESTION].strip() == REWRITTEN
    # Что изменилось (issue 42, п. 4): прежний ответ рядом с новым, прежние балл и комментарий.
    reopened = summary_section(course_hub, settings, "reopened", "teacher_4_summary_regrade")
    assert "ivanov" in reopened and COMMENT in reopened
    assert "− " + ANSWER["ivanov"] in reopened and "+ " + REWRITTEN in reopened
    print(f"пересдача через JupyterHub: {time.monotonic() - started:.1f} с")
    assert "Traceback" not in log.read_text(encoding="utf-8")

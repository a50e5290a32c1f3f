"""Данные преподавателя переживают обрыв: kill -9 в любой момент и повтор — как без обрыва.

Семестр: архив 7.2 оценён (со списком учащихся, номерами Moodle и работой в
needs_review.csv), затем приходит архив 7.4. Запуск make grade для 7.4 убивается SIGKILL перед
каждой заменой таблицы (временный файл уже написан, таблица ещё прежняя — так выглядит
обрыв посреди записи) и между работами. Обрывы идут цепочкой: каждый следующий запуск
начинается с того, что оставил предыдущий, оборванный в другом месте, — так каждая точка
обрыва проверена, а запусков вдвое меньше. Таблицы после последнего, полного повтора — байт в
байт те, что дал запуск без обрыва; ни временных файлов, ни папок единиц с работами учащихся
не остаётся.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from corpus import FORWARD, TABLE, lab2

from feedback.teacher.core import files
from feedback.teacher.core.workspace import Workspace

from submissions import student_notebook, submission

pytestmark = pytest.mark.slow

LAB2, LAB4 = "lab_7_2_training_flops", "lab_7_4_gpu_memory"
ROSTER = "id,first_name,last_name,email\nivanov,Иван,Иванов,i@x.ru\npetrova,Анна,Петрова,p@x.ru\n"

#: Процесс make grade, который убивает себя перед первой заменой файла с именем NAME
#: (``write:NAME``) или перед первой работой (``unit:1``); ``count`` печатает имена замен.
KILLER = """
import os, signal, sys
from feedback.teacher.commands import grade as command
from feedback.teacher.core import files
from feedback.teacher.grading import grade

kind, name = sys.argv[1].split(":")
replace_file, merge = os.replace, grade._merge_safely


def killing_replace(source, target, *args, **kwargs):
    if str(source).endswith(files.TEMP_SUFFIX):
        if kind == "count":
            print("TARGET", os.path.basename(target), file=sys.stderr, flush=True)
        if kind == "write" and os.path.basename(target) == name:
            os.kill(os.getpid(), signal.SIGKILL)
    return replace_file(source, target, *args, **kwargs)


def killing_merge(*args, **kwargs):
    if kind == "unit":
        os.kill(os.getpid(), signal.SIGKILL)
    return merge(*args, **kwargs)


os.replace, grade._merge_safely = killing_replace, killing_merge
sys.exit(command.main(sys.argv[2:]))
"""

#: Столбцы timings.csv, которые меняются от запуска к запуску (секунды и память).
VOLATILE = {"timings.csv"}
#: Что считается таблицей: всё, что пишется в корень рабочей папки.
TABLES = (".csv", ".json", ".md", "summary.html")


def _write(folder: Path, owner: str, lab: str, nb: dict) -> None:
    target = folder / f"{owner}_assignsubmission_file_" / f"{lab}.ipynb"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(nb, ensure_ascii=False), encoding="utf-8")


def _grade(work: Path, folder: Path, kill: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COURSE7_GRADING_DIR": str(work)}
    args = [str(folder), "--jobs", "1"]
    command = [sys.executable, "-c", KILLER, kill, *args] if kill else None
    command = command or [sys.executable, "-m", "feedback.teacher.commands.grade", *args]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=600)


def _tables(work: Path) -> dict[str, bytes]:
    """Таблицы, снимок баллов и список к лекции — то, что сравнивается байт в байт."""
    found = {}
    for path in sorted(work.iterdir()):
        if path.suffix in (".csv", ".json", ".md") and path.name not in VOLATILE:
            found[path.name] = path.read_bytes()
    timings = (work / "timings.csv").read_text(encoding="utf-8").splitlines()
    found["timings.csv (кто)"] = "\n".join(line.split(",")[0] for line in timings).encode()
    return found


def _leftovers(work: Path) -> list[str]:
    temp = [str(path) for path in work.rglob(f"*{files.TEMP_SUFFIX}")]
    units = [str(path) for path in (work / "units").glob("*")] if (work / "units").exists() else []
    return temp + units


def test_a_run_killed_at_any_moment_and_repeated_equals_an_uninterrupted_one(
    tmp_path, sandbox, fresh_work
):
    semester = fresh_work(tmp_path / "semester")
    (tmp_path / "students.csv").write_text(ROSTER, encoding="utf-8")
    first, second = tmp_path / "7.2", tmp_path / "7.4"
    _write(first, "Иванов Иван_101", LAB2, submission(LAB2))
    strict_off = "import os\nos.environ['FEEDBACK_STRICT'] = '0'\n\n" + FORWARD
    _write(first, "Петрова Анна_102", LAB2, lab2(strict_off, TABLE))
    _write(second, "Иванов Иван_205", LAB4, student_notebook(LAB4))
    env = {**os.environ, "COURSE7_GRADING_DIR": str(semester)}
    done = subprocess.run(
        [sys.executable, "-m", "feedback.teacher.commands.grade", str(first), "--roster",
         str(tmp_path / "students.csv")],
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert (semester / "needs_review.csv").read_text(encoding="utf-8").count("petrova") >= 1

    def fresh(name: str) -> Path:
        copy = tmp_path / name
        shutil.copytree(semester, copy)
        return copy

    reference = fresh("reference")
    assert _grade(reference, second).returncode == 0
    expected = _tables(reference)
    counting = _grade(fresh("counting"), second, "count:0")
    targets = [
        line.split()[1] for line in counting.stderr.splitlines() if line.startswith("TARGET")
    ]
    # Каждая таблица, снимок и страница сводки; отчёт и проверенная тетрадка работы пишутся тем
    # же files.replacing, а повтор пишет их заново.
    tables = list(dict.fromkeys(name for name in targets if name.endswith(TABLES)))
    assert set(tables) >= {
        "lms_ids.csv", "needs_review.csv", "grades.csv", "changes.csv", "summary.html",
        "scores.json",
    }, targets  # fmt: skip

    work = fresh("killed")
    # Баллы начала запуска пишутся раз на снимок (повтор оборванного берёт записанные), поэтому
    # обрыв перед их записью — первым в цепочке, пока запуску ещё есть что писать.
    once = [f"write:{name}" for name in tables if name == Workspace.SCORES_START]
    every = [f"write:{name}" for name in tables if name != Workspace.SCORES_START]
    assert once, targets
    for kill in [*once, "unit:1", *every]:
        killed = _grade(work, second, kill)
        assert killed.returncode == -signal.SIGKILL, (kill, killed.stderr[-1500:])
    again = _grade(work, second)
    assert again.returncode == 0, again.stderr[-1500:]
    got = _tables(work)
    differs = sorted(
        name for name in expected.keys() | got.keys() if expected.get(name) != got.get(name)
    )
    assert (differs, _leftovers(work)) == ([], [])


def test_an_empty_folder_is_no_works_and_exit_2(tmp_path, monkeypatch, fresh_work):
    from feedback.teacher.commands import grade

    monkeypatch.setenv("COURSE7_GRADING_DIR", str(fresh_work(tmp_path / "work")))
    (tmp_path / "empty").mkdir()
    assert grade.main([str(tmp_path / "empty")]) == 2


def test_a_second_run_in_the_same_folder_does_not_start(tmp_path, fresh_work):
    from feedback.teacher.core.workspace import Workspace
    from feedback.teacher.grading.lock import grading_lock

    work = fresh_work(tmp_path / "work")
    with grading_lock(Workspace(work)):
        code = subprocess.run(
            [sys.executable, "-m", "feedback.teacher.commands.grade", str(tmp_path)],
            env={**os.environ, "COURSE7_GRADING_DIR": str(work)},
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert code.returncode == 2 and "уже идёт другой make grade" in code.stderr
    assert "Traceback" not in code.stderr


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="нужен root")
def test_a_read_only_grading_folder_is_a_russian_sentence_not_a_traceback(tmp_path, fresh_work):
    """Папка оценивания смонтирована только для чтения (как диск, подключённый без записи)."""
    work = fresh_work(tmp_path / "work")
    folder = tmp_path / "submitted"
    write_submission_at = folder / "ivanov" / LAB2 / f"{LAB2}.ipynb"
    write_submission_at.parent.mkdir(parents=True)
    write_submission_at.write_text(json.dumps(submission(LAB2)), encoding="utf-8")
    grade = f"{sys.executable} -m feedback.teacher.commands.grade {folder}"
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", f"mount --bind -o ro {work} {work} && {grade}"],
        env={**os.environ, "COURSE7_GRADING_DIR": str(work)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    assert "только для чтения" in done.stderr and "Traceback" not in done.stderr


def test_template_folders_of_killed_runs_are_removed_at_the_next_start(tmp_path):
    """Папка заготовок ядер — в /tmp (путь сокета короткий); запуск, убитый kill -9, её не
    убрал, и её убирает следующий: по pid в имени, папки живых запусков остаются."""
    from feedback.teacher.unit import warm

    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    dead = tmp_path / f"{warm.TEMPLATE_PREFIX}{finished.pid}-x1"
    alive = tmp_path / f"{warm.TEMPLATE_PREFIX}{os.getpid()}-x2"
    other = tmp_path / f"{warm.TEMPLATE_PREFIX}notes"
    for folder in (dead, alive, other):
        (folder / "cpu").mkdir(parents=True)
        (folder / "cpu" / "log").write_text("x")
    assert warm.remove_stale(tmp_path) == [dead]
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted([alive.name, other.name])

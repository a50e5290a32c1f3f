"""Оценивание класса одной командой: честные баллы, жульничество, вред, битые работы.

Весь синтетический класс (tests/support/corpus.py) оценивается один раз (фикстура
``graded_class``), а тесты читают итоги: баллы, CSV, отчёты, базу оценок и файлы
преподавателя до и после.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from corpus import LAB2, LAB4

from feedback.teacher.commands import grade as command
from feedback.teacher.core.settings import Settings
from feedback.teacher.grading import grade as grading

from notebook_runner import ROOT
from submissions import read_csv, student_notebook, submission, write_submission

pytestmark = pytest.mark.slow


def graded_lab(work):
    return work.graded_as or work.lab


def report(graded_class, work) -> str:
    lab = graded_lab(work)
    path = graded_class.work / "feedback_reports" / work.student / lab / f"{lab}.html"
    return path.read_text(encoding="utf-8")


def by_student(rows, key="student_id"):
    found = {}
    for row in rows:
        found.setdefault(row[key], []).append(row)
    return found


def test_every_work_gets_exactly_its_fair_points(graded_class):
    rows = read_csv(graded_class.work / "grades_by_task.csv")
    scores = {(r["student_id"], r["grade_id"]): float(r["auto_score"] or 0) for r in rows}
    wrong = {}
    for work in graded_class.works:
        for grade_id, points in (work.points or {}).items():
            got = scores.get((work.student, grade_id))
            if got != points:
                wrong[(work.student, grade_id)] = (points, got)
    assert wrong == {}


def test_a_hanging_function_costs_the_teachers_call_budget_not_more(graded_class):
    # В классе вызов ограничен 2 с (conftest): пять зависающих функций — около 10 с, а не 50.
    seconds = {
        (r["student_id"], r["lab"]): r["seconds"]
        for r in read_csv(graded_class.work / "timings.csv")
    }
    assert 8 < float(seconds[("r74_five_hanging", LAB4)]) < 30
    assert float(seconds[("h72_correct", LAB2)]) > 0


def test_every_executed_work_got_its_kernel_from_a_template(graded_class):
    """Под bubblewrap ядра класса — копии заготовок (feedback.teacher.unit.warm), ни одно — с
    нуля."""
    kernels = {
        (r["student_id"], r["lab"]): r["kernel"]
        for r in read_csv(graded_class.work / "timings.csv")
        if r["execution_seconds"]
    }
    assert len(kernels) > 60
    assert {key for key, kernel in kernels.items() if kernel != "template"} == set()


def test_unreadable_works_get_a_row_of_zeros_not_a_gap(graded_class):
    rows = {
        (r["student_id"], r["assignment"]): r for r in read_csv(graded_class.work / "grades.csv")
    }
    for work in graded_class.works:
        if work.points is None:
            assert float(rows[(work.student, work.lab)]["score"]) == 0
    for work in graded_class.works:
        if work.points is not None:
            total = float(rows[(work.student, graded_lab(work))]["score"])
            assert total == sum(work.points.values()), work.student


def test_every_cheat_is_flagged_and_no_honest_work_is(graded_class):
    flagged = by_student(read_csv(graded_class.work / "needs_review.csv"))
    assert {w.student for w in graded_class.works if w.flagged} == set(flagged)
    for rows in flagged.values():
        assert all(row["cell"] and row["reason"] for row in rows)


def test_problems_csv_names_every_broken_work_in_russian(graded_class):
    problems = by_student(read_csv(graded_class.work / "problems.csv"))
    for work in graded_class.works:
        texts = " | ".join(row["problem"] for row in problems.get(work.student, []))
        if work.problem:
            assert work.problem in texts, (work.student, texts)
    expected = {w.student for w in graded_class.works if w.problem}
    assert set(problems) == expected


def test_no_file_the_grading_writes_holds_the_teachers_environment(graded_class):
    """Работа читала /proc/*/environ всех процессов песочницы: метки преподавателя там нет."""
    from corpus import TEACHER_MARKER

    marker = TEACHER_MARKER.encode()
    written = [path for path in graded_class.work.rglob("*") if path.is_file()]
    assert len(written) > 50
    assert [path for path in written if marker in path.read_bytes()] == []
    report = next(graded_class.work.glob("feedback_reports/t72_reads_teacher_environment/*/*.html"))
    assert "environ" in report.read_text(encoding="utf-8")  # работа и правда читала окружения


def test_hostile_html_costs_seconds_and_file_names_are_escaped(graded_class):
    """480 КБ вложенных тегов чистятся за секунды; имя файла со скриптом — только текст."""
    from corpus import EVIL_NAME

    seconds = {
        r["student_id"]: float(r["seconds"] or 0)
        for r in read_csv(graded_class.work / "timings.csv")
    }
    for student in ("r72_nested_tags_answer", "r72_nested_tags_output"):
        assert 0 < seconds[student] < 10, (student, seconds[student])
    work = next(w for w in graded_class.works if w.student == "x72_evil_file_name")
    html = report(graded_class, work)
    assert "назван как" in html and EVIL_NAME not in html and "<img src=x" not in html
    autograded = graded_class.work / "autograded" / work.student / LAB2 / f"{LAB2}.ipynb"
    assert EVIL_NAME not in autograded.read_text(encoding="utf-8")


def test_no_check_is_judged_inside_the_sandbox(graded_class):
    """Все проверки тетрадок — зонды или пропущены: в песочнице эталонов нет, и отказ
    вердикта «здесь не выносится» в проверенной копии значил бы, что проверка выполнилась в ней.
    """
    copies = list((graded_class.work / "autograded").rglob("*.ipynb"))
    assert len(copies) > 50
    assert [path for path in copies if NO_VERDICT in path.read_text(encoding="utf-8")] == []


NO_VERDICT = "вердикт здесь не выносится"


def test_nothing_outside_the_sandbox_changed(graded_class):
    assert graded_class.before == graded_class.after
    assert (graded_class.work / "grades.csv").read_bytes() == graded_class.grades_after_run
    assert b"hacked" not in graded_class.grades_after_run


def test_manual_grades_of_others_are_untouched(graded_class):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{graded_class.work / 'gradebook.db'}") as gb:
        manual = [
            grade.manual_score
            for assignment in gb.assignments
            for submission_ in gb.assignment_submissions(assignment.name)
            for notebook in submission_.notebooks
            for grade in notebook.grades
        ]
    assert set(manual) == {None}


def test_reports_are_russian_short_and_keep_teacher_notes_out(graded_class):
    for work in graded_class.works:
        html = report(graded_class, work)
        assert "баллы:" in html
        # Трассировка остаётся только у ошибки в коде самого учащегося: ни одного кадра
        # из пакета проверок или установленных библиотек (ячейки курса — одна строка).
        assert "site-packages" not in html, work.student
        assert not re.search(r"feedback/\w+(/\w+)*\.py:\d+", html), work.student
        assert "Посмотрите вручную" not in html
        if "vnd.course7.observation" not in json.dumps(work.content, default=str):
            # у подделок наблюдения эта строка — в самом коде ответа
            assert "vnd.course7.observation" not in html, work.student
        assert len(html) < 5 * 1024**2, work.student
    huge = next(w for w in graded_class.works if w.student == "r72_huge_print")
    assert "обрезан" in report(graded_class, huge)


def test_verdicts_reach_the_report(graded_class):
    works = {w.student: w for w in graded_class.works}
    assert "ещё не реализована" in report(graded_class, works["h72_untouched"])
    assert "ответ неверный" in report(graded_class, works["h72_tuned_to_old_hidden_cases"])
    assert "только прямой проход" in report(graded_class, works["h72_forward_only"])
    assert "PARAM_COUNT" in report(graded_class, works["h74_global_reader"])
    assert "Работа не оценена" in report(graded_class, works["b72_invalid_json"])
    assert "прерывание" in report(graded_class, works["b72_ignores_interrupt"])


def test_flagged_works_are_marked_in_the_teacher_view(graded_class):
    from nbgrader.api import Gradebook

    flagged = next(w for w in graded_class.works if w.student == "c72_strict_off")
    autograded = graded_class.work / "autograded" / flagged.student / LAB2 / f"{LAB2}.ipynb"
    nb = json.loads(autograded.read_text(encoding="utf-8"))
    assert nb["cells"][0]["metadata"]["course7"] == "review-note"
    from nbconvert.filters import markdown2html

    assert "os.environ" in markdown2html("".join(nb["cells"][0]["source"]))  # как увидит человек
    with Gradebook(f"sqlite:///{graded_class.work / 'gradebook.db'}") as gb:
        submission_ = gb.find_submission_notebook(LAB2, LAB2, flagged.student)
        assert submission_.needs_manual_grade
        honest = gb.find_submission_notebook(LAB2, LAB2, "h72_correct")
        assert not any(g.needs_manual_grade for g in honest.grades if g.name.startswith("check_"))


def test_drawn_cases_are_recorded_and_differ_between_students(graded_class):
    rows = read_csv(graded_class.work / "cases.csv")
    cases = {
        r["student_id"]: r["params"] for r in rows if r["grade_id"] == "check_compute_num_flops"
    }
    assert cases["h72_correct"] != cases["h72_forward_only"]
    assert json.loads(cases["h72_correct"])["cases"][0] == [1e9, 30e3]  # открытые — первыми


def test_lms_zip_archive_is_collected_and_graded(tmp_path, monkeypatch, sandbox, fresh_work):
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(
            write_submission(tmp_path / "src", "x", LAB2, submission(LAB2)),
            f"ivanov_1234_{LAB2}.ipynb",
        )
        zf.write(
            write_submission(tmp_path / "src", "y", LAB4, student_notebook(LAB4)),
            f"sidorov/petrov_{LAB4}.ipynb",
        )
        zf.writestr(f"__MACOSX/._ivanov_1234_{LAB2}.ipynb", b"\x00")
        # Запись с испорченными данными (CRC не сойдётся) и запись с битом «зашифровано».
        zf.writestr(f"kozlov_{LAB2}.ipynb", json.dumps(submission(LAB2)) + "SPOIL-ME")
        zf.writestr(f"orlov_{LAB2}.ipynb", json.dumps(submission(LAB2)))
    raw = bytearray(archive.read_bytes())
    raw[raw.index(b"SPOIL-ME")] ^= 1
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = raw.find(signature)
        while start != -1:
            if f"orlov_{LAB2}".encode() in raw[start : start + 120]:
                raw[start + flags_at] |= 1
            start = raw.find(signature, start + 1)
    archive.write_bytes(bytes(raw))
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(fresh_work(tmp_path / "work")))
    assert command.main([str(archive), "--jobs", "2"]) == 0  # одна битая запись — не повод
    rows = read_csv(tmp_path / "work" / "grades.csv")
    scores = {(r["student_id"], r["assignment"]): float(r["score"]) for r in rows}
    assert scores[("ivanov_1234", LAB2)] == 4
    assert scores[("sidorov", LAB4)] == 0
    assert "petrov" not in {student for student, _ in scores}
    problems = {r["file"]: r["problem"] for r in read_csv(tmp_path / "work" / "problems.csv")}
    assert problems[f"kozlov_{LAB2}.ipynb"].startswith("архив повреждён")
    assert problems[f"orlov_{LAB2}.ipynb"].startswith("файл зашифрован")


def unflagged_zip(path: Path, entries: dict[str, bytes], encoding: str) -> Path:
    """Архив без флага UTF-8: имена — байты ``encoding`` (Info-ZIP в Linux, Windows)."""
    buffer = io.BytesIO()
    raws = {}
    with zipfile.ZipFile(buffer, "w") as zf:
        for index, (name, data) in enumerate(entries.items()):
            raw = name.encode(encoding)
            stub = f"@@{index:03d}@@".ljust(len(raw), "~")
            raws[stub.encode()] = raw
            zf.writestr(stub, data)
    archive = buffer.getvalue()
    for stub, raw in raws.items():
        archive = archive.replace(stub, raw)
    path.write_bytes(archive)
    return path


def test_a_windows_zip_without_the_utf8_flag_is_graded_by_name(
    tmp_path, monkeypatch, sandbox, fresh_work, capsys
):
    """cp866 без флага: имена прочитаны, id — имя, номер — в lms_ids.csv, ведомость сходится.

    Следующий архив (Info-ZIP, UTF-8 без флага), где оценить нечего: код выхода 1 и ясная
    строка, а не «завершено».
    """
    from feedback.teacher.lms import export

    work = fresh_work(tmp_path / "work")
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(work))
    folder = "Иванов Иван_301_assignsubmission_file_"
    archive = unflagged_zip(
        tmp_path / "7.2.zip",
        {
            f"{folder}/{LAB2}.ipynb": json.dumps(submission(LAB2)).encode(),
            f"Алексеев Пётр_302_assignsubmission_file_/Копия {LAB2}.ipynb": b"{not json",
        },
        "cp866",
    )
    assert command.main([str(archive), "--jobs", "1"]) == 0
    console = capsys.readouterr().err
    assert (
        "иванов_иван · lab_7_2_training_flops: автопроверка: 4 из 4, ручной оценки не ждёт"
        in console
    )  # письменные ответы не тронуты: 0 сам nbgrader
    assert "Оценено: 1 работа; не оценено: 1 файл — почему, сказано в problems.csv." in console
    scores = {(r["student_id"], r["assignment"]): r["score"] for r in read_csv(work / "grades.csv")}
    assert scores[("иванов_иван", LAB2)] == "4.0"
    assert set(scores) == {("иванов_иван", LAB2), ("алексеев_петр", LAB2)}  # 0 — не оценена
    [problem] = read_csv(work / "problems.csv")
    assert problem["student_id"] == "алексеев_петр"
    assert problem["file"] == f"Алексеев Пётр_302_assignsubmission_file_/Копия {LAB2}.ipynb"
    lms = {
        (r["student_id"], r["lab"]): r["lms_participant"] for r in read_csv(work / "lms_ids.csv")
    }
    assert lms[("иванов_иван", LAB2)] == "301"
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(
        "Идентификатор,Полное имя,Оценка,Максимальная оценка\n"
        '"Участник 301","Иван Иванов",,"6,00"\n"Участник 999","Кто-то",,"6,00"\n',
        encoding="utf-8",
    )
    filled = export.fill_worksheet(Settings(work=work), sheet, "7.2")
    assert (filled.filled, filled.untouched) == (["иванов_иван"], 1)

    nothing = unflagged_zip(
        tmp_path / "7.4.zip",
        {f"Иванов Иван_7_assignsubmission_file_/{LAB4}.ipynb": b"", "Untitled.ipynb": b"{}"},
        "utf-8",
    )
    assert command.main([str(nothing), "--jobs", "1"]) == 1
    console = capsys.readouterr()
    assert "Оценено: 0 работ; не оценено: 2 файла" in console.err
    assert "Оценивание прошло впустую: ни одна работа не оценена" in console.err
    assert "Оценки:" not in console.out
    rows = {(r["student_id"], r["file"]) for r in read_csv(work / "problems.csv")}
    assert ("иванов_иван", f"Иванов Иван_7_assignsubmission_file_/{LAB4}.ipynb") in rows
    assert set(scores) <= {
        (r["student_id"], r["assignment"]) for r in read_csv(work / "grades.csv")
    }


def test_teacher_budgets_come_from_the_environment():
    from nbformat.v4 import new_notebook

    from feedback.teacher.core.settings import Settings

    env = {"COURSE7_CALL_TIMEOUT": "3", "COURSE7_CELL_TIMEOUT": "30", "COURSE7_MEMORY_LIMIT": "2G"}
    limits = Settings.from_env(env).limits_for(new_notebook())
    assert (limits.call_seconds, limits.cell_seconds, limits.memory_bytes) == (3, 30, 2 * 1024**3)
    assert Settings.from_env({}).limits_for(new_notebook()).call_seconds == 10


def test_setup_errors_exit_with_code_2(tmp_path, monkeypatch, fresh_work):
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(fresh_work(tmp_path / "work")))
    assert command.main([str(tmp_path / "нет такой папки")]) == 2
    monkeypatch.setattr("feedback.teacher.unit.sandbox.shutil.which", lambda name: None)
    monkeypatch.setattr("feedback.teacher.unit.sandbox.sys.platform", "linux")
    (tmp_path / "empty").mkdir()
    assert command.main([str(tmp_path / "empty")]) == 2


VALIDATING = re.compile(r"Validating '([^']+)'")


def validate(paths: list[Path], invert: bool = False) -> dict[str, str]:
    """``nbgrader validate`` всех тетрадок одним вызовом; ответ nbgrader по лабораторным.

    Один вызов, а не по вызову на тетрадку: сам запуск nbgrader стоит около 3 с. Ответ о
    тетрадке идёт за строкой журнала «Validating '…'», поэтому вывод читается одним потоком.
    """
    command = [sys.executable, "-m", "nbgrader", "validate", *map(str, paths)]
    if invert:
        command.append("--invert")
    out = subprocess.run(
        command,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    parts = VALIDATING.split(out.stdout)  # [начало, путь, ответ, путь, ответ, …]
    paths_and_answers = zip(parts[1::2], parts[2::2], strict=True)
    answers = {Path(path).parent.name: text for path, text in paths_and_answers}
    assert len(answers) == len(paths), out.stdout[-4000:]
    return answers


ALL_LABS = sorted(path.parent.name for path in (ROOT / "solutions").glob("*/*.ipynb"))


def has_autograded_tests(lab: str) -> bool:
    nb = json.loads((ROOT / "solutions" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
    return any(
        cell["cell_type"] == "code"
        and cell["metadata"].get("nbgrader", {}).get("grade")
        and not cell["metadata"]["nbgrader"].get("solution")
        for cell in nb["cells"]
    )


def is_gpu_source(lab: str) -> bool:
    from feedback.teacher.core.labs import is_gpu_notebook

    path = ROOT / "solutions" / lab / f"{lab}.ipynb"
    return is_gpu_notebook(json.loads(path.read_text(encoding="utf-8")))


#: Лабораторные, которые проверяет ``nbgrader validate``: исходник проходит все проверки,
#: тетрадка учащегося (``--invert``) не проходит ни одной. GPU-лабораторные (с крошечной
#: моделью — самые долгие) здесь не выполняются второй раз: их исходники целиком выполняет
#: nbval в строгом режиме (``make nbval``; падает любая ячейка с ошибкой, а validate отвечает
#: «passes» ровно когда не упала ни одна проверка), а тетрадки учащихся — «Run all» в
#: tests/project/test_student_notebooks.py (каждая проверка показывает «не пройдено»).
VALIDATED_LABS = [lab for lab in ALL_LABS if not is_gpu_source(lab) and has_autograded_tests(lab)]


@pytest.fixture(scope="module")
def validated() -> dict[str, dict[str, str]]:
    """Ответы ``nbgrader validate``: на исходники и (с ``--invert``) на тетрадки учащихся."""
    return {
        "source": validate([ROOT / "solutions" / lab / f"{lab}.ipynb" for lab in VALIDATED_LABS]),
        "student": validate(
            [ROOT / "notebooks" / lab / f"{lab}.ipynb" for lab in VALIDATED_LABS], invert=True
        ),
    }


@pytest.mark.xdist_group("nbgrader_validate")  # оба вызова nbgrader — в одном процессе
@pytest.mark.parametrize("lab", VALIDATED_LABS)
def test_nbgrader_validate_passes_sources_and_fails_student_notebooks(lab, validated):
    assert "Success! Your notebook passes all the tests." in validated["source"][lab]
    assert "Success! The notebook does not pass any tests." in validated["student"][lab]


def grade_small_class(
    work: Path,
    folder: Path,
    monkeypatch,
    fresh_work,
    jobs: int = 1,
    scheduler: str | None = None,
) -> dict[str, bytes]:
    """Оценивает маленький класс и возвращает все его итоги: таблицы, отчёты, тетрадки."""
    from corpus import class_works

    targets = dict.fromkeys(
        ("secret", "gradebook", "grades", "package_file", "other_submission"), "/нет"
    )
    chosen = {"h72_correct", "h72_forward_only", "c72_strict_off", "b72_empty_file",
              "h74_global_reader", "h72_helper_cell"}  # fmt: skip
    if not folder.exists():
        for work_item in class_works(targets):
            if work_item.student in chosen:
                work_item.write(folder)
    fresh_work(work)
    (work / ".grading-secret").write_text("один секрет на все запуски")
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(work))
    grading.grade(folder, jobs=jobs, scheduler=scheduler)
    outputs = {}
    for path in sorted(work.rglob("*")):
        if (
            path.is_file()
            and path.suffix in (".csv", ".html", ".ipynb")
            and path.name != "timings.csv"  # секунды на работу от запуска к запуску разные
            and "release" not in path.parts
        ):
            outputs[str(path.relative_to(work))] = path.read_bytes()
    return outputs


#: Случайные id таблиц pandas Styler в выводе кода учащегося: меняются при каждом выполнении.
STYLER_ID = re.compile(rb"T_[0-9a-f]{5}")
#: Раздел сводки «Самые долгие работы» — секунды, как timings.csv: от запуска к запуску разные.
SLOWEST = re.compile(rb'<section id="slowest">.*?</section>', re.DOTALL)
#: «Состояние на …» — минута, когда страница записана: запуски в разные минуты дают разное.
AS_OF = re.compile(rb'<p class="as-of">[^<]*?\): ')


def _stable(page: bytes) -> bytes:
    """Страница без того, что зависит от скорости машины, а не от оценивания."""
    return AS_OF.sub(b"", SLOWEST.sub(b"", STYLER_ID.sub(b"T_", page)))


def verdicts(notebook: bytes) -> list:
    cells = json.loads(notebook)["cells"]
    return [c.get("outputs") for c in cells if c["metadata"].get("nbgrader", {}).get("points")]


def assert_same_grading(one: dict[str, bytes], other: dict[str, bytes]) -> None:
    assert set(one) == set(other) and len(one) > 10
    for name in one:
        if name.endswith(".csv"):
            assert one[name] == other[name], name
        elif name.endswith(".html"):
            assert _stable(one[name]) == _stable(other[name]), name
        else:  # проверенная тетрадка: вердикты тестов те же (вывод кода учащегося может меняться)
            assert verdicts(one[name]) == verdicts(other[name]), name


def test_jobs_and_dask_do_not_change_scores_reports_or_tables(
    tmp_path, monkeypatch, sandbox, fresh_work
):
    from distributed import LocalCluster

    from feedback.teacher.unit.dask_tls import issue, node_security

    folder = tmp_path / "class"
    one = grade_small_class(tmp_path / "jobs1", folder, monkeypatch, fresh_work, jobs=1)
    two = grade_small_class(tmp_path / "jobs2", folder, monkeypatch, fresh_work, jobs=2)
    # Как у преподавателя: планировщик и рабочие — только по TLS с сертификатами курса.
    certs = issue(tmp_path / "dask-certs").folder
    monkeypatch.setenv("COURSE7_DASK_CERTS", str(certs))
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        protocol="tls://",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        security=node_security(certs),
    ) as cluster:
        assert cluster.scheduler_address.startswith("tls://")
        dask = grade_small_class(
            tmp_path / "dask", folder, monkeypatch, fresh_work, scheduler=cluster.scheduler_address
        )
    assert_same_grading(one, two)
    assert_same_grading(one, dask)

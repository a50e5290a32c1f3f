"""Оценки для LMS: grades.csv, moodle_grades.csv, ведомость Moodle, архив отзывов, changes.csv.

База оценок здесь строится через API nbgrader из выпуска notebooks/ (без песочницы и
``generate_assignment``), а результаты работ записывает настоящий ``gradebook.record``.
Один медленный тест в конце проходит весь путь: архивы Moodle двух лабораторных →
``make grade`` → ручная оценка → ``make feedback`` → ``make export`` → повторное оценивание.
Архив отзывов читается так, как его читает импорт Moodle (tests/support/moodle_support.py).
"""

from __future__ import annotations

import copy
import csv
import io
import json
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest
from moodle_support import download_zip, feedback_import

from feedback.teacher.commands import export as export_command
from feedback.teacher.commands import feedback as feedback_command
from feedback.teacher.core import files, tables
from feedback.teacher.core.results import TaskOutcome, UnitResult
from feedback.teacher.core.settings import Settings
from feedback.teacher.core.tables import ChangeRow, LmsIdRow, Problem, TimingRow
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.grading import grade as grading
from feedback.teacher.intake import roster
from feedback.teacher.lms import handback
from feedback.teacher.lms.export import fill_worksheet, join_records, moodle_grades, parse_records
from feedback.teacher.pages import reports
from feedback.teacher.records import class_tables, gradebook, ledger
from feedback.teacher.records.class_tables import ClassTables
from feedback.teacher.records.gradebook import TaskScore
from feedback.teacher.records.ledger import Graded, changes

from notebook_runner import ROOT
from submissions import load, record_unit, submission

LAB2, LAB4 = "lab_7_2_training_flops", "lab_7_4_gpu_memory"
TITLE2 = "Лабораторная 7.2. Оцените FLOPs обучения"
RELEASES = {path.parent.name: load(path) for path in sorted((ROOT / "notebooks").glob("*/*.ipynb"))}

ROSTER = (
    "id,first_name,last_name,email\n"
    "ivanov,Иван,Иванов,ivanov@example.org\n"
    'petrova,"=HYPERLINK(""x"")","Петрова, Анна ""Аня""",petrova@example.org\n'
    "alekseev,Пётр,Алексеев,\n"
)


def result(student: str, lab: str, scores=None, answers=()) -> UnitResult:
    """Результат единицы: проверки — полные баллы (или ``scores``), ответы — в ``answers``."""
    nb = copy.deepcopy(RELEASES[lab])
    tests = {}
    for cell in nb["cells"]:
        grading_ = cell["metadata"].get("nbgrader", {})
        if grading_.get("grade_id") in answers:
            cell["source"] = "Мой ответ на вопрос."
        if grading_.get("grade") and not grading_.get("solution"):
            points = grading_["points"]
            score = (scores or {}).get(grading_["grade_id"], points)
            tests[grading_["grade_id"]] = TaskOutcome(score=score, points=points)
    return UnitResult(student, lab, nbformat.from_dict(nb), tests)


def set_manual(work: Path, student: str, lab: str, grade_id: str, score: float) -> None:
    """Как formgrader: ручная оценка, и задание больше не ждёт проверки."""
    with gradebook._open(Workspace(work)) as gb:
        found = gb.find_grade(grade_id, lab, lab, student)
        found.manual_score = score
        found.needs_manual_grade = False
        gb.db.commit()


@pytest.fixture
def work(tmp_path, monkeypatch, fresh_work):
    """Класс: Иванов сдал 7.2 (ответ ждёт проверки) и 7.4, Петрова — 7.2, Алексеев — ничего."""
    work = fresh_work(tmp_path / "work")
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(work))
    Workspace(work).roster.write_text(ROSTER, encoding="utf-8")
    people = roster.load_roster(Workspace(work).roster)
    gradebook.import_students(Workspace(work), [p.fields for p in people.people.values()])
    record_unit(Workspace(work), result("ivanov", LAB2, answers={"reflection_scaling"}))
    record_unit(Workspace(work), result("petrova", LAB2, {"check_final_results": 0.5}))
    record_unit(Workspace(work), result("ivanov", LAB4))
    roster.save_participants(
        Workspace(work),
        {("ivanov", LAB2): "101", ("petrova", LAB2): "102", ("ivanov", LAB4): "205"},
    )
    return work


def rows_of(path: Path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


# --------------------------------------------------------------------------- grades.csv


def test_grades_csv_has_rows_only_for_submitted_works_and_parses_back(work):
    grades, by_task = gradebook.export(Workspace(work))
    header, *rows = rows_of(grades)
    assert header == tables.header(tables.GradeRow)
    assert all(len(row) == len(header) for row in rows)
    found = {(r[0], r[3]): dict(zip(header, r, strict=True)) for r in rows}
    assert set(found) == {(LAB2, "ivanov"), (LAB2, "petrova"), (LAB4, "ivanov")}  # ни одного 0
    petrova = found[(LAB2, "petrova")]
    assert petrova["last_name"] == 'Петрова, Анна "Аня"'  # запятая и кавычки — в одной ячейке
    assert petrova["first_name"] == '\'=HYPERLINK("x")'  # не формула
    assert (petrova["score"], petrova["max_score"], petrova["pending_manual_points"]) == (
        "2.5",
        "6.0",
        "0.0",
    )
    ivanov = found[(LAB2, "ivanov")]
    assert (ivanov["score"], ivanov["pending_manual_points"]) == ("4.0", "1.0")
    task_header, *tasks = rows_of(by_task)
    scores = {(r[0], r[1], r[2]): dict(zip(task_header, r, strict=True)) for r in tasks}
    pending = scores[("ivanov", LAB2, "reflection_scaling")]
    assert (pending["auto_score"], pending["manual_score"], pending["score"]) == ("", "", "")
    assert scores[("ivanov", LAB2, "reflection_backward")]["score"] == "0.0"  # не тронут


def test_make_feedback_refreshes_grades_after_manual_grading(work, capsys):
    gradebook.export(Workspace(work))
    set_manual(work, "ivanov", LAB2, "reflection_scaling", 1)
    assert feedback_command.main([]) == 0
    rows = {(r[0], r[3]): r for r in rows_of(work / "grades.csv")[1:]}
    assert rows[(LAB2, "ivanov")][9:] == ["5.0", "6.0", "0.0", "0.0"]
    assert (work / "feedback_reports" / "ivanov" / LAB2 / f"{LAB2}.html").is_file()
    assert "Оценки обновлены" in capsys.readouterr().out


# --------------------------------------------------------------------------- moodle_grades.csv


def test_moodle_grades_is_empty_not_zero_where_nothing_is_final(work):
    target, strangers = moodle_grades(Settings(work=work))
    assert strangers == []
    data = target.read_bytes()
    assert data.startswith(b"email,id,first_name,last_name,")  # UTF-8 без BOM
    header, *rows = rows_of(target)
    titles = {lab.id: lab.title for lab in Settings().labs}
    assert header[4:6] == [
        titles["lab_7_1_compare_models"],
        f"{titles['lab_7_1_compare_models']} — отзыв",
    ]
    assert len(header) == 4 + 2 * len(titles)
    table = {row[1]: dict(zip(header, row, strict=True)) for row in rows}
    assert [row[1] for row in rows] == ["ivanov", "petrova", "alekseev"]  # порядок списка
    assert table["petrova"][TITLE2] == "2.5"  # десятичная точка
    assert table["petrova"][f"{TITLE2} — отзыв"] == (
        f"{TITLE2}: 2,5 балла из 6. Подробный отчёт — файл {LAB2}.html."
    )
    assert table["ivanov"][TITLE2] == ""  # ждёт ручной проверки
    assert (
        "ждёт ручной проверки — ещё 1 балл из 6; пока 4 балла"
        in table["ivanov"][f"{TITLE2} — отзыв"]
    )
    assert table["ivanov"]["Лабораторная 7.4. Оцените память GPU"] == "5"  # проверки по 1 баллу
    assert all(table["alekseev"][title] == "" for title in titles.values())  # не сдавал
    assert table["petrova"]["first_name"] == '\'=HYPERLINK("x")'
    set_manual(work, "ivanov", LAB2, "reflection_scaling", 1)
    moodle_grades(Settings(work=work))
    table = {row[1]: dict(zip(header, row, strict=True)) for row in rows_of(target)[1:]}
    assert table["ivanov"][TITLE2] == "5"


def test_export_command_writes_everything_and_names_strangers(work, capsys):
    record_unit(Workspace(work), result("old_folder_id", LAB2))
    assert export_command.main([]) == 0
    out = capsys.readouterr().out
    assert "old_folder_id" in out and "moodle_grades.csv" in out
    assert (Workspace(work).moodle_grades).is_file() and (work / "grades.csv").is_file()


def test_export_without_a_gradebook_or_with_a_wrong_worksheet_is_exit_2(tmp_path, work, capsys):
    (tmp_path / "sheet.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    assert export_command.main(["--worksheet", str(tmp_path / "sheet.csv"), "--lab", "7.2"]) == 2
    assert "это не ведомость оценок задания Moodle" in capsys.readouterr().err
    assert export_command.main(["--worksheet", str(tmp_path / "sheet.csv"), "--lab", "7.9"]) == 2
    (work / "gradebook.db").unlink()
    assert export_command.main([]) == 2
    assert "сначала make grade" in capsys.readouterr().err


# --------------------------------------------------------------------------- ведомость Moodle


RUSSIAN_HEADER = (
    'Идентификатор,"Полное имя","Адрес электронной почты",Статус,Оценка,'
    '"Максимальная оценка","Оценка может быть изменена",'
    '"Последнее изменение (представленный ответ)","Последнее изменение (оценка)",'
    '"Отзыв в виде комментария"'
)
RUSSIAN_SHEET = (
    RUSSIAN_HEADER
    + "\n"
    + '"Участник 101","Иван Иванов",ivanov@example.org,"Ответы для оценки",,"6,00",Да,'
    '"понедельник, 2 сентября 2024, 10:00",-,\n'
    + '"Участник 103","Пётр Алексеев",,"Нет ответа",,"6,00",Да,-,-,\n'
    + '"Участник 102","Анна Петрова",petrova@example.org,"Ответы для оценки",,"6,00",Да,'
    '"вторник, 3 сентября 2024, 11:00",-,\n'
)


def test_the_worksheet_changes_only_grade_and_feedback_of_matching_rows(work, tmp_path):
    set_manual(work, "ivanov", LAB2, "reflection_scaling", 1)
    sheet = tmp_path / "Оценки-Курс 7-Лабораторная 7.2.csv"
    sheet.write_bytes(RUSSIAN_SHEET.encode())
    done = fill_worksheet(Settings(work=work), sheet, "7.2")
    assert done.path == Workspace(work).worksheet(LAB2)
    assert sheet.read_bytes() == RUSSIAN_SHEET.encode()  # файл преподавателя не тронут
    assert (done.filled, done.pending, done.locked, done.untouched) == (
        ["ivanov", "petrova"],
        [],
        [],
        1,
    )
    before = list(csv.reader(io.StringIO(RUSSIAN_SHEET)))
    after = rows_of(done.path)
    assert len(after) == len(before)
    expected = {
        (1, 4): "5,00",
        (1, 9): f"{TITLE2}: 5 баллов из 6. Подробный отчёт — файл {LAB2}.html.",
        (3, 4): "2,50",
        (3, 9): f"{TITLE2}: 2,5 балла из 6. Подробный отчёт — файл {LAB2}.html.",
    }
    for r, (old_row, new_row) in enumerate(zip(before, after, strict=True)):
        assert len(new_row) == len(old_row)
        for c, (old, new) in enumerate(zip(old_row, new_row, strict=True)):
            assert new == expected.get((r, c), old), (r, c)
    text = done.path.read_text(encoding="utf-8")
    lines, original = text.split("\n"), RUSSIAN_SHEET.split("\n")
    assert lines[0] == original[0] and lines[2] == original[2]  # байт в байт
    assert "\r" not in text and text.endswith("\n")
    assert lines[1].endswith(
        ',"6,00",Да,"понедельник, 2 сентября 2024, 10:00",-,' + (f'"{expected[(1, 9)]}"')
    )


def test_an_english_worksheet_keeps_its_dialect_and_teacher_comments(work, tmp_path):
    sheet = tmp_path / "grades.csv"
    text = (
        '\ufeffIdentifier,"Full name","Email address",Status,Grade,"Maximum Grade",'
        '"Grade can be changed","Last modified (submission)","Last modified (grade)",'
        '"Feedback comments"\r\n'
        '"Participant 102","Anna Petrova",petrova@example.org,Submitted,,100.00,Yes,-,-,'
        '"Good start.\nSee you."\r\n'
        '"Participant 101","Ivan Ivanov",ivanov@example.org,Submitted,,100.00,Yes,-,-,\r\n'
        '"Participant 205","Ivan Ivanov",ivanov@example.org,Submitted,,100.00,No,-,-,\r\n'
    )
    sheet.write_bytes(text.encode())
    done = fill_worksheet(Settings(work=work), sheet)  # лабораторная — по номерам участников
    assert done.lab == LAB2 and done.scaled == 100
    assert (done.filled, done.pending) == (["petrova"], ["ivanov"])
    raw = done.path.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbfIdentifier,")
    records = raw.decode("utf-8-sig").split("\r\n")
    assert records[0] == text[1:].split("\r\n")[0]
    assert records[2:] == text.split("\r\n")[2:]  # ждёт проверки и чужая лабораторная — как были
    row = next(csv.reader(io.StringIO(records[1] + "\r\n" + records[2])))
    assert row[4] == "41.67"  # 2,5 из 6 → из 100
    assert (
        row[9]
        == f"Good start.\nSee you.\n{TITLE2}: 2,5 балла из 6. Подробный отчёт — файл {LAB2}.html."
    )
    again = tmp_path / "again.csv"  # повторная выгрузка: свой абзац заменяется, а не копится
    again.write_bytes(raw)
    fill_worksheet(Settings(work=work), again, LAB2)
    row = next(
        csv.reader(io.StringIO(done.path.read_bytes().decode("utf-8-sig").split("\r\n", 1)[1]))
    )
    assert row[9].count(TITLE2) == 1 and row[9].startswith("Good start.")


def test_a_locked_grade_is_not_touched(work, tmp_path):
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(
        RUSSIAN_HEADER + '\n"Участник 102","Анна Петрова",,x,,"6,00",Нет,-,-,\n', encoding="utf-8"
    )
    done = fill_worksheet(Settings(work=work), sheet, LAB2)
    assert done.locked == ["petrova"] and done.filled == []
    assert done.path.read_bytes() == sheet.read_bytes()


@pytest.mark.parametrize(
    "text",
    [
        'a,"b""c","x\ny"\r\n1,2,\n3',
        "\n\n,,\n",
        '"unterminated,\n',
        'a;b;"c;d"\n',
        "",
    ],
)
def test_raw_records_join_back_to_the_same_text(text):
    delimiter = ";" if ";" in text else ","
    records = parse_records(text, delimiter)
    assert join_records(records, delimiter) == text
    if text and "unterminated" not in text:
        expected = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
        assert [[c.value for c in r.cells] for r in records if r.cells] == [
            row if row else [""] for row in expected
        ]


# --------------------------------------------------------------------------- архив отзывов


def download_folders(download: Path) -> dict[int, str]:
    """Папки участников в архиве «Скачать все ответы»: номер участника → папка."""
    with zipfile.ZipFile(download) as zf:
        folders = {name.split("/")[0] for name in zf.namelist()}
    return {int(roster.parse_lms_name(folder).participant): folder for folder in folders}


def assert_feedback_zip_matches_download(work: Path, lab: str, download: Path) -> None:
    """Импорт Moodle отдаёт каждый отчёт его владельцу, и папка — как в скачанном архиве."""
    in_moodle = download_folders(download)  # все участники задания, и без отчёта
    owners = {
        int(number): student
        for (student, name), number in roster.read_participants(Workspace(work)).items()
        if name == lab
    }
    reported = {p.parent.parent.name for p in (work / "feedback_reports").glob(f"*/{lab}/*.html")}
    archive = Workspace(work).feedback_archive(lab)
    imported, skipped = feedback_import(archive, set(in_moodle))
    assert skipped == []
    assert sorted(item.participant for item in imported) == sorted(
        number for number, student in owners.items() if student in reported
    )
    for item in imported:
        student = owners[item.participant]
        assert item.folder == in_moodle[item.participant], student
        assert item.filename.lstrip("/") == f"{lab}.html"
        report = work / "feedback_reports" / student / lab / f"{lab}.html"
        assert item.data == report.read_bytes()
    with zipfile.ZipFile(archive) as zf:
        assert all(info.flag_bits & handback.UTF8_FLAG for info in zf.infolist())


def report_of(work: Path, student: str, lab: str) -> bytes:
    return Workspace(work).learner_report(student, lab).read_bytes()


def test_feedback_zip_has_a_folder_per_learner_with_a_report_and_a_number(work, capsys):
    record_unit(Workspace(work), result("sidorov", LAB2))  # отчёт есть, номера участника нет
    reports.rewrite_all(Workspace(work))
    # Папки из скачанного архива: с «_» в имени Moodle прочёл бы «Ivan» как номер, у другой —
    # чужой номер. Обе составляются заново из имени и номера.
    files.write_text(
        Workspace(work).lms_folders,
        json.dumps(
            {
                LAB2: {
                    "ivanov": "Ivanov_Ivan_101_assignsubmission_file_",
                    "petrova": "Анна Петрова_999_assignsubmission_file_",
                },
                LAB4: {"ivanov": "Иванов Иван_205_assignsubmission_file"},
            }
        ),
    )
    target = Workspace(work).feedback_archive(LAB2)
    target.parent.mkdir(parents=True)
    target.write_bytes(b"old")
    assert export_command.main([]) == 0
    out = capsys.readouterr().out
    assert f"{target} (2 отчёта)" in out
    assert "отчёт не в архиве: sidorov" in out
    imported, skipped = feedback_import(target, {101, 102, 103})
    assert skipped == []
    got = {item.participant: item for item in imported}
    assert sorted(got) == [101, 102]
    assert got[101].data == report_of(work, "ivanov", LAB2)
    assert got[102].data == report_of(work, "petrova", LAB2)
    assert got[101].folder == "Иван Иванов_101_assignsubmission_file_"
    # Имя — из списка учащихся (имя, фамилия); кавычки Moodle из имён папок убирает.
    assert got[102].folder == "=HYPERLINK(x) Петрова, Анна Аня_102_assignsubmission_file_"
    (lab4,) = feedback_import(Workspace(work).feedback_archive(LAB4), {205})[0]
    assert lab4.folder == "Иванов Иван_205_assignsubmission_file"  # как в архиве: Moodle 4.1+
    assert not list(target.parent.glob(f"*{files.TEMP_SUFFIX}"))

    # Один номер у двух учащихся (lms_ids.csv поправлен вручную): ни один отчёт не уходит.
    roster.save_participants(Workspace(work), {("sidorov", LAB2): "101"})
    (done,) = [item for item in handback.build_all(Workspace(work)) if item.lab == LAB2]
    assert done.shared_number == ["ivanov", "sidorov"] and list(done.folders) == ["petrova"]


def test_a_broken_feedback_zip_write_keeps_the_previous_archive(work, monkeypatch):
    reports.rewrite_all(Workspace(work))
    (first,) = [item for item in handback.build_all(Workspace(work)) if item.lab == LAB2]
    before = first.path.read_bytes()
    (work / "feedback_reports" / "ivanov" / LAB2 / f"{LAB2}.html").write_text("новый", "utf-8")

    def broken(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", broken)
    with pytest.raises(OSError):
        handback.build_all(Workspace(work))
    assert first.path.read_bytes() == before
    assert not list(first.path.parent.glob(f"*{files.TEMP_SUFFIX}"))


IVANOV_101 = "Иванов Иван_101_assignsubmission_file"


@pytest.mark.parametrize(
    ("path", "folder"),
    [
        (f"{IVANOV_101}_/lab.ipynb", f"{IVANOV_101}_"),
        (f"{IVANOV_101}/a/lab.ipynb", IVANOV_101),  # Moodle 4.1 и новее
        (f"{IVANOV_101}_lab.ipynb", f"{IVANOV_101}_"),  # «Скачать ответы в папках» выключено
        ("Участник_7_assignsubmission_file_/lab.ipynb", "Участник_7_assignsubmission_file_"),
        ("ivanov/lab_7_2_training_flops/lab.ipynb", None),
        ("lab.ipynb", None),
    ],
)
def test_the_moodle_folder_of_an_upload(path, folder):
    assert handback.submission_folder(path) == folder


@pytest.mark.parametrize(
    "name", ["Иван Иванов", 'Петрова, Анна "Аня"', "a_b/c\\d:e*f?g", "", "  \t", "_"]
)
def test_a_made_up_folder_is_read_by_moodle_as_that_participant(tmp_path, name):
    folder = handback.made_up_folder(name, "42")
    archive = tmp_path / "feedback.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"{folder}/{LAB2}.html", "отчёт")
    ((item,), skipped) = feedback_import(archive, {42})
    assert skipped == [] and item.folder == folder and item.filename == f"/{LAB2}.html"
    assert folder.split("_")[0].strip() and "/" not in folder


# --------------------------------------------------------------------------- changes.csv


def scores(auto=2.0, manual=None, needs=False, upload="a"):
    return Graded(upload, {"check": TaskScore(auto, manual, 2.0, needs)})


@pytest.mark.parametrize(
    ("before", "after", "graded_now", "row"),
    [
        (scores(2.0), scores(0.0), True, ["2", "0", "изменилась проверка"]),
        (scores(2.0), scores(0.0, upload="b"), True, ["2", "0", "новая работа"]),
        (
            scores(None, needs=True),
            scores(None, 1.0, needs=False),
            False,
            ["", "1", "ручная оценка"],
        ),
        (
            scores(2.0, upload=None),
            scores(1.0),
            True,
            ["2", "1", "оценено заново (прежний файл не записан)"],
        ),
        (
            scores(2.0),
            scores(2.0, needs=True),
            True,
            ["2", "", "изменилась проверка"],
        ),  # под подозрением
        (scores(2.0), scores(2.0, upload="b"), True, None),  # новая работа, те же баллы
    ],
)
def test_changes_say_what_changed_and_why(before, after, graded_now, row):
    key = ("ivanov", LAB2)
    found = changes({key: before}, {key: after}, {key} if graded_now else set())
    assert found == ([] if row is None else [ChangeRow("ivanov", LAB2, "check", *row)])
    assert changes({}, {key: after}, {key}) == []  # оценена впервые — не изменение


def test_a_manual_grade_given_after_the_snapshot_and_taken_back_is_a_change():
    """Оценку поставили в formgrader после make grade, учащийся переписал ответ, и следующий
    make grade её снял: в снимке её не было, но строка есть — по баллам начала запуска."""
    key = ("ivanov", LAB2)
    snapshot = {key: scores(None, needs=True)}  # после make grade: ждёт проверки
    graded = {key: scores(None, 1.0, needs=False)}  # в начале следующего: оценка в formgrader
    reopened = {key: scores(None, needs=True, upload="b")}  # ответ изменён: снова ждёт
    assert changes(snapshot, reopened, {key}, graded) == [
        ChangeRow("ivanov", LAB2, "check", "1", "", ledger.ANSWER_CHANGED)
    ]
    assert changes(snapshot, reopened, {key}) == []  # без баллов начала запуска её не видно
    kept = {key: scores(None, 1.0, needs=False, upload="b")}  # ответ тот же: оценка осталась
    assert changes(snapshot, kept, {key}, graded) == [
        ChangeRow("ivanov", LAB2, "check", "", "1", "ручная оценка")
    ]


def test_tables_keep_rows_of_earlier_labs(tmp_path):
    """Архив 7.4 после архива 7.2: строки 7.2 остаются, а оценённая заново работа — своя."""

    def timing(student, lab, seconds):
        return TimingRow.measured(student, lab, seconds)

    first = [Problem("ivanov", LAB2, "a.ipynb", "пустой файл"), Problem("?", LAB2, "b", "кто?")]
    class_tables.write(
        Workspace(tmp_path),
        ClassTables(
            problems=first, timings=[timing("ivanov", LAB2, 1.0), timing("petrova", LAB2, 2.0)]
        ),
    )
    class_tables.write(
        Workspace(tmp_path),
        ClassTables(
            problems=[Problem("petrova", LAB4, "c.ipynb", "пустой файл")],
            timings=[timing("petrova", LAB2, 3.0), timing("petrova", LAB4, 4.0)],
        ),
    )
    assert rows_of(tmp_path / "problems.csv")[1:] == [  # «?» 7.2 ушла: 7.2 оценивалась снова
        ["ivanov", LAB2, "a.ipynb", "пустой файл"],
        ["petrova", LAB4, "c.ipynb", "пустой файл"],
    ]
    assert rows_of(tmp_path / "timings.csv")[1:] == [  # без замеров выполнения и памяти
        ["ivanov", LAB2, "1.0", "", "", ""],
        ["petrova", LAB2, "3.0", "", "", ""],
        ["petrova", LAB4, "4.0", "", "", ""],
    ]


# --------------------------------------------------------------------------- весь путь


@pytest.mark.slow
def test_a_semester_round_trip_through_moodle(tmp_path, monkeypatch, sandbox, capsys):
    """Два архива Moodle (у Иванова в них разные номера), список, ручная оценка, Moodle, регрейд."""
    work = tmp_path / "work"
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(work))
    (tmp_path / "students.csv").write_text(ROSTER, encoding="utf-8")
    answered = submission(LAB2, {"reflection_scaling": "Растёт линейно с числом токенов."})
    zip2 = download_zip(
        tmp_path / "7.2.zip",
        LAB2,
        {
            "Иванов Иван_101_assignsubmission_file_": answered,
            'Петрова, Анна "Аня" =HYPERLINK("x")_102_assignsubmission_file_': submission(LAB2),
            "Участник_150_assignsubmission_file_": submission(LAB2),
            "=cmd Олег_151_assignsubmission_file_": submission(LAB2),
        },
    )
    zip4 = download_zip(
        tmp_path / "7.4.zip",
        LAB4,
        {
            "Иван Иванов_205_assignsubmission_file_": submission(LAB4),
            # Moodle 4.1 и новее называет папки без «_» в конце.
            "Алексеев Петр_206_assignsubmission_file": submission(LAB4),
        },
    )
    started = time.monotonic()
    grading.grade(zip2, jobs=2, roster_file=tmp_path / "students.csv")
    graded_at = time.monotonic()
    first = {(r[0], r[3]): r for r in rows_of(work / "grades.csv")[1:]}
    assert set(first) == {(LAB2, "ivanov"), (LAB2, "petrova")}
    problems = rows_of(work / "problems.csv")[1:]
    assert [(p[0], p[1]) for p in problems] == [("?", LAB2), ("?", LAB2)]  # не под выдуманным id
    assert problems[0][2].startswith("'=cmd Олег_151")  # имя папки — не формула
    assert "«=cmd Олег» нет в списке учащихся" in problems[0][3]
    assert "анонимная работа (участник 150)" in problems[1][3]

    grading.grade(zip4, jobs=2)  # список уже в рабочей папке; 7.2 не оценивается заново
    grades = {(r[0], r[3]): r for r in rows_of(work / "grades.csv")[1:]}
    assert {key: grades[key] for key in first} == first  # 7.2 осталась как была
    assert set(grades) == {
        (LAB2, "ivanov"),
        (LAB2, "petrova"),
        (LAB4, "ivanov"),
        (LAB4, "alekseev"),
    }
    assert {(r[0], r[1]) for r in rows_of(work / "grades_by_task.csv")[1:]} == {
        ("ivanov", LAB2), ("petrova", LAB2), ("ivanov", LAB4), ("alekseev", LAB4)
    }  # fmt: skip
    assert [(p[0], p[1]) for p in rows_of(work / "problems.csv")[1:]] == [("?", LAB2)] * 2
    assert {(r[0], r[1]) for r in rows_of(work / "timings.csv")[1:]} == {
        ("ivanov", LAB2), ("petrova", LAB2), ("ivanov", LAB4), ("alekseev", LAB4)
    }  # fmt: skip
    assert rows_of(Workspace(work).table(LmsIdRow))[1:] == [
        ["alekseev", LAB4, "206"],
        ["ivanov", LAB2, "101"],
        ["ivanov", LAB4, "205"],
        ["petrova", LAB2, "102"],
    ]
    assert grades[(LAB2, "ivanov")][11] == "1.0"  # ответ ждёт ручной проверки
    assert grades[(LAB2, "petrova")][5] == '\'=HYPERLINK("x")'

    manual_at = time.monotonic()
    set_manual(work, "ivanov", LAB2, "reflection_scaling", 1)
    with gradebook._open(Workspace(work)) as gb:
        gb.find_comment("reflection_scaling", LAB2, LAB2, "ivanov").manual_comment = "Верно."
        gb.db.commit()
    assert feedback_command.main([]) == 0
    sheet = tmp_path / "sheet.csv"
    sheet.write_text(
        RUSSIAN_HEADER + '\n"Участник 101","Иван Иванов",,x,,"6,00",Да,-,-,\n', encoding="utf-8"
    )
    assert export_command.main(["--worksheet", str(sheet), "--lab", "7.2"]) == 0
    finished = time.monotonic()
    header, *rows = rows_of(Workspace(work).moodle_grades)
    moodle = {row[1]: dict(zip(header, row, strict=True)) for row in rows}
    assert moodle["ivanov"][TITLE2] == "5"  # 4 за проверки и 1 вручную
    assert moodle["petrova"][TITLE2] == "4"
    assert moodle["alekseev"][TITLE2] == ""  # не сдавал
    assert moodle["alekseev"]["Лабораторная 7.4. Оцените память GPU"] == "5"  # проверки по 1
    assert rows_of(Workspace(work).worksheet(LAB2))[1][4] == "5,00"
    # Архив отзывов: Moodle раздаёт отчёты по папкам — тем же, что в скачанном архиве.
    for lab, download in ((LAB2, zip2), (LAB4, zip4)):
        assert_feedback_zip_matches_download(work, lab, download)

    # Проверка «исправлена»: в прошлый раз она давала 0 за таблицу FLOPs, теперь — 2.
    recording = gradebook.recording

    def old_check(workspace_, result_, *args, **kwargs):
        tests = {**result_.tests}
        tests["check_final_results"] = replace(tests["check_final_results"], score=0.0)
        return recording(workspace_, replace(result_, tests=tests), *args, **kwargs)

    monkeypatch.setattr(grading.gradebook, "recording", old_check)
    grading.grade(zip2, jobs=2)
    assert rows_of(work / "changes.csv")[1:] == [
        ["ivanov", LAB2, "check_final_results", "2", "0", "изменилась проверка"],
        ["ivanov", LAB2, "reflection_scaling", "", "1", "ручная оценка"],
        ["petrova", LAB2, "check_final_results", "2", "0", "изменилась проверка"],
    ]
    monkeypatch.setattr(grading.gradebook, "recording", recording)
    grading.grade(zip2, jobs=2)
    assert rows_of(work / "changes.csv") == [
        ["student_id", "lab", "task", "old_points", "new_points", "why"],
        ["ivanov", LAB2, "check_final_results", "0", "2", "изменилась проверка"],
        ["petrova", LAB2, "check_final_results", "0", "2", "изменилась проверка"],
    ]
    with gradebook._open(Workspace(work)) as gb:
        assert gb.find_grade("reflection_scaling", LAB2, LAB2, "ivanov").manual_score == 1
        comment = gb.find_comment("reflection_scaling", LAB2, LAB2, "ivanov")
        assert comment.manual_comment == "Верно."
    grades = {(r[0], r[3]): r for r in rows_of(work / "grades.csv")[1:]}
    assert grades[(LAB2, "ivanov")][9:] == ["5.0", "6.0", "0.0", "0.0"]
    capsys.readouterr()
    with capsys.disabled():
        print(
            f"\nпервый архив: {graded_at - started:.1f} с; ручная оценка → make feedback → "
            f"make export: {finished - manual_at:.1f} с; весь путь до выгрузки: "
            f"{finished - started:.1f} с"
        )

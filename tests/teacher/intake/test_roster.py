"""Список учащихся: одно id на человека, номера участников Moodle, анонимная проверка."""

from __future__ import annotations

import io
import json
import unicodedata
import zipfile

import pytest

from feedback.teacher.core.tables import LmsIdRow
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.intake import roster
from feedback.teacher.intake.archives import from_zip
from feedback.teacher.intake.roster import (
    Matcher,
    RosterError,
    load_mapping,
    load_roster,
    name_key,
    parse_lms_name,
    prepare_roster,
    read_participants,
    save_participants,
)
from feedback.teacher.intake.uploads import route
from feedback.teacher.records import gradebook

from notebook_runner import ROOT
from submissions import load, submission

LAB2, LAB4 = "lab_7_2_training_flops", "lab_7_4_gpu_memory"
RELEASES = {path.parent.name: load(path) for path in sorted((ROOT / "notebooks").glob("*/*.ipynb"))}

ROSTER = """id,first_name,last_name,email
ivanov,Иван,Иванов,ivanov@example.org
petrova,Анна,Петрова-Водкина,petrova@example.org
alekseev,Пётр,Алексеев,
"""


def blob(nb) -> bytes:
    return json.dumps(nb).encode()


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def people(tmp_path):
    return load_roster(write(tmp_path / "students.csv", ROSTER))


def routed(entries, matcher):
    """Архив из ``entries`` (путь → тетрадка) → работы и проблемы, как в make grade."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    archive = matcher.workspace.folder / "moodle.zip"
    archive.write_bytes(buffer.getvalue())
    found, problems = from_zip(archive)
    submissions, more = route(found, RELEASES, matcher)
    return submissions, problems + more


def test_names_are_compared_the_way_people_write_them():
    composed = "Алексеев Пётр"
    decomposed = unicodedata.normalize("NFD", composed)
    assert composed != decomposed
    assert name_key(decomposed) == name_key("  АЛЕКСЕЕВ   петр ") == "алексеев петр"
    assert name_key("Петрова-Водкина_Анна") == name_key("петрова водкина — анна".replace("—", "-"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Иванов Иван_123_assignsubmission_file_", ("Иванов Иван", "123", False)),
        ("Иванов Иван_123_assignsubmission_onlinetext_", ("Иванов Иван", "123", False)),
        ("Участник_45_assignsubmission_file_", ("Участник", "45", True)),
        ("Участник 45_assignsubmission_file_", ("Участник", "45", True)),
        ("Participant_7_assignsubmission_file", ("Participant", "7", True)),
        ("ivanov", None),
        ("ivanov_1234", None),
    ],
)
def test_moodle_folder_names_are_parsed(text, expected):
    parsed = parse_lms_name(text)
    assert (parsed and (parsed.name, parsed.participant, parsed.blind)) == expected


def test_one_learner_gets_one_id_in_every_lab(tmp_path, people):
    """Номер участника у Иванова в 7.2 и 7.4 разный, имя — в разном порядке и с «ё»."""
    matcher = Matcher(people, workspace=Workspace(tmp_path))
    submissions, problems = routed(
        {
            f"Иванов Иван_101_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Петрова-Водкина Анна_102_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Иван Иванов_205_assignsubmission_file_/{LAB4}.ipynb": blob(submission(LAB4)),
            f"Алексеев Петр_206_assignsubmission_file_{LAB4}.ipynb": blob(submission(LAB4)),
            "Иван Иванов_205_assignsubmission_onlinetext_/onlinetext.html": b"<p>x</p>",
        },
        matcher,
    )
    assert problems == []
    assert sorted((s.student, s.lab) for s in submissions) == [
        ("alekseev", LAB4),
        ("ivanov", LAB2),
        ("ivanov", LAB4),
        ("petrova", LAB2),
    ]
    assert matcher.seen == {
        ("ivanov", LAB2): "101",
        ("petrova", LAB2): "102",
        ("ivanov", LAB4): "205",
        ("alekseev", LAB4): "206",
    }


def test_without_a_roster_the_moodle_name_is_the_id(tmp_path):
    matcher = Matcher(workspace=Workspace(tmp_path))
    entries = {
        f"Иванов Иван_101_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
        f"Участник_7_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
        f"ivanov_1234_{LAB4}.ipynb": blob(submission(LAB4)),
    }
    with_matcher, problems = routed(entries, matcher)
    found, _ = from_zip(tmp_path / "moodle.zip")
    without, _ = route(found, RELEASES)
    assert problems == []
    expected = [
        ("иванов_иван", LAB2),  # имя из папки Moodle
        ("Участник_7_assignsubmission_file", LAB2),  # анонимная: имени нет — папка целиком
        ("ivanov_1234", LAB4),  # не папка Moodle — как раньше
    ]
    assert sorted((s.student, s.lab) for s in with_matcher) == sorted(expected)
    assert sorted((s.student, s.lab) for s in without) == sorted(expected)
    # номер участника запоминается и без списка: по нему заполняется ведомость Moodle
    assert matcher.seen == {
        ("иванов_иван", LAB2): "101",
        ("Участник_7_assignsubmission_file", LAB2): "7",
    }


def test_without_a_roster_one_learner_is_one_id_across_labs(tmp_path):
    """Архивы 7.2 и 7.4 — разные запуски; номера участников разные, «ё» — не везде."""
    lab2 = Matcher(workspace=Workspace(tmp_path))
    first, problems = routed(
        {
            f"Иванов Иван_301_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Алексеев Пётр_302_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
        },
        lab2,
    )
    assert problems == []
    save_participants(Workspace(tmp_path), lab2.seen)
    lab4 = Matcher(workspace=Workspace(tmp_path))
    second, problems = routed(
        {
            unicodedata.normalize("NFD", f"Иванов Иван_7_assignsubmission_file_/{LAB4}.ipynb"): (
                blob(submission(LAB4))
            ),
            f"Алексеев Петр_8_assignsubmission_file_/{LAB4}.ipynb": blob(submission(LAB4)),
        },
        lab4,
    )
    assert problems == []
    save_participants(Workspace(tmp_path), lab4.seen)
    assert sorted((s.student, s.lab) for s in first + second) == [
        ("алексеев_петр", LAB2),
        ("алексеев_петр", LAB4),
        ("иванов_иван", LAB2),
        ("иванов_иван", LAB4),
    ]
    # номер участника — по-прежнему свой в каждом задании: по нему make export заполняет ведомость
    assert read_participants(Workspace(tmp_path)) == {
        ("иванов_иван", LAB2): "301",
        ("алексеев_петр", LAB2): "302",
        ("иванов_иван", LAB4): "7",
        ("алексеев_петр", LAB4): "8",
    }
    assert all(roster._ID.match(s.student) for s in first + second)  # годится и для списка


def test_namesakes_in_one_assignment_are_kept_apart_and_reported(tmp_path, people):
    """Два разных участника с одним именем: у каждого своё id с номером и строка problems.csv."""
    matcher = Matcher(workspace=Workspace(tmp_path))
    submissions, problems = routed(
        {
            f"Иванов Иван_301_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Иванов Иван_305_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"иванов  иван_306_assignsubmission_file_/{LAB2}.ipynb": b"",  # тоже тёзка, файл пуст
            f"Петров Пётр_302_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Петров Пётр_302_assignsubmission_file_/{LAB2} (1).ipynb": blob(submission(LAB2)),
            f"Иванов Иван_9_assignsubmission_file_/{LAB4}.ipynb": blob(submission(LAB4)),
        },
        matcher,
    )
    assert sorted((s.student, s.lab) for s in submissions) == [
        ("иванов_иван", LAB4),  # в 7.4 Иванов один
        ("иванов_иван-301", LAB2),
        ("иванов_иван-305", LAB2),
    ]
    rows: dict[tuple[str, str], list[str]] = {}
    for problem in problems:
        rows.setdefault((problem.student, problem.lab), []).append(problem.problem)
    for number in ("301", "305", "306"):
        texts = rows.pop((f"иванов_иван-{number}", LAB2))
        [text] = [text for text in texts if "участника с именем" in text]
        assert "3 участника с именем «" in text and "(номера 301, 305, 306)" in text
        assert f"участника {number} оценена под id «иванов_иван-{number}»" in text
        assert "ROSTER" in text
        assert ("пустой файл" in texts) == (number == "306")
    # один участник с двумя файлами — не тёзки, а «несколько файлов», как и раньше
    assert set(rows) == {("петров_петр", LAB2)}
    assert all("несколько файлов" in text for text in rows[("петров_петр", LAB2)])
    assert matcher.seen == {
        ("иванов_иван-301", LAB2): "301",
        ("иванов_иван-305", LAB2): "305",
        ("иванов_иван-306", LAB2): "306",
        ("петров_петр", LAB2): "302",
        ("иванов_иван", LAB4): "9",
    }
    # Со списком id — из него, а не из имени: тёзок решает список (здесь Иванов в нём один,
    # и у него два файла), номерами их не разводят.
    with_roster, problems = routed(
        {
            f"Иванов Иван_301_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Иванов Иван_305_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
        },
        Matcher(people, workspace=Workspace(tmp_path)),
    )
    assert with_roster == []
    assert {(p.student, p.lab) for p in problems} == {("ivanov", LAB2)}
    assert all("несколько файлов" in p.problem for p in problems)


def test_a_blind_work_without_a_mapping_is_a_row_not_a_guess(tmp_path, people):
    matcher = Matcher.from_workspace(Workspace(tmp_path), people, RELEASES)
    submissions, problems = routed(
        {f"Участник_31_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2))}, matcher
    )
    assert submissions == []
    [problem] = problems
    assert (problem.student, problem.lab) == ("?", LAB2)
    assert "анонимная работа (участник 31)" in problem.problem
    assert f"{Workspace(tmp_path).participants(LAB2)} строку «31,<id учащегося>»" in problem.problem
    assert matcher.seen == {}


def test_a_blind_work_with_a_mapping_gets_its_id(tmp_path, people):
    write(Workspace(tmp_path).participants(LAB2), "participant,student_id\nУчастник 31,petrova\n")
    matcher = Matcher.from_workspace(Workspace(tmp_path), people, RELEASES)
    submissions, problems = routed(
        {
            f"Участник_31_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Participant_32_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
        },
        matcher,
    )
    assert [(s.student, s.lab) for s in submissions] == [("petrova", LAB2)]
    assert [p.student for p in problems] == ["?"]
    assert "участник 32" in problems[0].problem
    assert matcher.seen == {("petrova", LAB2): "31"}


def test_a_revealed_moodle_worksheet_is_a_mapping_too(tmp_path, people):
    """Ведомость после раскрытия имён: id — по почте, а без почты — по имени."""
    sheet = write(
        Workspace(tmp_path).participants(LAB2),
        "Идентификатор,Полное имя,Адрес электронной почты,Статус,Оценка\n"
        '"Участник 31","Иван Иванов",ivanov@example.org,"Ответы для оценки",\n'
        '"Участник 32","Пётр Алексеев",,"Ответы для оценки",\n'
        '"Участник 33","Кто-то Другой",other@example.org,"Нет ответа",\n',
    )
    assert load_mapping(sheet, people) == {"31": "ivanov", "32": "alekseev"}
    with pytest.raises(RosterError, match="нужен список учащихся"):
        load_mapping(sheet, None)


def test_ambiguous_and_unknown_names_are_rows_saying_what_to_add(tmp_path):
    people = load_roster(
        write(
            tmp_path / "students.csv",
            ROSTER + "ivanov2,Иван,Иванов,ivanov2@example.org\n",
        )
    )
    matcher = Matcher(people, workspace=Workspace(tmp_path))
    submissions, problems = routed(
        {
            f"Иванов Иван_101_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Сидоров Олег_103_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Сидоров Олег_104_assignsubmission_file_/{LAB2}.ipynb": b"",  # и файл пустой
            f"Петрова-Водкина Анна_102_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
        },
        matcher,
    )
    assert [(s.student, s.lab) for s in submissions] == [("petrova", LAB2)]
    why = {p.file.split("/")[0]: p for p in problems}
    assert all(p.student == "?" for p in problems)
    ambiguous = why["Иванов Иван_101_assignsubmission_file_"].problem
    assert "несколько человек с именем «Иванов Иван» (ivanov, ivanov2)" in ambiguous
    assert "строку «101,<id учащегося>»" in ambiguous
    unknown = why["Сидоров Олег_103_assignsubmission_file_"].problem
    assert unknown.startswith("«Сидоров Олег» нет в списке учащихся")
    assert "«<id>,<имя>,<фамилия>,<почта>»" in unknown and "строку «103,<id учащегося>»" in unknown
    empty = why["Сидоров Олег_104_assignsubmission_file_"].problem
    assert empty.startswith("пустой файл; «Сидоров Олег» нет в списке")
    assert matcher.seen == {("petrova", LAB2): "102"}


def test_a_plain_folder_named_by_id_or_name_matches_the_roster(tmp_path, people):
    matcher = Matcher(people, workspace=Workspace(tmp_path))
    submissions, problems = routed(
        {
            f"ivanov/{LAB2}/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Петрова-Водкина Анна/{LAB4}.ipynb": blob(submission(LAB4)),
            f"kozlov/{LAB4}.ipynb": blob(submission(LAB4)),
        },
        matcher,
    )
    assert sorted((s.student, s.lab) for s in submissions) == [
        ("ivanov", LAB2),
        ("petrova", LAB4),
    ]
    assert [(p.student, p.lab) for p in problems] == [("?", LAB4)]
    assert problems[0].problem.startswith("«kozlov» нет в списке учащихся")


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("first_name,last_name\nИван,Иванов\n", "нет столбца id"),
        ("id,first_name\nivanov,Иван\nivanov,Пётр\n", "строка 3: id «ivanov» уже есть выше"),
        ("id,first_name\n=cmd,Иван\n", "не годится в имя папки"),
        ("id,first_name\n,Иван\n", "пустой id"),
    ],
)
def test_a_broken_roster_is_explained(tmp_path, text, why):
    with pytest.raises(RosterError, match=why):
        load_roster(write(tmp_path / "students.csv", text))


def test_an_excel_roster_with_bom_and_semicolons_is_read(tmp_path):
    path = tmp_path / "students.csv"
    path.write_bytes("\ufeffid;first_name;last_name;email\nivanov@uni.ru;Иван;Иванов;\n".encode())
    people = load_roster(path)
    assert list(people.people) == ["ivanov@uni.ru"]
    assert people.find("Иван Иванов") == ["ivanov@uni.ru"]


def test_a_mapping_to_an_id_outside_the_roster_stops_grading(tmp_path, people):
    path = write(Workspace(tmp_path).participants(LAB2), "participant,student_id\n31,nobody\n")
    with pytest.raises(RosterError, match="строка 2: id «nobody» нет в списке учащихся"):
        Matcher.from_workspace(Workspace(tmp_path), people, RELEASES)
    write(path, "participant,student_id\n31,ivanov\n31,petrova\n")
    with pytest.raises(RosterError, match="участник 31 уже отдан учащемуся «ivanov»"):
        Matcher.from_workspace(Workspace(tmp_path), people, RELEASES)


@pytest.mark.slow  # регистрирует лабораторные в базе nbgrader
def test_the_roster_is_kept_in_the_work_folder_and_imported_like_nbgrader(tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    assert prepare_roster(Workspace(work)) is None  # без списка — как раньше
    given = write(tmp_path / "class.csv", ROSTER)
    people = prepare_roster(Workspace(work), given)
    assert Workspace(work).roster.read_text(encoding="utf-8") == ROSTER
    assert prepare_roster(Workspace(work)).people == people.people  # следующий архив — без ROSTER=
    fields = [p.fields for p in people.people.values()]
    assert gradebook.import_students(Workspace(work), fields) == 3
    assert gradebook.students(Workspace(work)) == {
        "ivanov": ("Иванов", "Иван", "ivanov@example.org"),
        "petrova": ("Петрова-Водкина", "Анна", "petrova@example.org"),
        "alekseev": ("Алексеев", "Пётр", None),  # пустая ячейка — None, как у nbgrader
    }
    with pytest.raises(RosterError, match="не найден"):
        prepare_roster(Workspace(work), tmp_path / "нет.csv")


def test_participant_numbers_accumulate_lab_by_lab(tmp_path):
    save_participants(Workspace(tmp_path), {("ivanov", LAB2): "101"})
    save_participants(Workspace(tmp_path), {("ivanov", LAB4): "205", ("petrova", LAB4): "206"})
    assert read_participants(Workspace(tmp_path)) == {
        ("ivanov", LAB2): "101",
        ("ivanov", LAB4): "205",
        ("petrova", LAB4): "206",
    }
    header = Workspace(tmp_path).table(LmsIdRow).read_text(encoding="utf-8").splitlines()[0]
    assert header == "student_id,lab,lms_participant"


def test_no_name_can_take_a_namesakes_id(tmp_path):
    """«Кузнецов Кирилл 401» (участник 403) не получает id тёзки-участника 401: номер тёзки
    отделён дефисом, которого в id из имени не бывает. Все три работы оценены, у каждой свой
    номер в lms_ids.csv."""
    matcher = Matcher(workspace=Workspace(tmp_path))
    submissions, problems = routed(
        {
            f"Кузнецов Кирилл_401_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Кузнецов Кирилл_402_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Кузнецов Кирилл 401_403_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
        },
        matcher,
    )
    students = sorted(s.student for s in submissions)
    assert students == ["кузнецов_кирилл-401", "кузнецов_кирилл-402", "кузнецов_кирилл_401"]
    assert not [p for p in problems if "несколько файлов" in p.problem]
    assert matcher.seen == {
        ("кузнецов_кирилл-401", LAB2): "401",
        ("кузнецов_кирилл-402", LAB2): "402",
        ("кузнецов_кирилл_401", LAB2): "403",
    }


def test_roster_names_that_differ_only_by_yo_or_case_are_matched_exactly(tmp_path):
    """В списке и «Алёна», и «Алена» (и «Мира» с «МИРА»): работа каждой — её, а не «двое с
    одним именем»; написание, которого в списке нет, по-прежнему неоднозначно."""
    people = load_roster(
        write(
            tmp_path / "students.csv",
            "id,first_name,last_name,email\n"
            "alyona,Алёна,Смирнова,\nalena,Алена,Смирнова,\n"
            "mira1,Мира,Ли,\nmira2,МИРА,ЛИ,\n",
        )
    )
    submissions, problems = routed(
        {
            f"Смирнова Алёна_11_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Смирнова Алена_12_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"Мира Ли_13_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"МИРА ЛИ_14_assignsubmission_file_/{LAB2}.ipynb": blob(submission(LAB2)),
            f"смирнова алёна_15_assignsubmission_file_/{LAB4}.ipynb": blob(submission(LAB4)),
        },
        Matcher(people, workspace=Workspace(tmp_path)),
    )
    assert sorted((s.student, s.file.split("_")[1]) for s in submissions) == [
        ("alena", "12"),
        ("alyona", "11"),
        ("mira1", "13"),
        ("mira2", "14"),
    ]
    [problem] = problems
    assert problem.lab == LAB4 and "несколько человек" in problem.problem

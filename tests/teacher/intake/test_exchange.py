"""make collect и make hub-release не верят exchange: учащийся с терминалом на сервере курса.

Случаи из разбора уязвимостей (issue 41): тетрадка-ссылка на решения, жёсткая ссылка, FIFO,
папка сдачи от имени другого учащегося (настоящие пользователи Unix), подменённая папка
курса, корень exchange без бита sticky, выдуманное время сдачи (2099 и 2019) и имя файла
из управляющих последовательностей терминала.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from feedback.teacher.commands import hub as hub_command
from feedback.teacher.core.settings import COURSE_ID, ROOT, Settings
from feedback.teacher.core.tables import Problem, read_rows
from feedback.teacher.hub import accounts as hub_users
from feedback.teacher.hub import collect as hub_collect
from feedback.teacher.hub import handback, lateness
from feedback.teacher.hub import release as hub_release
from feedback.teacher.hub import state as hub_state
from feedback.teacher.intake import exchange
from feedback.teacher.records import gradebook

LAB = "lab_7_2_training_flops"
SOLUTION = next((ROOT / "solutions" / LAB).glob("*.ipynb"))
#: Учётные записи учащихся на сервере курса (id в списке — имя пользователя Unix).
LEARNER, OTHER = "c7kirill", "c7mallory"

pytestmark = [
    pytest.mark.xdist_group("exchange-users"),  # пользователи Unix — общие для модуля
    pytest.mark.skipif(os.geteuid() != 0, reason="нужны пользователи Unix: тест идёт от root"),
]


def _notebook(answer: str) -> bytes:
    cell = {"cell_type": "code", "source": answer, "metadata": {}, "outputs": []}
    return json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4}).encode()


@pytest.fixture(scope="module")
def unix_users() -> Iterator[dict[str, int]]:
    """Два настоящих пользователя Unix; созданные здесь по выходе удаляются."""
    created, uids = [], {}
    for name in (LEARNER, OTHER):
        done = subprocess.run(
            ["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            created.append(name)
        elif "already exists" not in done.stderr:
            pytest.skip(f"useradd не создал пользователя: {done.stderr.strip()}")
        uids[name] = int(subprocess.check_output(["id", "-u", name], text=True))
    yield uids
    for name in created:
        subprocess.run(["userdel", name], check=False)


@pytest.fixture
def settings(tmp_path) -> Settings:
    chosen = replace(Settings(), work=tmp_path / "work")
    hub_release.prepare_exchange(chosen)
    (chosen.workspace.exchange / COURSE_ID / "outbound").mkdir(parents=True)
    inbound = chosen.workspace.exchange / COURSE_ID / "inbound"
    inbound.mkdir()
    inbound.chmod(0o3733)  # как после make hub-release: сдавать могут все, читать — нет
    return chosen


def submit(
    settings: Settings,
    student: str,
    stamp: str,
    answer: str = "x = 1",
    uid: int | None = None,
) -> Path:
    """Сдача в inbound, как её кладёт ``nbgrader submit`` от пользователя ``uid``."""
    name = f"{student}+{LAB}+{stamp}+{os.urandom(4).hex()}"
    folder = settings.workspace.exchange / COURSE_ID / "inbound" / name
    folder.mkdir()
    (folder / f"{LAB}.ipynb").write_bytes(_notebook(answer))
    (folder / exchange.TIMESTAMP).write_text(stamp)
    (folder / exchange.SUBMISSION_SECRET).write_text("secret")
    if uid is not None:
        for path in (folder, *folder.iterdir()):
            os.chown(path, uid, uid, follow_symlinks=False)
    time.sleep(0.02)  # ctime ядра идёт тиками в несколько миллисекунд: следующая сдача — позже
    return folder


def collected(settings: Settings, student: str) -> dict[str, bytes]:
    folder = settings.workspace.submitted / student / LAB
    return {
        path.relative_to(folder).as_posix(): path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def problems(settings: Settings) -> list[Problem]:
    return read_rows(settings.work / Problem.FILE, Problem)


def test_links_fifos_and_foreign_files_are_never_collected(settings, tmp_path):
    """Тетрадка-ссылка на решения, папка-ссылка, жёсткая ссылка и FIFO не открываются: в
    submitted/ нет ни строчки решений, о каждой — строка problems.csv; обычный файл собран."""
    folder = submit(settings, "ivanov", "2026-12-01 10:00:00.000000 UTC")
    (folder / f"{LAB}.ipynb").unlink()
    (folder / f"{LAB}.ipynb").symlink_to(SOLUTION)
    (folder / "solutions").symlink_to(SOLUTION.parent, target_is_directory=True)
    secret = tmp_path / "teacher-notes.ipynb"
    secret.write_text("### BEGIN SOLUTION\n")
    os.link(secret, folder / "notes.ipynb")
    os.mkfifo(folder / "pipe.ipynb")
    (folder / "data").mkdir()
    (folder / "data" / "mine.txt").write_text("моё")

    found = hub_collect.collect(settings)

    copied = collected(settings, "ivanov")
    assert set(copied) == {exchange.TIMESTAMP, exchange.SUBMISSION_SECRET, "data/mine.txt"}
    assert copied["data/mine.txt"].decode() == "моё"
    assert not any(b"BEGIN SOLUTION" in data for data in copied.values())
    rows = {row.file.rsplit("/", 1)[1]: row.problem for row in problems(settings)}
    assert "ссылка" in rows[f"{LAB}.ipynb"] and "ссылка" in rows["solutions"]
    assert "жёсткая ссылка" in rows["notes.ipynb"]
    assert "не обычный файл" in rows["pipe.ipynb"]
    assert [(item.student, item.lab) for item in found.collected] == [("ivanov", LAB)]


def test_a_name_without_the_random_suffix_is_collected_and_a_plus_in_the_id_is_not(settings):
    """``add_random_string = False`` у nbgrader: имя из трёх частей — тоже сдача; «+» в id
    (его нет ни в одном id курса) делил бы имя неоднозначно — строка problems.csv."""
    folder = submit(settings, "ivanov", "2026-12-01 10:00:00.000000 UTC")
    folder.rename(folder.parent / folder.name.rsplit("+", 1)[0])
    submit(settings, "a+b", "2026-12-01 10:00:00.000000 UTC")
    hub_collect.collect(settings)
    assert f"{LAB}.ipynb" in collected(settings, "ivanov")
    [row] = problems(settings)
    assert row.file.startswith(f"{exchange.FILE_PREFIX}a+b+") and "не похоже" in row.problem


def test_a_folder_named_like_nbgraders_files_stops_nobody(settings):
    """Папка «timestamp.txt» или «submission_secret.txt» в сдаче не роняет сбор всего класса:
    её сдача собрана без неё (строка problems.csv), сдача следующего учащегося — как обычно,
    а make feedback не спотыкается о такую сдачу."""
    folder = submit(settings, "aaa", "2026-12-01 10:00:00.000000 UTC")
    (folder / exchange.TIMESTAMP).unlink()
    (folder / exchange.TIMESTAMP).mkdir()
    (folder / exchange.TIMESTAMP / "x").write_text("x")
    (folder / exchange.SUBMISSION_SECRET).unlink()
    (folder / exchange.SUBMISSION_SECRET).mkdir()
    submit(settings, "bbb", "2026-12-01 10:00:00.000000 UTC")

    found = hub_collect.collect(settings)

    assert sorted(item.student for item in found.collected) == ["aaa", "bbb"]
    assert collected(settings, "aaa") == {
        f"{LAB}.ipynb": collected(settings, "aaa")[f"{LAB}.ipynb"],
        exchange.TIMESTAMP: collected(settings, "aaa")[exchange.TIMESTAMP],
    }
    assert collected(settings, "aaa")[exchange.TIMESTAMP].decode().startswith("20")
    rows = {row.file.rsplit("/", 1)[1]: row.problem for row in problems(settings)}
    assert (
        "обычный файл" in rows[exchange.TIMESTAMP]
        and "обычный файл" in rows[exchange.SUBMISSION_SECRET]
    )
    assert not list(settings.workspace.submitted.glob("*/.*collecting*"))
    assert [item.student for item in handback.hub_feedback(settings)] == ["bbb"]


def test_a_submission_folder_that_is_a_link_is_refused(settings):
    target = submit(settings, "ivanov", "2026-12-01 10:00:00.000000 UTC")
    inbound = target.parent
    target.rename(inbound.parent / "elsewhere")
    (inbound / target.name).symlink_to(SOLUTION.parent, target_is_directory=True)
    hub_collect.collect(settings)
    assert collected(settings, "ivanov") == {}
    [row] = problems(settings)
    assert "не папка сдачи" in row.problem


def test_a_submission_in_another_learners_name_is_refused(
    settings, unix_users, monkeypatch, capsys
):
    """Папка «c7kirill+…», которую создал c7mallory (и с 2099 годом в имени), не собирается:
    собрана настоящая сдача c7kirill, а об отказе — русская строка и строка problems.csv."""
    honest = submit(
        settings, LEARNER, "2026-12-01 10:00:00.000000 UTC", "x = 1", unix_users[LEARNER]
    )
    forged = submit(settings, LEARNER, "2099-01-01 00:00:00.000000 UTC", "x = 0", unix_users[OTHER])
    own = submit(settings, OTHER, "2026-12-01 11:00:00.000000 UTC", "y = 2", unix_users[OTHER])
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(settings.work))
    monkeypatch.delenv("COURSE7_EXCHANGE_DIR", raising=False)

    assert hub_command.main(["collect"]) == 0

    printed = capsys.readouterr().out
    assert json.loads(collected(settings, LEARNER)[f"{LAB}.ipynb"])["cells"][0]["source"] == "x = 1"
    assert f"{LAB}.ipynb" in collected(settings, OTHER)  # своя сдача c7mallory собрана
    [row] = problems(settings)
    assert (row.student, row.lab, row.file) == (
        LEARNER,
        LAB,
        f"{exchange.FILE_PREFIX}{forged.name}",
    )
    assert f"создал её пользователь «{OTHER}»" in row.problem and "подлог" in row.problem
    assert f"не собрано: {exchange.FILE_PREFIX}{forged.name}" in printed
    assert "cheating attempt" not in printed
    assert honest.exists() and own.exists()  # exchange не меняется


def test_a_class_login_submits_only_under_its_own_roster_id(settings, unix_users):
    """Класс ``make hub``: логин записан с id из списка (``c7kirill`` → ``kirill``) — его сдача
    под этим id собрана, а под id соседа (даже совпадающим с другим логином) — отказ."""
    accounts = {LEARNER: "kirill", OTHER: "mallory"}
    settings.workspace.hub.mkdir(parents=True)
    (settings.workspace.hub / hub_users.ACCOUNTS).write_text(json.dumps(accounts))
    submit(settings, "kirill", "2026-12-01 10:00:00.000000 UTC", "x = 1", unix_users[LEARNER])
    forged = submit(
        settings, "mallory", "2026-12-01 10:00:00.000000 UTC", "x = 0", unix_users[LEARNER]
    )
    submit(settings, LEARNER, "2026-12-01 10:00:00.000000 UTC", "x = 2", unix_users[LEARNER])

    hub_collect.collect(settings)

    assert f"{LAB}.ipynb" in collected(settings, "kirill")
    assert collected(settings, "mallory") == {} and collected(settings, LEARNER) == {}
    refused = sorted(row.file for row in problems(settings) if "подлог" in row.problem)
    assert refused == sorted(
        f"{exchange.FILE_PREFIX}{name}"
        for name in (forged.name, *(p.name for p in forged.parent.glob(f"{LEARNER}+*")))
    )


def test_the_refusal_row_survives_make_grade_tables(settings, unix_users):
    """Строку сбора не стирает слияние таблиц make grade, даже когда работу оценили."""
    from feedback.teacher.records.class_tables import ClassTables, write

    submit(settings, LEARNER, "2026-12-01 10:00:00.000000 UTC", "x = 0", unix_users[OTHER])
    hub_collect.collect(settings)
    tables = ClassTables(problems=[Problem(LEARNER, LAB, "x.ipynb", "другое")])
    write(settings.workspace, tables)
    rows = problems(settings)
    assert [row.problem for row in rows if row.file == "x.ipynb"] == ["другое"]
    assert [row.student for row in rows if "подлог" in row.problem] == [LEARNER]


def test_a_forged_future_time_does_not_block_a_resubmission(settings):
    """Сдача с 2099 годом в имени и timestamp.txt, потом настоящая пересдача: собрана пересдача,
    и время сдачи в submitted/ — время ядра, а не выдуманное."""
    before = datetime.now(UTC).replace(tzinfo=None) - timedelta(seconds=1)
    submit(settings, "ivanov", "2099-12-31 23:59:59.000000 UTC", "x = 'навсегда'")
    hub_collect.collect(settings)
    submit(settings, "ivanov", "2026-12-01 10:00:00.000000 UTC", "x = 'пересдача'")
    hub_collect.collect(settings)
    copied = collected(settings, "ivanov")
    assert json.loads(copied[f"{LAB}.ipynb"])["cells"][0]["source"] == "x = 'пересдача'"
    when = datetime.strptime(copied[exchange.TIMESTAMP].decode(), exchange.TIME_FORMAT)
    assert before <= when <= datetime.now(UTC).replace(tzinfo=None)


@pytest.mark.slow  # база оценок nbgrader: импорт — секунды
def test_a_forged_old_time_does_not_hide_lateness(settings):
    """Сдача после срока с 2019 годом в имени и timestamp.txt названа опоздавшей."""
    with gradebook._open(settings.workspace) as gb:
        gb.update_or_create_assignment(
            LAB, duedate=datetime.now(UTC).replace(tzinfo=None) - timedelta(hours=2)
        )
    submit(settings, "ivanov", "2019-01-01 00:00:00.000000 UTC")
    hub_collect.collect(settings)
    [late] = lateness.late(settings)
    assert (late.student, late.lab) == ("ivanov", LAB)
    assert 2 * 3600 <= late.seconds < 2 * 3600 + 60
    assert "на 2 часа" in "\n".join(lateness.late_lines([late]))


def test_a_later_edit_of_the_submitted_file_counts_as_a_later_submission(settings):
    """Правка тетрадки в inbound после сдачи сдвигает время сдачи: ctime файла — тоже ядра."""
    folder = submit(settings, "ivanov", "2026-12-01 10:00:00.000000 UTC")
    first = hub_collect.collect(settings).collected[0].time
    time.sleep(0.02)
    (folder / f"{LAB}.ipynb").write_bytes(_notebook("x = 2"))
    assert hub_collect.collect(settings).collected[0].time > first


@pytest.mark.parametrize("mode", [0o777, 0o2777])
def test_an_exchange_root_open_to_all_without_sticky_bit_is_refused(settings, mode):
    settings.workspace.exchange.chmod(mode)
    submit(settings, "ivanov", "2026-12-01 10:00:00.000000 UTC")
    for action in (
        lambda: hub_collect.collect(settings),
        lambda: hub_release.release(settings, LAB),
    ):
        with pytest.raises(hub_state.HubError, match=r"бита sticky нет.*chmod \+t"):
            action()
    assert collected(settings, "ivanov") == {}
    assert (
        stat.S_IMODE(settings.workspace.exchange.stat().st_mode) == mode
    )  # сам курс права не меняет


def test_a_replaced_course_folder_is_refused(settings, unix_users, monkeypatch, capsys):
    """Учащаяся переименовала папку курса и положила свою: ни сбора, ни выпуска, код выхода 2."""
    course = settings.workspace.exchange / COURSE_ID
    course.rename(settings.workspace.exchange / "old")
    (course / "inbound").mkdir(parents=True)
    os.chown(course, unix_users[OTHER], unix_users[OTHER])
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(settings.work))
    monkeypatch.delenv("COURSE7_EXCHANGE_DIR", raising=False)
    assert hub_command.main(["collect"]) == 2
    assert f"принадлежит «{OTHER}»" in capsys.readouterr().err
    with pytest.raises(hub_state.HubError, match="подменили"):
        hub_release.release(settings, LAB)
    os.chown(course, 0, 0)
    (course / "inbound").chmod(0o777)
    with pytest.raises(hub_state.HubError, match=r"могут писать все.*chmod \+t"):
        hub_collect.collect(settings)


def test_the_exchange_root_stays_as_the_administrator_set_it(tmp_path):
    """Новый корень — 1777; прежний (администратор поставил 1773 и владельца root) — как был."""
    fresh = replace(Settings(), work=tmp_path / "fresh")
    assert stat.S_IMODE(hub_release.prepare_exchange(fresh).stat().st_mode) == 0o1777
    admin = replace(Settings(), work=tmp_path / "admin")
    admin.workspace.exchange.mkdir(parents=True)
    admin.workspace.exchange.chmod(0o1773)
    hub_release.prepare_exchange(admin)
    assert stat.S_IMODE(admin.workspace.exchange.stat().st_mode) == 0o1773


def test_an_inbound_of_an_earlier_release_gets_the_sticky_bit_and_a_link_is_refused(settings):
    """inbound прежнего выпуска nbgrader (2733) получает sticky; inbound-ссылка — отказ."""
    inbound = settings.workspace.exchange / COURSE_ID / "inbound"
    inbound.chmod(0o2733)
    hub_release.prepare_exchange(settings)
    assert stat.S_IMODE(inbound.stat().st_mode) == 0o3733
    inbound.rename(settings.workspace.exchange / "moved")
    inbound.symlink_to(settings.workspace.exchange / "moved", target_is_directory=True)
    with pytest.raises(hub_state.HubError, match="ссылка или файл"):
        hub_collect.collect(settings)


@pytest.mark.slow  # nbgrader release_assignment — секунды
def test_hub_release_keeps_the_sticky_bit(tmp_path):
    """make hub-release не снимает бит sticky с корня и ставит его на inbound."""
    settings = replace(Settings(), work=tmp_path / "work")
    settings.workspace.exchange.mkdir(parents=True)
    settings.workspace.exchange.chmod(0o1777)
    hub_release.release(settings, LAB)
    assert stat.S_IMODE(settings.workspace.exchange.stat().st_mode) == 0o1777
    inbound = settings.workspace.exchange / COURSE_ID / "inbound"
    assert inbound.stat().st_mode & stat.S_ISVTX


def test_an_escape_sequence_in_a_file_name_is_shown_escaped(settings, monkeypatch, capsys):
    """Имя файла из управляющих последовательностей — видимой записью и в problems.csv, и в
    консоли make collect: ни ESC, ни «справа налево» до терминала не доходят."""
    folder = submit(settings, "ivanov", "2026-12-01 10:00:00.000000 UTC")
    name = "\x1b[2J\x1b]0;owned\x07\u202egpj.ipynb"
    (folder / name).symlink_to("/etc/passwd")
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(settings.work))
    monkeypatch.delenv("COURSE7_EXCHANGE_DIR", raising=False)
    assert hub_command.main(["collect"]) == 0
    printed = capsys.readouterr().out
    raw = (settings.work / Problem.FILE).read_text(encoding="utf-8")
    for text in (printed, raw):
        assert not any(ch in text for ch in "\x1b\x07\u202e")
        assert "\\x1b[2J\\x1b]0;owned\\x07\\u202egpj.ipynb" in text


def test_a_collect_without_the_rights_of_class_mode_says_what_to_run(settings, monkeypatch):
    """Класс make hub: inbound — root; make collect без sudo — русская строка, не трассировка."""

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(settings.workspace.exchange / COURSE_ID))

    monkeypatch.setattr(exchange, "collect", denied)
    with pytest.raises(hub_state.HubError, match="sudo make collect"):
        hub_collect.collect(settings)


def test_a_flood_of_folders_from_one_user_is_cut_with_one_row(settings, unix_users, monkeypatch):
    """Тысячи папок одного учащегося не держат сбор: читаются первые, об остальных — одна
    строка problems.csv; сдача соседа собрана."""
    monkeypatch.setattr(exchange, "MAX_FOLDERS_PER_OWNER", 3)
    inbound = settings.workspace.exchange / COURSE_ID / "inbound"
    for number in range(20):
        junk = inbound / f"junk{number:02d}"
        junk.mkdir()
        os.chown(junk, unix_users[OTHER], unix_users[OTHER])
    submit(settings, LEARNER, "2026-12-01 10:00:00.000000 UTC", "x = 1", unix_users[LEARNER])

    found = hub_collect.collect(settings)

    assert [item.student for item in found.collected] == [LEARNER]
    flood = [row for row in problems(settings) if "больше 3 папок" in row.problem]
    assert len(flood) == 1 and OTHER in flood[0].problem
    assert len(problems(settings)) == 3 + 1  # три прочитанные папки и строка об остальных


def test_a_collect_killed_halfway_is_recovered_by_the_next(settings):
    """kill -9 между «прежнюю — в сторону» и «новую — на место»: следующий make collect
    возвращает прежнюю собранную сдачу и убирает недособранную папку."""
    submit(settings, "ivanov", "2026-12-01 10:00:00.000000 UTC", "x = 1")
    hub_collect.collect(settings)
    final = settings.workspace.submitted / "ivanov" / LAB
    before = collected(settings, "ivanov")
    final.rename(final.parent / f".{LAB}.old-dead")
    (final.parent / f".{LAB}.collecting-dead").mkdir()

    exchange._recover(settings.workspace.submitted)

    assert collected(settings, "ivanov") == before
    assert sorted(p.name for p in final.parent.iterdir()) == [LAB]

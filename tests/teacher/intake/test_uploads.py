"""Сбор работ: кто сдал, какую лабораторную, что делать с битыми файлами и архивами LMS."""

import io
import json
import os
import stat
import struct
import threading
import tracemalloc
import unicodedata
import zipfile
import zlib

import pytest

from feedback.teacher.core.settings import UploadLimits
from feedback.teacher.intake import archives, zip_names
from feedback.teacher.intake.archives import BrokenArchive, Upload, from_folder, from_zip
from feedback.teacher.intake.notebook_json import (
    MAX_JSON_CONTAINERS,
    MAX_JSON_DEPTH,
    MAX_JSON_VALUES,
    check_structure,
    read_notebook,
)
from feedback.teacher.intake.uploads import identify_lab, owner, route, student_id

from notebook_runner import ROOT
from submissions import load, student_notebook, submission

LAB2, LAB4 = "lab_7_2_training_flops", "lab_7_4_gpu_memory"
RELEASES = {path.parent.name: load(path) for path in sorted((ROOT / "notebooks").glob("*/*.ipynb"))}
LABS = list(RELEASES)


def blob(nb):
    return json.dumps(nb).encode()


def stripped(nb):
    """Как после Colab или Kaggle: формат 4.0, без id ячеек и без разметки nbgrader."""
    nb = json.loads(json.dumps(nb))
    nb["nbformat_minor"] = 0
    nb["metadata"] = {"colab": {"provenance": []}, "kernelspec": {"name": "python3"}}
    for cell in nb["cells"]:
        cell.pop("id", None)
        cell["metadata"] = {"id": "colab-id"}
    return nb


@pytest.mark.parametrize(
    ("parts", "student"),
    [
        (("ivanov", LAB2, f"{LAB2}.ipynb"), "ivanov"),  # раскладка nbgrader
        # папка Moodle: id — имя, как его сравнивает список учащихся (номер — в lms_ids.csv)
        (("Иванов Иван_123_assignsubmission_file_", f"{LAB2}.ipynb"), "иванов_иван"),
        ((f"Алексеев Пётр_45_assignsubmission_file_{LAB2}.ipynb",), "алексеев_петр"),
        (("Участник_7_assignsubmission_file_", "x.ipynb"), "Участник_7_assignsubmission_file"),
        (("sidorov", f"petrov_{LAB2}.ipynb"), "sidorov"),  # папка важнее имени файла
        ((f"ivanov_1234_{LAB2}.ipynb",), "ivanov_1234"),  # префикс целиком
        ((f"{LAB2}.ipynb",), None),
        (("Untitled.ipynb",), None),
    ],
)
def test_student_is_the_whole_folder_or_prefix(parts, student):
    assert owner(Upload(parts, b""), LABS) == student


def test_lab_is_recognised_by_content_not_by_name():
    assert identify_lab(submission(LAB2), RELEASES, LAB4) == LAB2
    assert identify_lab(stripped(submission(LAB4)), RELEASES, None) == LAB4
    assert identify_lab({"cells": []}, RELEASES, LAB2) == LAB2  # только имя — как подсказка
    assert identify_lab({"cells": []}, RELEASES, None) is None


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "пустой"),
        (b"   \n", "пустой"),
        (b"{not json", "не JSON"),
        (b"[1, 2]", "нет ячеек"),
        (b'{"cells": 5}', "нет ячеек"),
        (b"\xff\xfe\x00", "UTF-8"),
        (b"[" * 100_000, "JSON"),
    ],
)
def test_unreadable_files_are_explained(data, why):
    with pytest.raises(ValueError, match=why):
        read_notebook(data)


def test_old_format_3_notebook_is_read():
    nb = read_notebook(b'{"worksheets": [{"cells": [{"cell_type": "code", "input": "x = 1"}]}]}')
    assert nb["cells"][0]["source"] == "x = 1"


def test_routing_a_class_folder(tmp_path):
    def put(path, data):
        target = tmp_path / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)

    put(f"ivanov/{LAB2}/{LAB2}.ipynb", blob(submission(LAB2)))
    put(f"petrov/{LAB2}/{LAB2} (1).ipynb", blob(stripped(submission(LAB2))))  # Colab, другое имя
    put(f"sidorov/{LAB4}/{LAB4}.ipynb", blob(submission(LAB2)))  # не та лабораторная
    put(f"kozlov/{LAB2}/{LAB2}.ipynb", b"")
    put(f"kozlov/{LAB2}/.ipynb_checkpoints/{LAB2}-checkpoint.ipynb", blob(submission(LAB2)))
    put(f"popov/{LAB2}/a.ipynb", blob(submission(LAB2)))
    put(f"popov/{LAB2}/b.ipynb", blob(student_notebook(LAB2)))
    (tmp_path / "volkov").mkdir()
    (tmp_path / "volkov" / f"{LAB2}.ipynb").symlink_to(tmp_path / "ivanov" / LAB2 / f"{LAB2}.ipynb")
    found, problems = from_folder(tmp_path)
    submissions, routed = route(found, RELEASES)
    problems += routed
    graded = {(s.student, s.lab) for s in submissions}
    assert graded == {("ivanov", LAB2), ("petrov", LAB2), ("sidorov", LAB2)}
    assert any("назван как" in note for s in submissions for note in s.notes)
    why = {(p.student, p.lab): p.problem for p in problems}
    assert "пустой" in why[("kozlov", LAB2)]
    assert "несколько файлов" in why[("popov", LAB2)]
    assert any("ссылка" in p.problem for p in problems)


def zip_with(entries):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, data, *mode in entries:
            info = zipfile.ZipInfo(name)
            if mode:
                info.external_attr = mode[0] << 16
            zf.writestr(info, data)
    return buffer.getvalue()


def test_lms_zip_rules(tmp_path):
    archive = tmp_path / "export.zip"
    archive.write_bytes(
        zip_with(
            [
                (
                    f"export/Иванов Иван_1_assignsubmission_file_/{LAB2}.ipynb",
                    blob(submission(LAB2)),
                ),
                (f"export/sidorov/petrov_{LAB4}.ipynb", blob(submission(LAB4))),
                (f"export/kozlov/{LAB2}.ipynb", blob(submission(LAB2))),
                (f"export/kozlov/{LAB2} (1).ipynb", blob(submission(LAB2))),
                (f"export/__MACOSX/kozlov/._{LAB2}.ipynb", b"\x00\x05"),
                (f"../../evil/{LAB2}.ipynb", blob(submission(LAB2))),
                (f"export/link/{LAB2}.ipynb", b"/etc/passwd", stat.S_IFLNK | 0o777),
            ]
        )
    )
    found, problems = from_zip(archive)
    submissions, routed = route(found, RELEASES)
    problems += routed
    assert {(s.student, s.lab) for s in submissions} == {("иванов_иван", LAB2), ("sidorov", LAB4)}
    reasons = " | ".join(p.problem for p in problems)
    assert "за пределы архива" in reasons and "ссылка" in reasons
    assert "несколько файлов" in reasons and "__MACOSX" not in reasons


# --------------------------------------------------------------------------- битые архивы


def patched(raw: bytes, name: str, flag: int = 0, corrupt: bytes = b"") -> bytes:
    """Архив с поднятым битом ``flag`` у записи ``name`` и/или байтом, подменённым в данных."""
    raw = bytearray(raw)
    encoded = name.encode()
    for signature, flags_at, name_at in ((b"PK\x03\x04", 6, 30), (b"PK\x01\x02", 8, 46)):
        start = raw.find(signature)
        while start != -1:
            length = struct.unpack_from("<H", raw, start + name_at - (2 if name_at == 30 else 18))[
                0
            ]
            if raw[start + name_at : start + name_at + length] == encoded:
                bits = struct.unpack_from("<H", raw, start + flags_at)[0]
                struct.pack_into("<H", raw, start + flags_at, bits | flag)
            start = raw.find(signature, start + 1)
    if corrupt:
        at = raw.index(corrupt)
        raw[at] ^= 1
    return bytes(raw)


def marked(lab, mark):
    nb = submission(lab)
    nb["metadata"]["mark"] = mark
    return blob(nb)


def test_a_damaged_or_encrypted_entry_is_a_row_and_the_rest_is_read(tmp_path):
    raw = zip_with(
        [
            (f"ivanov/{LAB2}.ipynb", blob(submission(LAB2))),
            (f"petrov/{LAB2}.ipynb", marked(LAB2, "CORRUPT-ME")),
            (f"sidorov/{LAB2}.ipynb", blob(submission(LAB2))),
            (f"kozlov/{LAB2}.ipynb", blob(submission(LAB2))),
        ]
    )
    raw = patched(raw, f"sidorov/{LAB2}.ipynb", flag=0x1)  # «зашифровано»
    raw = patched(raw, "", corrupt=b"CORRUPT-ME")  # данные не сходятся с CRC
    archive = tmp_path / "export.zip"
    archive.write_bytes(raw)
    found, problems = from_zip(archive)
    assert [upload.path for upload in found] == [f"ivanov/{LAB2}.ipynb", f"kozlov/{LAB2}.ipynb"]
    why = {p.file: p.problem for p in problems}
    assert why[f"petrov/{LAB2}.ipynb"].startswith("архив повреждён")
    assert "CRC" in why[f"petrov/{LAB2}.ipynb"]
    assert why[f"sidorov/{LAB2}.ipynb"].startswith("файл зашифрован")


@pytest.mark.parametrize(
    "damage",
    [
        lambda raw: b"this is not a zip at all",
        lambda raw: raw[: len(raw) // 2],  # обрезан при скачивании
        lambda raw: raw.replace(b"PK\x01\x02", b"XX\x01\x02"),  # оглавление испорчено
    ],
    ids=["not-a-zip", "truncated", "bad-directory"],
)
def test_an_archive_that_does_not_open_is_a_clear_russian_error(tmp_path, damage):
    archive = tmp_path / "export.zip"
    archive.write_bytes(damage(zip_with([(f"ivanov/{LAB2}.ipynb", blob(submission(LAB2)))])))
    with pytest.raises(BrokenArchive, match="не открывается: это не zip или он обрезан"):
        from_zip(archive)


def test_every_entry_after_the_archive_cap_gets_its_own_row(tmp_path):
    data = blob(submission(LAB2))
    limits = UploadLimits(archive_bytes=len(data) * 2 + 10)
    names = [f"{student}/{LAB2}.ipynb" for student in ("a", "b", "c", "d", "e")]
    archive = tmp_path / "export.zip"
    archive.write_bytes(zip_with([(name, data) for name in names]))
    found, problems = from_zip(archive, limits)
    assert [upload.path for upload in found] == names[:2]
    assert sorted(p.file for p in problems) == names[2:]
    assert all("архив больше" in p.problem and "не прочитан" in p.problem for p in problems)


def test_every_file_after_the_folder_cap_gets_its_own_row(tmp_path):
    data = blob(submission(LAB2))
    limits = UploadLimits(archive_bytes=len(data) + 10)
    for student in ("a", "b", "c"):
        (tmp_path / student).mkdir()
        (tmp_path / student / f"{LAB2}.ipynb").write_bytes(data)
    found, problems = from_folder(tmp_path, limits)
    assert [upload.path for upload in found] == [f"a/{LAB2}.ipynb"]
    assert [p.file for p in problems] == [f"b/{LAB2}.ipynb", f"c/{LAB2}.ipynb"]
    assert all("не прочитан" in p.problem for p in problems)


def test_a_link_in_a_zip_is_a_row_whatever_its_name(tmp_path):
    archive = tmp_path / "export.zip"
    archive.write_bytes(
        zip_with(
            [
                (f"ivanov/{LAB2}.ipynb", blob(submission(LAB2))),
                ("volkov", b"../ivanov", stat.S_IFLNK | 0o777),  # папка учащегося — ссылка
            ]
        )
    )
    found, problems = from_zip(archive)
    assert [upload.path for upload in found] == [f"ivanov/{LAB2}.ipynb"]
    assert [(p.file, p.problem) for p in problems] == [("volkov", archives.LINK)]


# --------------------------------------------------------------------------- имена без флага UTF-8


def unflagged_zip(entries, encoding, extra=None):
    """Архив, как его пишут Info-ZIP ``zip -r`` (UTF-8) и Windows (cp866, cp1251): байты имён
    в кодировке архиватора, бит UTF-8 (0x800) не поднят.

    zipfile сам так не пишет (не-ASCII имя он всегда помечает флагом), поэтому запись идёт
    под ASCII-заглушкой той же длины, которая потом заменяется байтами имени.
    """
    buffer = io.BytesIO()
    raws = {}
    with zipfile.ZipFile(buffer, "w") as zf:
        for index, (name, data) in enumerate(entries):
            raw = name.encode(encoding)
            tail = "/" if name.endswith("/") else "x"
            stub = f"@@{index:03d}@@".ljust(len(raw) - 1, "~") + tail
            raws[stub.encode()] = raw
            info = zipfile.ZipInfo(stub)
            if extra and name in extra:
                info.extra = extra[name](raw)
            zf.writestr(info, data)
    archive = buffer.getvalue()
    for stub, raw in raws.items():
        assert archive.count(stub) == 2  # локальный заголовок и оглавление
        archive = archive.replace(stub, raw)
    return archive


MOODLE_CLASS = [
    ("Иванов Иван_301_assignsubmission_file_/", b""),  # zip -r пишет и папки
    (f"Иванов Иван_301_assignsubmission_file_/{LAB2}.ipynb", blob(submission(LAB2))),
    (f"Алексеев Пётр_302_assignsubmission_file_/Копия {LAB2}.ipynb", blob(submission(LAB2))),
    ("Ёлкина Юлия_303_assignsubmission_file_/лаба.ipynb", blob(submission(LAB4))),
]


@pytest.mark.parametrize(
    "encoding",
    ["utf-8", "cp866", "cp1251"],
    ids=["info-zip-linux", "windows-explorer-oem", "windows-ansi"],
)
def test_names_without_the_utf8_flag_are_read_as_the_archiver_wrote_them(tmp_path, encoding):
    archive = tmp_path / "export.zip"
    archive.write_bytes(unflagged_zip(MOODLE_CLASS, encoding))
    with zipfile.ZipFile(archive) as zf:
        infos = zf.infolist()
    assert not any(info.flag_bits & 0x800 for info in infos)
    assert infos[1].filename != MOODLE_CLASS[1][0]  # zipfile сам читает имя как cp437
    found, problems = from_zip(archive)
    assert problems == []
    assert [upload.path for upload in found] == [name for name, _ in MOODLE_CLASS[1:]]
    submissions, routed = route(found, RELEASES)
    assert routed == []
    assert sorted((s.student, s.lab) for s in submissions) == [
        ("алексеев_петр", LAB2),
        ("елкина_юлия", LAB4),
        ("иванов_иван", LAB2),
    ]


def test_the_legacy_code_page_is_chosen_for_the_whole_archive():
    """Одно имя строчными из cp1251 правдоподобно и в cp866; решают остальные имена архива."""
    lone = "лаба.ipynb".encode("cp1251")
    assert lone.decode("cp866") == "ырср.ipynb"  # тоже «буквы»: по одному имени не понять
    assert zip_names.legacy_encoding([lone]) == "cp866"  # поровну — как пишет Проводник
    folder = "Иванов Иван_301_assignsubmission_file_/".encode("cp1251")
    assert zip_names.legacy_encoding([lone, folder]) == "cp1251"
    assert zip_names.legacy_encoding(["Иванов Иван".encode("cp866"), lone]) == "cp866"
    assert zip_names.legacy_encoding(["Иванов".encode(), b"ascii.ipynb"]) == "utf-8"


def test_an_info_zip_unicode_path_field_names_the_entry(tmp_path):
    """Поле 0x7075 с CRC-32 своего имени важнее угадывания; с чужой CRC оно не в счёт."""
    right = f"Иванов Иван_301_assignsubmission_file_/{LAB2}.ipynb"
    stale = f"Петров Пётр_302_assignsubmission_file_/{LAB2}.ipynb"

    def field(text, crc_of):
        def make(raw):
            data = b"\x01" + struct.pack("<L", zlib.crc32(crc_of(raw))) + text.encode()
            return struct.pack("<HH", 0x7075, len(data)) + data

        return make

    archive = tmp_path / "export.zip"
    archive.write_bytes(
        unflagged_zip(
            [(right, blob(submission(LAB2))), (stale, blob(submission(LAB2)))],
            "cp1251",
            extra={
                right: field(right, lambda raw: raw),
                stale: field("Кто-то другой/x.ipynb", lambda raw: raw + b"-"),
            },
        )
    )
    found, _ = from_zip(archive)
    assert [upload.path for upload in found] == [right, stale]


# --------------------------------------------------------------------------- папки


def test_a_student_folder_that_is_a_link_is_a_row(tmp_path):
    outside = tmp_path / "outside" / LAB2
    outside.mkdir(parents=True)
    (outside / f"{LAB2}.ipynb").write_bytes(blob(submission(LAB2)))
    klass = tmp_path / "class"
    (klass / "ivanov" / LAB2).mkdir(parents=True)
    (klass / "ivanov" / LAB2 / f"{LAB2}.ipynb").write_bytes(blob(submission(LAB2)))
    (klass / "volkov").symlink_to(tmp_path / "outside", target_is_directory=True)
    (klass / "ivanov" / "lab_link").symlink_to(outside, target_is_directory=True)
    found, problems = from_folder(klass)
    assert [upload.path for upload in found] == [f"ivanov/{LAB2}/{LAB2}.ipynb"]
    why = {p.file: p.problem for p in problems}
    assert why == {"ivanov/lab_link": archives.DIR_LINK, "volkov": archives.DIR_LINK}


def test_odd_files_in_a_folder_neither_stall_nor_stop_the_intake(tmp_path):
    (tmp_path / "ivanov").mkdir()
    (tmp_path / "ivanov" / f"{LAB2}.ipynb").write_bytes(blob(submission(LAB2)))
    os.mkfifo(tmp_path / "ivanov" / "pipe.ipynb")  # чтение FIFO ждало бы писателя вечно
    (tmp_path / "ivanov" / "folder.ipynb").mkdir()  # папка с именем тетрадки
    result = []
    worker = threading.Thread(target=lambda: result.append(from_folder(tmp_path)), daemon=True)
    worker.start()
    worker.join(10)
    assert result, "сбор работ завис"
    found, problems = result[0]
    assert [upload.path for upload in found] == [f"ivanov/{LAB2}.ipynb"]
    assert [(p.file, p.problem) for p in problems] == [
        ("ivanov/pipe.ipynb", "это не обычный файл — не открыт")
    ]


def test_names_that_are_not_utf8_become_printable(tmp_path):
    folder = tmp_path / os.fsdecode(b"petrov\xff")
    folder.mkdir()
    (folder / f"{LAB2}.ipynb").write_bytes(blob(submission(LAB2)))
    (folder / os.fsdecode(b"link\xfe.ipynb")).symlink_to(folder / f"{LAB2}.ipynb")
    found, problems = from_folder(tmp_path)
    assert [upload.path for upload in found] == [f"petrov\ufffd/{LAB2}.ipynb"]
    assert [p.file for p in problems] == ["petrov\ufffd/link\ufffd.ipynb"]
    submissions, _ = route(found, RELEASES)
    assert [s.student for s in submissions] == ["petrov"]


# --------------------------------------------------------------------------- одно имя


NFC = "Иванов Йосиф"
NFD = unicodedata.normalize("NFD", NFC)


def test_composed_and_decomposed_names_are_one_student(tmp_path):
    assert NFC != NFD
    assert owner(Upload((NFD, "x.ipynb"), b""), LABS) == owner(Upload((NFC, "x.ipynb"), b""), LABS)
    assert owner(Upload((f"{NFD}_{LAB2}.ipynb",), b""), LABS) == student_id(NFC)
    for name, lab in ((NFC, LAB2), (NFD, LAB4)):
        (tmp_path / name / lab).mkdir(parents=True)
        (tmp_path / name / lab / f"{lab}.ipynb").write_bytes(blob(submission(lab)))
    found, problems = from_folder(tmp_path)
    submissions, routed = route(found, RELEASES)
    assert not problems and not routed
    assert {(s.student, s.lab) for s in submissions} == {
        ("Иванов_Йосиф", LAB2),
        ("Иванов_Йосиф", LAB4),
    }
    assert all(unicodedata.is_normalized("NFC", s.file) for s in submissions)


def test_composed_and_decomposed_names_in_a_zip_are_one_student(tmp_path):
    archive = tmp_path / "export.zip"
    archive.write_bytes(
        zip_with(
            [
                (f"{NFC}_1_assignsubmission_file_/{LAB2}.ipynb", blob(submission(LAB2))),
                (f"{NFD}_1_assignsubmission_file_/{LAB4}.ipynb", blob(submission(LAB4))),
            ]
        )
    )
    found, _ = from_zip(archive)
    submissions, _ = route(found, RELEASES)
    assert {s.student for s in submissions} == {"иванов_йосиф"}


# --------------------------------------------------------------------------- JSON-бомбы


def nested(depth):
    """``depth`` вложенных списков: [[…[0]…]]."""
    value = 0
    for _ in range(depth):
        value = [value]
    return value


def with_output(data):
    nb = submission(LAB2)
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
    cell["outputs"] = [{"output_type": "display_data", "data": data, "metadata": {}}]
    return nb


@pytest.mark.parametrize("lab", LABS)
def test_real_notebooks_are_far_below_the_json_limits(lab):
    check_structure((ROOT / "solutions" / lab / f"{lab}.ipynb").read_bytes())
    check_structure(blob(submission(lab)))


def test_a_long_training_log_is_still_a_notebook():
    log = {"output_type": "stream", "name": "stdout", "text": [f"шаг {i}\n" for i in range(50_000)]}
    nb = submission(LAB2)
    next(c for c in nb["cells"] if c["cell_type"] == "code")["outputs"] = [log] * 10
    assert read_notebook(blob(nb))["cells"]


def test_json_deeper_than_the_limit_is_rejected_before_parsing():
    outermost = 6  # тетрадка, cells, ячейка, outputs, вывод, data — 6 уровней до значения
    inside = MAX_JSON_DEPTH - outermost
    read_notebook(blob(with_output({"application/json": nested(inside)})))
    with pytest.raises(ValueError, match="слишком глубокая вложенность JSON"):
        read_notebook(blob(with_output({"application/json": nested(inside + 1)})))
    found = [Upload(("ivanov", f"{LAB2}.ipynb"), blob(with_output({"x": nested(900)})))]
    submissions, problems = route(found, RELEASES)
    assert not submissions
    assert [(p.student, p.problem) for p in problems] == [
        (
            "ivanov",
            f"файл повреждён: слишком глубокая вложенность JSON (больше {MAX_JSON_DEPTH} "
            "уровней, в тетрадке Jupyter их меньше десяти)",
        )
    ]


def test_brackets_inside_strings_do_not_count():
    source = "x = " + "[" * 10_000 + "]" * 10_000 + ' + "\\" + \'"\'\n'
    nb = submission(LAB2)
    next(c for c in nb["cells"] if c["cell_type"] == "code")["source"] = source * 20
    check_structure(blob(nb))


@pytest.mark.parametrize(
    ("items", "why"),
    [
        (["[]"] * (MAX_JSON_CONTAINERS - 100), None),
        (["[]"] * (MAX_JSON_CONTAINERS + 1), "списков и словарей"),
        (["{}"] * (MAX_JSON_CONTAINERS + 1), "списков и словарей"),
        (["0"] * (MAX_JSON_VALUES - 100), None),
        (["0"] * (MAX_JSON_VALUES + 1), "значений JSON"),
    ],
    ids=["lists-below", "lists-above", "dicts-above", "numbers-below", "numbers-above"],
)
def test_absurd_numbers_of_json_values_are_rejected(items, why):
    data = b'{"cells": [], "metadata": {"x": [' + ",".join(items).encode() + b"]}}"
    if why is None:
        assert read_notebook(data)["cells"] == []
    else:
        with pytest.raises(ValueError, match=why):
            read_notebook(data)


def test_a_bomb_of_empty_lists_does_not_reach_the_parser():
    data = b'{"cells": [], "metadata": {"x": [' + b"[]," * 2_000_000 + b"[]]}}"
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="списков и словарей"):
            read_notebook(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < len(data) + 2 * 1024**2  # копия текста, а не гигабайт объектов


def test_a_lone_surrogate_is_replaced_with_a_note():
    nb = submission(LAB2)
    nb["cells"][0]["source"] = "эмодзи \ud83d обрезан, а пара \ud83d\ude00 — нет"
    notes = []
    read = read_notebook(json.dumps(nb).encode(), notes)
    assert read["cells"][0]["source"] == "эмодзи \ufffd обрезан, а пара \U0001f600 — нет"
    json.dumps(read, ensure_ascii=False).encode("utf-8")
    assert notes and "суррогаты" in notes[0]

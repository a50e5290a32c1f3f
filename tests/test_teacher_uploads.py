"""Сбор работ: кто сдал, какую лабораторную, что делать с битыми файлами и архивами LMS."""

import io
import json
import stat
import zipfile

import pytest

from feedback.teacher.uploads import (
    Upload,
    from_folder,
    from_zip,
    identify_lab,
    owner,
    read_notebook,
    route,
)

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
        (
            ("Иванов Иван_123_assignsubmission_file_", f"{LAB2}.ipynb"),
            "Иванов_Иван_123_assignsubmission_file",
        ),
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
    assert {(s.student, s.lab) for s in submissions} == {
        ("Иванов_Иван_1_assignsubmission_file", LAB2),
        ("sidorov", LAB4),
    }
    reasons = " | ".join(p.problem for p in problems)
    assert "за пределы архива" in reasons and "ссылка" in reasons
    assert "несколько файлов" in reasons and "__MACOSX" not in reasons

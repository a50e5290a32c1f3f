"""Отчёты — обратно учащимся через Moodle: архив «Загрузить несколько файлов с отзывами в ZIP».

``make export`` складывает отчёты каждой лабораторной в ``export/<лаб>_feedback_files.zip``:
папка учащегося — та же, что в архиве «Скачать все ответы» этого задания
(``<Полное имя>_<N>_assignsubmission_file_``), в ней отчёт ``<лаб>.html``. Moodle раздаёт
файлы по этим папкам, и отчёт каждого оказывается в его отзыве «Отзыв в виде файла».

Как Moodle читает архив (mod/assign/feedback/file/importziplib.php,
``is_valid_filename_for_import``): каждая часть пути делится по «_» не больше чем на пять
кусков; подходит первая, где кусков не меньше четырёх, второй — число, оно — номер участника
этого задания (``get_uniqueid_for_user``), а третий и четвёртый — тип и имя модуля задания
(``assignsubmission``, ``file``). Имя в первом куске Moodle не читает, поэтому «_» в нём
недопустим (в своих папках Moodle заменяет его пробелом). Файл, у которого ни одна часть
пути не дала участника задания, Moodle молча пропускает.

Поэтому в архив идёт только учащийся, у которого есть отчёт и номер участника
этой лабораторной (``lms_ids.csv``, :mod:`feedback.teacher.intake.roster`). Папка — та, что была в
скачанном архиве: ``make grade`` запоминает её в ``lms_folders.json``
(:func:`remember_folders`); если её нет (работа оценена раньше) или Moodle прочёл бы её
иначе, папка составляется заново из имени и номера. Два учащихся с одним номером в одной
лабораторной в архив не идут оба: отчёт одного не должен достаться другому.

Архив пишется целиком или никак (:func:`feedback.teacher.core.files.replacing`), имена записей —
в UTF-8 с флагом UTF-8 (бит 11), чтобы Moodle не перекодировал кириллицу.
"""

from __future__ import annotations

import json
import re
import time
import zipfile
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from feedback.teacher.core import files
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.intake import roster
from feedback.teacher.records import gradebook

#: Модуль ответа, от имени которого Moodle называет папки «Скачать все ответы».
PLUGIN = ("assignsubmission", "file")
#: Флаг записи zip «имя в UTF-8» (APPNOTE 4.4.4, бит 11).
UTF8_FLAG = 0x800
#: Так Moodle называет учащегося при анонимной проверке (и здесь — когда имени нет).
PARTICIPANT = "Участник"

#: Что Moodle убирает из имени папки (clean_filename, PARAM_FILE): управляющие символы,
#: разделители путей и символы, недопустимые в именах файлов.
_NOT_IN_NAME = re.compile(r"[\x00-\x1f\x7f&<>\"`|':\\/*?]")
#: Начало имени файла из архива Moodle без папок: ``Иванов Иван_123_assignsubmission_file_``.
_FLAT = re.compile(r"^(.+?_\d+_assignsubmission_[A-Za-z0-9]+_)")


def moodle_participant(part: str) -> tuple[str, str, str] | None:
    """Часть пути так, как её разбирает импорт Moodle: (номер участника, тип, имя модуля)."""
    info = part.split("_", 4)
    if len(info) < 4 or not info[1].isascii() or not info[1].isdigit():
        return None
    return str(int(info[1])), info[2], info[3]


def submission_folder(path: str) -> str | None:
    """Папка Moodle в пути работы внутри архива «Скачать все ответы» (или ``None``).

    Папка — первая часть пути вида ``<имя>_<N>_assignsubmission_<модуль>_``; у архива без
    папок (файлы ``<имя>_<N>_assignsubmission_file_<файл>``) — это начало имени файла.
    Прочтёт ли её Moodle, решает :func:`build`.
    """
    *folders, name = path.split("/")
    for part in folders:
        if roster.parse_lms_name(part):
            return part
    flat = _FLAT.match(name)
    return flat[1] if flat else None


def read_folders(workspace: Workspace) -> dict[str, dict[str, str]]:
    """``lms_folders.json``: лабораторная → учащийся → папка в архиве Moodle."""
    try:
        data = json.loads(workspace.lms_folders.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {
        lab: {str(k): str(v) for k, v in folders.items()}
        for lab, folders in data.items()
        if isinstance(folders, dict)
    }


def remember_folders(workspace: Workspace, works: Iterable[tuple[str, str, str]]) -> None:
    """Дописывает папки Moodle работ этого запуска (учащийся, лабораторная, путь в архиве).

    Папки прежних архивов и других лабораторных остаются; работа не из архива Moodle
    (папка без номера участника) ничего не меняет.
    """
    merged = read_folders(workspace)
    for student, lab, path in works:
        folder = submission_folder(path)
        if student != "?" and folder is not None:
            merged.setdefault(lab, {})[student] = folder
    if merged or workspace.lms_folders.exists():
        ordered = {lab: dict(sorted(merged[lab].items())) for lab in sorted(merged)}
        files.write_text(workspace.lms_folders, json.dumps(ordered, ensure_ascii=False, indent=1))


def made_up_folder(name: str, participant: str) -> str:
    """Папка, как её назвал бы Moodle: имя без «_» и запрещённых символов, номер, модуль."""
    clean = " ".join(_NOT_IN_NAME.sub("", name.replace("_", " ")).split()) or PARTICIPANT
    return f"{clean}_{participant}_{PLUGIN[0]}_{PLUGIN[1]}_"


def _usable(folder: str, participant: str) -> bool:
    """Папка из скачанного архива годится: Moodle прочтёт в ней этот номер и модуль ответа."""
    if not folder or re.search(r"[\x00-\x1f\x7f/\\]", folder):
        return False
    parsed = moodle_participant(folder)
    return (
        parsed is not None
        and parsed[0] == participant
        and parsed[1] == PLUGIN[0]
        and parsed[2].isalnum()
    )


def _full_name(person: tuple[str | None, str | None, str | None] | None, student: str) -> str:
    if person is None:
        return student
    last, first, _ = person
    return " ".join(part for part in (first, last) if part) or student


@dataclass
class HandBack:
    """Архив отзывов одной лабораторной и кто в него не попал."""

    lab: str
    path: Path | None
    #: учащийся → папка в архиве
    folders: dict[str, str] = field(default_factory=dict)
    #: отчёт есть, номера участника Moodle этой лабораторной нет
    no_participant: list[str] = field(default_factory=list)
    #: у двух и больше учащихся один номер участника: не идёт ни один
    shared_number: list[str] = field(default_factory=list)


def reports(workspace: Workspace) -> dict[str, dict[str, Path]]:
    """Отчёты в рабочей папке: лабораторная → учащийся → файл отчёта."""
    found: dict[str, dict[str, Path]] = defaultdict(dict)
    for path in sorted(workspace.feedback_reports.glob("*/*/*.html")):
        student, lab = path.parent.parent.name, path.parent.name
        if path == workspace.learner_report(student, lab) and path.is_file():
            found[lab][student] = path
    return dict(found)


def _entry(name: str, source: Path) -> zipfile.ZipInfo:
    stamp = time.localtime(max(source.stat().st_mtime, 315532800))  # zip не знает дат до 1980
    info = zipfile.ZipInfo(name, date_time=stamp[:6])
    info.flag_bits |= UTF8_FLAG
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def build(
    workspace: Workspace,
    lab: str,
    learners: Mapping[str, Path],
    participants: Mapping[tuple[str, str], str],
    folders: Mapping[str, str],
    people: Mapping[str, tuple[str | None, str | None, str | None]],
) -> HandBack:
    """Архив отзывов лабораторной ``lab`` из отчётов ``learners`` (учащийся → отчёт)."""
    done = HandBack(lab, None)
    numbers: dict[str, list[str]] = defaultdict(list)
    for student in sorted(learners):
        number = participants.get((student, lab))
        if number is None:
            done.no_participant.append(student)
        else:
            numbers[number].append(student)
    chosen: dict[str, str] = {}
    for number, students in numbers.items():
        if len(students) > 1:
            done.shared_number += students
            continue
        (student,) = students
        folder = folders.get(student, "")
        if not _usable(folder, number):
            folder = made_up_folder(_full_name(people.get(student), student), number)
        chosen[student] = folder
    done.shared_number.sort()
    if not chosen:
        return done
    target = workspace.feedback_archive(lab)
    target.parent.mkdir(parents=True, exist_ok=True)
    with files.replacing(target, "wb") as fh, zipfile.ZipFile(fh, "w") as zf:
        for student, folder in sorted(chosen.items(), key=lambda item: item[1]):
            report = learners[student]
            zf.writestr(_entry(f"{folder}/{report.name}", report), report.read_bytes())
    done.path, done.folders = target, chosen
    return done


def build_all(workspace: Workspace) -> list[HandBack]:
    """Архивы отзывов всех лабораторных, у которых есть отчёты (см. модуль)."""
    found = reports(workspace)
    if not found:
        return []
    participants = roster.read_participants(workspace)
    folders = read_folders(workspace)
    people = gradebook.students(workspace) if workspace.has_gradebook else {}
    return [
        build(workspace, lab, found[lab], participants, folders.get(lab, {}), people)
        for lab in sorted(found)
    ]

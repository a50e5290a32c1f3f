"""make grade: версия эталонной проверки, битые архивы, таблицы и что говорит консоль."""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys
import zipfile

import nbformat
import pytest

from feedback.teacher.core.results import TaskOutcome, UnitResult
from feedback.teacher.core.settings import PACKAGE, Settings
from feedback.teacher.core.tables import CaseRow, Problem, ReviewRow, TimingRow
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.grading import messages, reference
from feedback.teacher.grading.grade import collect
from feedback.teacher.grading.reference import reference_version
from feedback.teacher.grading.run import SetupError
from feedback.teacher.intake.uploads import Submission
from feedback.teacher.records import class_tables
from feedback.teacher.records.class_tables import ClassTables

from notebook_runner import ROOT


def test_reference_version_changes_with_the_package_and_the_source(tmp_path):
    package = tmp_path / "feedback"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    source = tmp_path / "lab.ipynb"
    shutil.copy(Settings().labs[0].source, source)

    first = reference_version(source, package)
    assert reference_version(source, package) == first  # ничего не менялось
    (package / "__pycache__").mkdir(exist_ok=True)
    (package / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert reference_version(source, package) == first  # байт-код не в счёт

    check = package / "flops.py"
    check.write_text(check.read_text(encoding="utf-8") + "\n# правка\n", encoding="utf-8")
    after_package = reference_version(source, package)
    assert after_package != first

    source.write_bytes(source.read_bytes() + b"\n")
    assert reference_version(source, package) != after_package


def test_the_real_package_is_the_feedback_package():
    assert (PACKAGE / "__init__.py").is_file() and PACKAGE.name == "feedback"


@pytest.mark.slow  # процессы Python с импортом nbformat и nbgrader
@pytest.mark.parametrize(
    "entry", ["feedback.teacher.commands.grade", "feedback.teacher.unit.process"]
)
def test_grading_does_not_build_iri_grammars_at_import(entry):
    """rfc3987_syntax строит грамматики Lark 1,5 с и оцениванию не нужен; проверка схемы — да.

    Входы процессов оценивания — команда make grade и процесс единицы — ставят запрет сами,
    первым делом (feedback.teacher.unit.lean).
    """
    probe = (
        f"import sys, {entry}, nbformat\n"
        "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1')])\n"
        "nbformat.validate(nb)\n"
        "bad = nbformat.from_dict({**nb, 'cells': [{'cell_type': 'code'}]})\n"
        "try:\n    nbformat.validate(bad)\nexcept nbformat.ValidationError:\n    print('invalid')\n"
        "print(sorted(name for name in ('lark', 'rfc3987_syntax') if sys.modules.get(name)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["invalid", "[]"]


@pytest.mark.slow  # процессы Python с импортом nbformat и nbgrader
def test_only_grading_processes_go_without_rfc3987_syntax():
    """formgrader (nbgrader_config.py: препроцессоры, отчёты) пакет не запрещает.

    Запрет — явный вызов входов процессов оценивания, а не побочное действие импорта: и сами
    модули оценивания его не ставят.
    """
    probe = (
        "import sys, feedback.teacher, feedback.teacher.pages.preprocessors, "
        "feedback.teacher.pages.reports, feedback.teacher.grading.grade, "
        "feedback.teacher.unit.pipeline\n"
        "print('rfc3987_syntax' in sys.modules and sys.modules['rfc3987_syntax'] is None)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["False"]


def lms_zip() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("ivanov/lab_7_2_training_flops.ipynb", '{"cells": []}')
    return buffer.getvalue()


@pytest.mark.parametrize(
    "data",
    [
        b"not a zip",
        lms_zip()[:40],  # обрезан при скачивании
        lms_zip().replace(b"PK\x01\x02", b"XX\x01\x02"),  # оглавление испорчено
    ],
    ids=["not-a-zip", "truncated", "bad-directory"],
)
def test_a_broken_archive_is_a_teacher_error_in_russian(tmp_path, data):
    """Архив целиком — ввод преподавателя: код выхода 2 и объяснение, а не трассировка."""
    archive = tmp_path / "export.zip"
    archive.write_bytes(data)
    with pytest.raises(SetupError, match="не открывается: это не zip или он обрезан"):
        collect(archive, {})


def test_tables_neutralise_formulas_from_uploads(tmp_path):
    """В problems.csv и needs_review.csv имена файлов и код учащихся не становятся формулами."""
    tables = ClassTables(
        problems=[Problem("ivanov", "lab", '=HYPERLINK("http://x","y").ipynb', "-2+3")],
        review=[ReviewRow("ivanov", "lab", "@SUM", 3, "+1", "x")],
        cases=[CaseRow.drawn("ivanov", "lab", "\tx", {"a": -1})],
        timings=[TimingRow.measured("ivanov", "lab", 2.5)],
    )
    class_tables.write(Workspace(tmp_path), tables)

    def rows(name):
        with open(tmp_path / name, newline="", encoding="utf-8") as fh:
            return list(csv.reader(fh))[1:]

    assert rows("problems.csv") == [
        ["ivanov", "lab", '\'=HYPERLINK("http://x","y").ipynb', "'-2+3"]
    ]
    assert rows("needs_review.csv") == [["ivanov", "lab", "'@SUM", "3", "'+1", "x"]]
    assert rows("cases.csv") == [["ivanov", "lab", "'\tx", '{"a": -1}']]
    assert rows("timings.csv") == [["ivanov", "lab", "2.5", "", "", ""]]  # без замеров ядра


@pytest.mark.slow  # команда alembic — процесс Python с импортом nbgrader
def test_the_schema_version_read_in_process_is_what_alembic_says():
    from feedback.teacher.records import gradebook

    gradebook._read_alembic_version_in_process()
    with gradebook._scripts_on_path():
        assert gradebook.alembic_head() == gradebook.nbgrader_alembic_version()


# --------------------------------------------------------------------------- консоль


LAB2, LAB4 = "lab_7_2_training_flops", "lab_7_4_gpu_memory"


def release(lab: str):
    return nbformat.read(ROOT / "notebooks" / lab / f"{lab}.ipynb", as_version=4)


def works(count: int) -> list[Submission]:
    return [Submission(f"s{i}", LAB2, f"s{i}/{LAB2}.ipynb", {}) for i in range(count)]


def test_the_console_says_how_many_works_were_graded_and_how_many_were_not():
    broken = [
        Problem("?", "?", "Untitled.ipynb", "не удалось понять, чья это работа"),
        Problem("kozlov", LAB2, "kozlov/a.ipynb", "у учащегося несколько файлов"),
        Problem("kozlov", LAB2, "kozlov/b.ipynb", "у учащегося несколько файлов"),
    ]
    assert messages.count_line(works(5), broken) == (
        "Оценено: 5 работ; не оценено: 3 файла — почему, сказано в problems.csv."
    )
    assert messages.count_line(works(1), broken[:1]) == (
        "Оценено: 1 работа; не оценено: 1 файл — почему, сказано в problems.csv."
    )
    assert messages.count_line(works(0), broken) == (
        "Оценено: 0 работ; не оценено: 3 файла — почему, сказано в problems.csv."
    )
    # тёзки: работа оценена, но строка о ней в problems.csv есть
    namesake = Problem("s1_301", LAB2, f"s1/{LAB2}.ipynb", "участника с именем")
    assert messages.count_line(works(2), [namesake]) == (
        "Оценено: 2 работы; неоценённых файлов нет; об оценённых там же 1 строка."
    )


def test_the_progress_line_says_how_many_points_the_teacher_still_gives():
    nb = release(LAB4)
    automatic = {
        cell.metadata.nbgrader.grade_id: TaskOutcome(
            cell.metadata.nbgrader.points, cell.metadata.nbgrader.points
        )
        for cell in nb.cells
        if cell.cell_type == "code"
        and cell.metadata.get("nbgrader", {}).get("grade")
        and not cell.metadata.nbgrader.get("solution")
    }
    manual = messages.manual_points(nb)
    # 7.4 — 13 баллов (docs/teaching.md): 5 ставит автопроверка, 8 — преподаватель
    assert (sum(t.points for t in automatic.values()), manual) == (5, 8)
    result = UnitResult("иванов_иван", LAB4, nb, automatic, wall_seconds=2.46)
    assert messages.progress_line(4, 5, result, manual) == (
        "[4/5] иванов_иван · lab_7_4_gpu_memory: автопроверка: 5 из 5, ещё 8 — вручную (2,5 с)"
    )
    # Сколько ждёт именно эта работа после записи: оценённое и не изменившееся — не в счёт.
    assert messages.progress_line(4, 5, result, manual, pending=1) == (
        "[4/5] иванов_иван · lab_7_4_gpu_memory: автопроверка: 5 из 5, ещё 1 — вручную (2,5 с)"
    )
    assert messages.progress_line(4, 5, result, manual, pending=0) == (
        "[4/5] иванов_иван · lab_7_4_gpu_memory: автопроверка: 5 из 5, ручной оценки не ждёт "
        "(2,5 с)"
    )
    halves = {"a": TaskOutcome(0.5, 1.5)}
    assert messages.progress_line(1, 1, UnitResult("x", LAB2, nb, halves), 0) == (
        "[1/1] x · lab_7_2_training_flops: 0,5 из 1,5"
    )


def test_the_reference_warm_up_speaks_before_it_starts_and_when_done(tmp_path, monkeypatch, capsys):
    """Первый make grade GPU-лабораторной проверяет эталон десятки секунд: консоль говорит
    об этом до начала (а не молчит до «[1/N]») и когда эталон проверен."""
    from types import SimpleNamespace

    seen_before_run: list[str] = []

    def run_local(jobs, workers, on_result, units):
        seen_before_run.extend(capsys.readouterr().err.splitlines())
        for job in jobs:
            on_result(UnitResult("эталон", job.lab, {}, {"t": TaskOutcome(1, 1, passed=True)}))

    monkeypatch.setattr(reference, "run_local", run_local)
    monkeypatch.setattr(reference, "with_template", lambda job, templates: job)
    lab = "lab_7_5_bfloat16_lora"
    pending = {lab: (SimpleNamespace(lab=lab, gpu=True), tmp_path / "stamp")}
    workspace = SimpleNamespace(units=tmp_path / "units")
    run = SimpleNamespace(jobs=1, settings=SimpleNamespace(workspace=workspace))
    reference.warm_up(run, {lab}, tmp_path, {}, pending)
    assert seen_before_run == [
        f"… проверяю эталонное решение {lab} в песочнице (раз на версию; GPU-лабораторная, "
        "крошечная модель — до минуты)…"
    ]
    (done,) = capsys.readouterr().err.splitlines()
    assert done.startswith(f"… эталонное решение {lab} проверено (") and done.endswith(" с)")
    assert (tmp_path / "stamp").exists()

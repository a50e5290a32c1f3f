"""Оценивание одной командой: ``make grade`` (или ``make grade SUBMISSIONS=путь``).

Что происходит:

1. Сбор работ. Папка в раскладке nbgrader (``<студент>/<лабораторная>/<тетрадка>.ipynb``)
   копируется в рабочую папку; архив .zip, выгруженный из LMS, разбирается
   ``nbgrader zip_collect`` (имя студента — первая часть пути до «_» или «/», см.
   :data:`STUDENT_FILE_PATTERN`).
2. Задания регистрируются в базе оценок (``nbgrader generate_assignment`` в рабочую папку).
3. ``nbgrader autograde`` проверяет все работы одним процессом в строгом режиме.
4. ``nbgrader generate_feedback`` пишет отчёты для учащихся по-русски.
5. ``nbgrader export`` сохраняет grades.csv, а рядом — grades_by_task.csv с баллами по
   каждому заданию.

Рабочая папка — .course-work/ или ``COURSE7_GRADING_DIR``; в репозиторий она не попадает.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from feedback.teacher.release import ROOT, lab_sources

#: Архив LMS: «ivanov_12345_lab_7_2_training_flops.ipynb» или «ivanov/lab_7_2_….ipynb».
STUDENT_FILE_PATTERN = (
    r".*/extracted/(?:[^/]+/)*?(?P<student_id>[^/_]+)[^/]*?[/_](?P<file_id>{notebook})$"
)


def work_dir() -> Path:
    """Рабочая папка оценивания (её же использует nbgrader_config.py)."""
    return Path(os.environ.get("COURSE7_GRADING_DIR", ROOT / ".course-work")).resolve()


def nbgrader(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Запускает nbgrader из корня курса, чтобы он прочитал nbgrader_config.py."""
    command = [sys.executable, "-m", "nbgrader", *args, "--log-level=WARN"]
    # nbgrader вызывает alembic из PATH: добавляем папку скриптов нашего окружения.
    scripts = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": os.pathsep.join([scripts, os.environ.get("PATH", "")])}
    return subprocess.run(command, cwd=ROOT, check=check, env=env)


def labs() -> list[str]:
    return [path.parent.name for path in lab_sources()]


def collect(submissions: Path, work: Path) -> None:
    """Кладёт работы в ``work/submitted`` в раскладке nbgrader."""
    submitted = work / "submitted"
    if submissions.is_file() and zipfile.is_zipfile(submissions):
        for source in lab_sources():
            lab = source.parent.name
            archive = work / "downloaded" / lab / "archive"
            shutil.rmtree(archive.parent, ignore_errors=True)
            archive.mkdir(parents=True)
            shutil.copy2(submissions, archive / submissions.name)
            pattern = STUDENT_FILE_PATTERN.format(notebook=source.name.replace(".", r"\."))
            # nbgrader склеивает этот путь с корнем курса как строку: нужен относительный.
            downloaded = os.path.relpath(work / "downloaded", ROOT)
            nbgrader(
                "zip_collect",
                lab,
                "--force",
                f"--ZipCollectApp.downloaded_directory={downloaded}",
                f"--FileNameCollectorPlugin.named_regexp={pattern}",
            )
    elif submissions.is_dir():
        if submissions.resolve() != submitted.resolve():
            shutil.copytree(submissions, submitted, dirs_exist_ok=True)
    else:
        raise SystemExit(f"Не найдены работы: {submissions} — нужна папка или архив .zip.")


def register_assignments(work: Path) -> None:
    """Заносит лабораторные в базу оценок; выпуск идёт в рабочую папку, notebooks/ не трогаем."""
    for lab in labs():
        nbgrader(
            "generate_assignment",
            lab,
            "--force",
            f"--CourseDirectory.release_directory={work / 'release'}",
        )


def export_by_task(work: Path) -> Path:
    """grades_by_task.csv: студент, лабораторная, задание, баллы автопроверки и максимум."""
    from nbgrader.api import Gradebook

    target = work / "grades_by_task.csv"
    with (
        Gradebook(f"sqlite:///{work / 'gradebook.db'}") as gradebook,
        open(target, "w", newline="", encoding="utf-8") as fh,
    ):
        writer = csv.writer(fh)
        writer.writerow(["student_id", "assignment", "grade_id", "auto_score", "max_score"])
        for assignment in gradebook.assignments:
            for submission in gradebook.assignment_submissions(assignment.name):
                for notebook in submission.notebooks:
                    for grade in notebook.grades:
                        writer.writerow(
                            [
                                submission.student.id,
                                assignment.name,
                                grade.name,
                                "" if grade.auto_score is None else grade.auto_score,
                                grade.max_score,
                            ]
                        )
    return target


def grade(submissions: Path | None = None) -> Path:
    """Весь цикл оценивания; возвращает путь к grades.csv."""
    work = work_dir()
    work.mkdir(parents=True, exist_ok=True)
    collect(submissions or work / "submitted", work)
    register_assignments(work)
    nbgrader("autograde", "*", "--create", "--force")
    nbgrader("generate_feedback", "*", "--force")
    grades = work / "grades.csv"
    nbgrader("export", f"--CsvExportPlugin.to={grades}")
    export_by_task(work)
    return grades


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Оценить все работы курса 7 через nbgrader.")
    parser.add_argument(
        "submissions",
        nargs="?",
        type=Path,
        help="папка с работами (раскладка nbgrader) или архив .zip из LMS; "
        "по умолчанию — submitted/ в рабочей папке",
    )
    args = parser.parse_args(argv)
    grades = grade(args.submissions)
    work = work_dir()
    print(f"Оценки: {grades}")
    print(f"Оценки по заданиям: {work / 'grades_by_task.csv'}")
    print(f"Отчёты для учащихся: {work / 'feedback_reports'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

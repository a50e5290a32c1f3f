"""Настройки nbgrader: сам репозиторий — курс nbgrader.

solutions/ — исходные тетрадки с решениями и тестами, notebooks/ — выпуск для
учащихся. Рабочие папки nbgrader (база оценок, submitted/, autograded/, отчёты)
лежат в одной игнорируемой папке: .course-work/ или COURSE7_GRADING_DIR.
"""

import os
import sys
from pathlib import Path

import nbgrader
from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.converters.autograde import Autograde
from nbgrader.converters.generate_assignment import GenerateAssignment
from nbgrader.preprocessors import ClearSolutions, Execute, GetGrades

from feedback.teacher.preprocessors import (
    CourseClearSolutions,
    DropLibraryStderr,
    ShortenReportErrors,
)

ROOT = Path(__file__).resolve().parent
WORK = Path(os.environ.get("COURSE7_GRADING_DIR", ROOT / ".course-work")).resolve()

c = get_config()

c.CourseDirectory.course_id = "course7"
c.CourseDirectory.root = str(ROOT)
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "notebooks"
c.CourseDirectory.submitted_directory = str(WORK / "submitted")
c.CourseDirectory.autograded_directory = str(WORK / "autograded")
c.CourseDirectory.feedback_directory = str(WORK / "feedback_reports")
c.CourseDirectory.solution_directory = str(WORK / "solution_release")
c.CourseDirectory.db_url = f"sqlite:///{WORK / 'gradebook.db'}"
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", ".cache"]

c.GenerateAssignment.preprocessors = [
    CourseClearSolutions if preprocessor is ClearSolutions else preprocessor
    for preprocessor in GenerateAssignment.class_traits()["preprocessors"].default()
]

# Лимит на одну ячейку при проверке: зависшая функция не задержит остальных.
c.Execute.timeout = int(os.environ.get("COURSE7_CELL_TIMEOUT", "600"))
c.Execute.interrupt_on_timeout = True

# Предупреждения библиотек в stderr не должны стоить баллов (nbgrader за них снимает всё).
c.Autograde.autograde_preprocessors = [
    step
    for preprocessor in Autograde.class_traits()["autograde_preprocessors"].default()
    for step in ((preprocessor, DropLibraryStderr) if preprocessor is Execute else (preprocessor,))
]

# Отчёты для учащихся: русские подписи, без скрытых тестов и длинных трассировок.
c.GenerateFeedback.preprocessors = [ShortenReportErrors, GetGrades, CSSHTMLHeaderPreprocessor]
c.HTMLExporter.template_name = "feedback_ru"
c.HTMLExporter.extra_template_basedirs = [
    str(ROOT / "feedback" / "teacher" / "templates"),
    str(Path(nbgrader.__file__).parent / "server_extensions" / "formgrader" / "templates"),
]

if {"autograde", "validate"} & set(sys.argv[1:2]):
    os.environ["FEEDBACK_STRICT"] = "1"  # в оценивании непройденная проверка роняет ячейку
    # GPU-лабораторные проверяются на обычной машине: крошечная модель, те же проверки.
    os.environ.setdefault("COURSE7_TINY", "1")

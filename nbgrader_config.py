"""Настройки nbgrader: сам репозиторий — курс nbgrader.

solutions/ — исходные тетрадки с решениями и тестами, notebooks/ — выпуск для
учащихся. Рабочие папки nbgrader (база оценок, submitted/, autograded/, отчёты)
лежат в одной игнорируемой папке: .course-work/ или COURSE7_GRADING_DIR.
"""

import os
import sys
from pathlib import Path

from nbgrader.converters.generate_assignment import GenerateAssignment
from nbgrader.preprocessors import ClearSolutions

from feedback.teacher.preprocessors import CODE_STUB, TEXT_STUB, CourseClearSolutions

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

c.ClearSolutions.code_stub = {"python": CODE_STUB}
c.ClearSolutions.text_stub = TEXT_STUB
c.GenerateAssignment.preprocessors = [
    CourseClearSolutions if preprocessor is ClearSolutions else preprocessor
    for preprocessor in GenerateAssignment.class_traits()["preprocessors"].default()
]

c.Execute.timeout = 600  # секунд на одну ячейку; GPU-лабораторные в крошечном режиме быстрее
c.Execute.interrupt_on_timeout = True

if {"autograde", "validate"} & set(sys.argv[1:2]):
    os.environ["FEEDBACK_STRICT"] = "1"  # в оценивании непройденная проверка роняет ячейку

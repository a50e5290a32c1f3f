"""Настройки nbgrader: сам репозиторий — курс nbgrader.

solutions/ — исходные тетрадки с решениями и тестами, notebooks/ — выпуск для
учащихся. Рабочие папки nbgrader (база оценок, submitted/, autograded/, отчёты)
лежат в одной игнорируемой папке: .course-work/ или COURSE7_GRADING_DIR. Все пути —
из настроек оценивания (feedback/teacher/core/settings.py), переменные — из реестра
feedback/settings.py.
"""

import os
import sys
from pathlib import Path

from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
from nbgrader.converters.generate_assignment import GenerateAssignment
from nbgrader.preprocessors import ClearSolutions

from feedback.settings import STRICT, TINY
from feedback.teacher.core.settings import Settings
from feedback.teacher.notebook.assemble import SKIP_TAG
from feedback.teacher.pages.preprocessors import (
    CourseClearSolutions,
    RefuseAutograde,
    ReportCleanup,
    ReportGrades,
)
from feedback.teacher.pages.reports import ReportExporter, template_settings

SETTINGS = Settings.from_env(root=Path(__file__).resolve().parent)

c = get_config()

for name, value in SETTINGS.course_directory().items():
    setattr(c.CourseDirectory, name, value)
c.CourseDirectory.ignore = [".ipynb_checkpoints", "*.pyc", "__pycache__", ".cache"]

c.GenerateAssignment.preprocessors = [
    CourseClearSolutions if preprocessor is ClearSolutions else preprocessor
    for preprocessor in GenerateAssignment.class_traits()["preprocessors"].default()
]

# Работы оценивает make grade (feedback.teacher.grading.grade): каждую в своей песочнице, а вердикты
# выносит вне неё. Встроенный nbgrader autograde выполнил бы код учащихся без изоляции.
c.Autograde.sanitize_preprocessors = [RefuseAutograde]

# Отчёты для учащихся (make feedback, nbgrader generate_feedback): русские подписи, без
# заметок для преподавателя. Шаблон задан только экспортёру отчётов: общий HTMLExporter
# отрисовывает и работы в formgrader, и с шаблоном отчёта его страницы отвечали 500.
c.GenerateFeedback.preprocessors = [ReportCleanup, ReportGrades, CSSHTMLHeaderPreprocessor]
c.GenerateFeedback.exporter_class = ReportExporter
c.ReportExporter.merge(template_settings())

# exchange nbgrader — для курса на JupyterHub (make hub, docs/teaching.md): по умолчанию папка
# в рабочей, на сервере — COURSE7_EXCHANGE_DIR. С Moodle он не нужен, но без папки exchange
# formgrader показывает предупреждение: пустая папка в рабочей.
c.Exchange.root = str(SETTINGS.workspace.exchange)
if SETTINGS.work.is_dir() and SETTINGS.exchange_dir is None:
    SETTINGS.workspace.exchange.mkdir(exist_ok=True)

if "validate" in sys.argv[1:2]:
    os.environ[STRICT.name] = "1"  # непройденная проверка роняет ячейку
    # GPU-лабораторные проверяются на обычной машине: крошечная модель, те же проверки.
    os.environ.setdefault(TINY.name, "1")
    # Как и make grade, validate не выполняет ячейки, которые проверкам не нужны (обучение,
    # графики): они помечены тегом SKIP_TAG (grading-skip).
    c.Execute.skip_cells_with_tag = SKIP_TAG
    # Ячейки с моделью идут десятки секунд, а на занятой машине — и минуты; по умолчанию
    # nbgrader ждёт ячейку 30 с, а её вывод после ответа ядра — 4 с, и роняет тетрадку.
    c.Execute.timeout = 600
    c.Execute.iopub_timeout = 60

"""Страницы для людей: отчёт учащемуся, сводка для преподавателя, типичные ошибки и похожие ответы.

Шаблоны страниц (Jinja2 сводки и шаблон отчётов nbconvert ``feedback_ru``) лежат рядом, в
:data:`TEMPLATES`.
"""

from pathlib import Path

#: Папка шаблонов страниц.
TEMPLATES = Path(__file__).resolve().parent / "templates"

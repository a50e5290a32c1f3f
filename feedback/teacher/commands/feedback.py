"""``make feedback``: отчёты, таблицы оценок и сводка заново — после ручной проверки в formgrader.

Ничего не выполняет: отчёты — из проверенных тетрадок autograded/ и баллов базы
(:func:`feedback.teacher.pages.reports.rewrite_all`), таблицы — из базы
(:func:`feedback.teacher.records.gradebook.export`), сводка —
:func:`feedback.teacher.pages.analytics.refresh`. Выдачу отчётов через exchange на
JupyterHub делает следующая строка ``make feedback`` (команда сервера курса).
"""

from __future__ import annotations

import sys

from feedback.teacher.commands import settings_from_env
from feedback.teacher.pages import analytics, reports
from feedback.teacher.records import gradebook


def main(argv: list[str] | None = None) -> int:
    settings = settings_from_env()
    if settings is None:
        return 2
    workspace = settings.workspace
    written = reports.rewrite_all(workspace)
    print(f"Отчёты обновлены: {len(written)} (в {workspace.feedback_reports})")
    if workspace.has_gradebook:
        grades, by_task = gradebook.export(workspace)
        print(f"Оценки обновлены: {grades} и {by_task}; для Moodle — make export")
        summary = analytics.refresh(settings)
        if summary is not None:
            print(f"Сводка для преподавателя обновлена: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

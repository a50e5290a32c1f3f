"""``make summary``: таблицы оценок из базы (после formgrader), похожие ответы и сводка.

Без базы оценок (ещё не было ``make grade``) — код выхода 2 и объяснение. Папка — из
``COURSE7_GRADING_DIR`` или первым аргументом.
"""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path

from feedback.teacher.commands import settings_from_env
from feedback.teacher.pages import analytics
from feedback.teacher.records import gradebook


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    settings = settings_from_env()
    if settings is None:
        return 2
    if args:
        settings = replace(settings, work=Path(args[0]).resolve())
    if not settings.workspace.has_gradebook:
        print(
            f"Сводки нет: в {settings.work} нет базы оценок — сначала make grade.", file=sys.stderr
        )
        return 2
    gradebook.export(settings.workspace)
    written = analytics.after_grading(settings)
    print(f"Похожие ответы: {written.similar}")
    print(f"К следующей лекции: {written.notes}")
    print(f"Сводка для преподавателя: {written.summary} ({written.seconds:.1f} с)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

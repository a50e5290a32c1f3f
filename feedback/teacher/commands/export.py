"""``make export [WORKSHEET=ведомость.csv LAB=7.2]``: оценки и отчёты обратно в Moodle.

Таблицы оценок из базы, moodle_grades.csv («Импорт оценок → CSV-файл»), заполненная копия
ведомости задания (:func:`feedback.teacher.lms.export.fill_worksheet`), архивы отзывов по
лабораторным (:func:`feedback.teacher.lms.handback.build_all`) и сводка заново. Без базы
оценок или с ведомостью, которую не разобрать, — код выхода 2 и объяснение.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from feedback.formatting import plural
from feedback.teacher.commands import settings_from_env
from feedback.teacher.intake import roster
from feedback.teacher.lms import export, handback
from feedback.teacher.lms.export import ExportError
from feedback.teacher.pages import analytics
from feedback.teacher.records import gradebook


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Выгрузить оценки курса 7 для Moodle.")
    parser.add_argument(
        "--worksheet", type=Path, default=None, help="ведомость оценок задания из Moodle (CSV)"
    )
    parser.add_argument("--lab", default=None, help="лабораторная ведомости: id или номер (7.2)")
    args = parser.parse_args(argv)
    settings = settings_from_env()
    if settings is None:
        return 2
    workspace = settings.workspace
    work = workspace.folder
    if not workspace.has_gradebook:
        print(f"Выгружать нечего: в {work} нет базы оценок — сначала make grade.", file=sys.stderr)
        return 2
    try:
        grades, by_task = gradebook.export(workspace)
        target, strangers = export.moodle_grades(settings)
        filled = (
            export.fill_worksheet(settings, args.worksheet, args.lab) if args.worksheet else None
        )
        handed = handback.build_all(workspace)
    except (ExportError, roster.RosterError) as error:
        print(f"Выгрузка не сделана: {error}", file=sys.stderr)
        return 2
    print(f"Оценки: {grades} и {by_task}")
    summary = analytics.refresh(settings)  # оценки из базы — и сводка по ним же
    if summary is not None:
        print(f"Сводка для преподавателя: {summary}")
    print(f"Для Moodle «Импорт оценок → CSV-файл»: {target}")
    if strangers:
        print(
            f"В базе есть работы учащихся, которых нет в списке {workspace.roster}: "
            f"{_listed(strangers)} — в {target.name} их нет."
        )
    if filled is not None:
        print(f"Ведомость {filled.lab} для Moodle «Загрузить ведомость оценок»: {filled.path}")
        print(f"Оценки выставлены: {len(filled.filled)}.")
        if filled.scaled:
            print(
                f"Максимальная оценка в Moodle — {export.number(filled.scaled)}, не как у "
                "лабораторной: баллы пересчитаны пропорционально."
            )
        if filled.pending:
            print(f"Ждут ручной проверки (оценка не выставлена): {_listed(filled.pending)}.")
        if filled.locked:
            print(f"Оценку нельзя изменить в Moodle (не тронуты): {_listed(filled.locked)}.")
        if filled.untouched:
            print(f"Строк без оценённой работы этой лабораторной (не тронуты): {filled.untouched}.")
    titles = {lab.id: lab.title for lab in settings.labs}
    _print_handback(handed, titles)
    return 0


def _listed(ids: list[str]) -> str:
    shown = ", ".join(ids[:10])
    return shown + (f" и ещё {len(ids) - 10}" if len(ids) > 10 else "")


def _print_handback(handed: list[handback.HandBack], titles: dict[str, str]) -> None:
    """Что сделано с архивами отзывов: куда загрузить, сколько отчётов, кого нет."""
    for done in handed:
        title = titles.get(done.lab, done.lab)
        if done.path is not None:
            reports = plural(len(done.folders), "отчёт", "отчёта", "отчётов")
            print(
                f"Отчёты «{title}» для Moodle «Загрузить несколько файлов с отзывами в ZIP»: "
                f"{done.path} ({reports})."
            )
        if done.no_participant:
            print(
                f"Нет номера участника Moodle в задании «{title}» (работа не из архива "
                f"«Скачать все ответы»), отчёт не в архиве: {_listed(done.no_participant)}."
            )
        if done.shared_number:
            print(
                f"Один номер участника Moodle у нескольких учащихся в задании «{title}» "
                f"(lms_ids.csv), их отчёты не в архиве: {_listed(done.shared_number)}."
            )


if __name__ == "__main__":
    sys.exit(main())

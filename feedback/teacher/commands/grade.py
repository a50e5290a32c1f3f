"""``make grade``: оценить все работы курса (:func:`feedback.teacher.grading.grade.grade`).

Первым делом процесса — запрет грамматик IRI (:mod:`feedback.teacher.unit.lean`), до импорта
nbformat. Код выхода 0 — оценивание завершено (даже если были проблемные работы), 1 — файлы
были, но ни один не оценён: все они строки problems.csv
(:class:`~feedback.teacher.grading.run.NothingGraded`), 2 — не так настроено само оценивание
или сбой файловой системы у преподавателя. Что говорится в консоли —
:mod:`feedback.teacher.grading.messages`.
"""

from feedback.teacher.unit import lean

lean.forbid_iri_grammars()

# isort: split

import argparse
import sys
from pathlib import Path

from feedback.settings import SettingError
from feedback.teacher.core.settings import Settings
from feedback.teacher.grading import grade as grading
from feedback.teacher.grading import messages
from feedback.teacher.grading.run import NothingGraded, SetupError
from feedback.teacher.unit import runner


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description="Оценить все работы курса 7.")
    parser.add_argument(
        "submissions",
        nargs="?",
        type=Path,
        help="папка с работами или архив .zip из LMS; по умолчанию — submitted/ в рабочей папке",
    )
    parser.add_argument("--jobs", type=int, default=None, help="сколько работ оценивать сразу")
    parser.add_argument(
        "--roster",
        type=Path,
        default=None,
        help="список учащихся students.csv (id,first_name,last_name,email); по умолчанию — "
        "students.csv в рабочей папке, если он есть",
    )
    parser.add_argument(
        "--scheduler",
        default=None,
        help="адрес планировщика Dask (tls://host:8786): работы выполняются на его рабочих; "
        "по умолчанию — переменная SCHEDULER",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    # Процесс-шаблон единиц заранее импортирует запуск оценивания и всё, что ему нужно.
    runner.preload(grading.__name__)
    try:
        settings = Settings.from_env()
        grading.grade(args.submissions, args.jobs, args.scheduler, args.roster, settings)
    except (SetupError, SettingError) as error:
        print(messages.not_started(error), file=sys.stderr)
        return 2
    except NothingGraded as error:
        print(messages.graded_nothing(error), file=sys.stderr)
        return 1
    except OSError as error:
        print(messages.interrupted(error), file=sys.stderr)
        return 2
    print("\n".join(messages.written(settings.workspace)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

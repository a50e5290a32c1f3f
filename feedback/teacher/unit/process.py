"""Вход процесса единицы: ``python -m feedback.teacher.unit.process задание.json результат.json``.

Первым делом — запрет грамматик IRI (:func:`feedback.teacher.unit.lean.forbid_iri_grammars`),
до импорта nbformat. Этот модуль — первый, что импортирует процесс-шаблон единиц
(:data:`feedback.teacher.unit.runner.PRELOAD`, у шаблона multiprocessing нет другого входа,
кроме импорта), и его же запускает рабочий Dask, где шаблона нет. Сама единица —
:func:`feedback.teacher.unit.pipeline.run_unit`.
"""

from feedback.teacher.unit import lean

lean.forbid_iri_grammars()

# isort: split

import json
import sys
from pathlib import Path

from feedback.teacher.core.results import Job
from feedback.teacher.unit.pipeline import run_unit


def main(argv: list[str] | None = None) -> int:
    """Задание из JSON-файла → единица → результат в JSON-файл; код выхода 0."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("использование: python -m feedback.teacher.unit.process задание.json результат.json")
        return 2
    job = Job.from_json(json.loads(Path(args[0]).read_text(encoding="utf-8")))
    result = run_unit(job)
    Path(args[1]).write_text(json.dumps(result.to_json(), ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

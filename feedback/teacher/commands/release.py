"""``make notebooks`` (``make release``) и ``make check-notebooks``: тетрадки из solutions/.

Без ``--check`` — ставит ячейки «badges» и «install» в исходниках и пишет notebooks/ заново
(:mod:`feedback.teacher.course.release`); с ``--check`` ничего не меняет и завершается с
кодом 1, если notebooks/ отстали от solutions/ (так проверяет CI).
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

from feedback.teacher.core.settings import Settings
from feedback.teacher.course import release


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Тетрадки учащихся из solutions/.")
    parser.add_argument("--check", action="store_true", help="только проверить, ничего не меняя")
    args = parser.parse_args(argv)
    settings = Settings()  # нужен только корень курса: окружение не читается
    if args.check:
        problems = release.stale_notebooks(settings.root)
        for problem in problems:
            print(problem)
        if problems:
            print("Выполните `make notebooks` и закоммитьте результат.")
        return 1 if problems else 0
    release.stamp_sources(settings.root)
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp) / "notebooks"
        release.generate(fresh, settings.root)
        shutil.rmtree(settings.notebooks, ignore_errors=True)
        shutil.copytree(fresh, settings.notebooks)
    print(f"Тетрадки учащихся обновлены: {settings.notebooks.relative_to(settings.root)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``make public DEST=папка``: публичная копия курса без solutions/ и тестов.

Что копируется — :func:`feedback.teacher.course.public.export`. Папка уже есть — код выхода 2:
копия не пишется поверх чужого.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from feedback.teacher.core.settings import Settings
from feedback.teacher.course import public


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Публичная копия курса 7 для учащихся.")
    parser.add_argument("destination", type=Path, help="новая папка для публичной копии")
    args = parser.parse_args(argv)
    settings = Settings()  # нужен только корень курса: окружение не читается
    try:
        public.export(args.destination, settings.root)
    except FileExistsError as error:
        print(error, file=sys.stderr)
        return 2
    print(f"Публичная копия курса: {args.destination} (без solutions/ и тестов)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Настройки кэша JAX строкой ``ИМЯ=значение …`` — для ``make test`` (``TEST_CACHES``).

Те же, что у ядер оценивания (:data:`feedback.teacher.unit.caches.JAX_COMPILATION_CACHE_ENV`):
тесты и оценивание делят один кэш компиляции.
"""

from __future__ import annotations

import sys

from feedback.teacher.unit.caches import JAX_COMPILATION_CACHE_ENV


def main(argv: list[str] | None = None) -> int:
    print(" ".join(f"{name}={value}" for name, value in JAX_COMPILATION_CACHE_ENV.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Хватает ли Node.js для ``make hub``: configurable-http-proxy ставится из npm и идёт на нём.

Нужная версия одна — ``engines.node`` в hub/package.json (её же требуют пакеты
hub/package-lock.json, это сверяет tests/teacher/hub/test_node_version.py). Старый Node npm
ставил молча
(``npm ci --loglevel=error`` прятал предупреждение), и прокси падал уже при запуске хаба;
теперь Makefile до npm вызывает этот модуль файлом — ``python3 feedback/teacher/hub/node_version.py
hub/package.json``: только стандартная библиотека, без окружения курса, — и он по-русски
говорит, какой Node нужен. Код выхода 0 — хватает, 1 — нет Node или он старше.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

#: Версия в выводе ``node --version``: «v20.20.2».
VERSION = re.compile(r"v?(\d+)(?:\.(\d+))?(?:\.(\d+))?")
#: Нижняя граница engines.node вида «>=20», «>= 20.6» (другие виды курс не пишет).
MINIMUM = re.compile(r"^\s*>=\s*(v?\d+(?:\.\d+){0,2})\s*$")


def parse(text: str) -> tuple[int, int, int] | None:
    """«v20.20.2» → (20, 20, 2); недостающие части — нули."""
    match = VERSION.search(text)
    if not match:
        return None
    return tuple(int(part or 0) for part in match.groups())  # type: ignore[return-value]


def required(package: Path) -> tuple[int, int, int]:
    """Нижняя граница ``engines.node`` из package.json (только вида «>=N[.N[.N]]»)."""
    spec = json.loads(package.read_text(encoding="utf-8"))["engines"]["node"]
    match = MINIMUM.match(spec)
    version = parse(match[1]) if match else None
    if version is None:
        raise ValueError(f"engines.node в {package} — «{spec}», а нужно «>=N»")
    return version


def installed(node: str = "node") -> tuple[int, int, int] | None:
    """Версия Node.js в PATH или ``None``, если его нет (или он не ответил)."""
    path = shutil.which(node)
    if path is None:
        return None
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return parse(done.stdout) if done.returncode == 0 else None


def shown(version: tuple[int, int, int]) -> str:
    return ".".join(str(part) for part in version)


def problem(package: Path, node: str = "node") -> str | None:
    """Что не так с Node.js для хаба (по-русски) или ``None``, если всё в порядке."""
    need = required(package)
    have = installed(node)
    how = (
        f"поставьте Node.js {shown(need)} или новее (https://nodejs.org/, пакет nodejs вашего "
        "дистрибутива или nvm) и запустите make hub снова"
    )
    if have is None:
        return f"make hub: не найден Node.js (команда node) — {how}."
    if have < need:
        return f"make hub: Node.js {shown(have)} старше нужного (configurable-http-proxy) — {how}."
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    package = Path(args[0]) if args else Path(__file__).resolve().parents[3] / "hub/package.json"
    found = problem(package)
    if found:
        print(found, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

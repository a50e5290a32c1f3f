"""``make formgrader``: JupyterLab с formgrader nbgrader для ручной проверки.

Как запустить — :mod:`feedback.teacher.hub.formgrader` (команда, окружение, адрес); здесь —
разбор аргументов, адрес с токеном в консоль и замена процесса на JupyterLab.
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys

from feedback.teacher.commands import settings_from_env
from feedback.teacher.hub import formgrader


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="formgrader курса 7 для ручной проверки.")
    parser.add_argument("--port", type=int, default=None, help="порт (по умолчанию свободный)")
    parser.add_argument("--no-browser", action="store_true", help="не открывать браузер")
    args = parser.parse_args(argv)
    settings = settings_from_env()
    if settings is None:
        return 2
    root = settings.root
    port = args.port or formgrader.free_port()
    token = secrets.token_hex(24)
    print(f"formgrader: {formgrader.url(port, token)}", flush=True)
    print(
        "Браузер откроется сам; JupyterLab — тот же адрес с /lab вместо /formgrader (меню "
        "Nbgrader → Formgrader). Остановить — Ctrl+C.",
        flush=True,
    )
    parts = formgrader.command(root, port, open_browser=not args.no_browser)
    os.chdir(root)
    os.execve(parts[0], parts, formgrader.environment(token))
    return 0  # сюда execve не возвращается


if __name__ == "__main__":
    sys.exit(main())

"""``make dask-certs``: сертификаты Dask курса (:func:`feedback.teacher.unit.dask_tls.issue`).

Папка — ``settings.workspace.dask_certs`` (``COURSE7_DASK_CERTS`` или dask-certs/ рабочей
папки); ``--replace`` (``make dask-certs REPLACE=1``) выпускает заново. Печатает команды
``dask scheduler`` и ``dask worker``.
"""

from __future__ import annotations

import argparse
import sys

from feedback.settings import SettingError
from feedback.teacher.core.settings import Settings
from feedback.teacher.unit import dask_tls
from feedback.teacher.unit.dask_tls import DaskRefused


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Сертификаты Dask курса 7 (TLS).")
    sub = parser.add_subparsers(dest="command", required=True)
    certs = sub.add_parser(
        "certs", help="выпустить центр курса и сертификаты планировщика, рабочих и оценивания"
    )
    certs.add_argument(
        "--replace",
        action="store_true",
        help="заменить уже выпущенные (прежние на планировщике и рабочих перестанут подходить)",
    )
    args = parser.parse_args(argv)
    try:
        folder = Settings.from_env().workspace.dask_certs
        issued = dask_tls.issue(folder, replace=args.replace)
    except (DaskRefused, SettingError) as error:
        print(f"Сертификаты не выпущены: {error}", file=sys.stderr)
        return 2
    except OSError as error:
        print(f"Сертификаты не выпущены: {error.strerror} ({error.filename})", file=sys.stderr)
        return 2
    print(f"Сертификаты курса: {issued.folder} (действуют до {issued.expires:%d.%m.%Y}).")
    print(dask_tls.commands(issued.folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())

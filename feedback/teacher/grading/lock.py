"""Замок рабочей папки: в одной папке одновременно идёт один ``make grade``.

Два запуска в одной папке переписывали бы таблицы друг друга. Замок — ``flock`` на файле
:attr:`Workspace.lock <feedback.teacher.core.workspace.Workspace.lock>`: его снимает ядро,
как бы ни кончился процесс, поэтому ``kill -9`` не оставляет папку запертой.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
from collections.abc import Iterator

from feedback.teacher.core import files
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.grading import messages
from feedback.teacher.grading.run import SetupError


@contextlib.contextmanager
def grading_lock(workspace: Workspace) -> Iterator[None]:
    """Рабочая папка — только для этого запуска; остатки оборванного запуска убираются.

    Второй запуск в той же папке не начинается (:class:`SetupError`), а не портит таблицы
    первого. Оборванный запуск (``kill -9``) оставляет временные файлы записей и папки единиц
    с работами учащихся: их убирает следующий.
    """
    workspace.folder.mkdir(parents=True, exist_ok=True)
    with open(workspace.lock, "a") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SetupError(messages.busy(workspace.folder)) from None
        files.remove_leftovers(workspace.folder)
        shutil.rmtree(workspace.units, ignore_errors=True)
        yield

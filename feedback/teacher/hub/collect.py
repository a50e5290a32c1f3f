"""Сбор сданного через exchange (``make collect``): последняя сдача каждого учащегося каждой
лабораторной — в ``submitted/`` для ``make grade``.

Exchange — общая папка, в которую пишут учащиеся, поэтому собирает работы не ``nbgrader
collect``, а :mod:`feedback.teacher.intake.exchange`: чужие папки сдач, ссылки и время сдачи,
которое написал сам учащийся, там не принимаются, а права exchange проверяются, а не ставятся.
Что не собрано и почему — строки problems.csv. Кто сдал после срока — решает
:mod:`feedback.teacher.hub.lateness`.
"""

from __future__ import annotations

import re

from feedback.teacher.core.console import safe_console
from feedback.teacher.core.settings import COURSE_ID, Settings
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.hub import accounts as hub_users
from feedback.teacher.hub.state import HubError
from feedback.teacher.intake import exchange, uploads

#: Папка сдачи в inbound: ``<учащийся>+<лабораторная>+<время>+<случайное>`` (nbgrader submit).
_INBOUND = re.compile(r"^(?P<student>.+?)\+(?P<lab>[^+]+)\+(?P<timestamp>[^+]+)(?:\+[^+]*)?$")


def inbound(settings: Settings) -> list[dict[str, str]]:
    """Сданные работы в exchange: учащийся, лабораторная, время сдачи (все попытки)."""
    folder = settings.workspace.exchange / COURSE_ID / "inbound"
    if not folder.is_dir():
        return []
    found = []
    for path in sorted(folder.iterdir()):
        match = _INBOUND.match(path.name)
        if match and path.is_dir():
            found.append({**match.groupdict(), "path": str(path)})
    return found


def collect(settings: Settings) -> exchange.Collection:
    """Сбор exchange: последняя сдача каждого учащегося каждой лабораторной → ``submitted/``.

    Из нескольких сдач берётся последняя по времени, которое записало ядро, и сданная после
    срока тоже (так приходит последняя сдача и в архиве Moodle): опоздавших называет
    :func:`feedback.teacher.hub.lateness.late`. ``make grade`` оценивает ``submitted/`` как
    папку ``<учащийся>/<лабораторная>/``. Чужие папки сдач, ссылки и всё, что не собрано, —
    строки problems.csv (:func:`record_problems`); exchange, который могли подменить, —
    :class:`HubError`.
    """
    workspace = settings.workspace
    try:
        found = exchange.collect(
            workspace.exchange,
            COURSE_ID,
            workspace.submitted,
            [lab.id for lab in settings.labs],
            accounts=hub_users.recorded(workspace.hub),
        )
    except exchange.UnsafeExchange as error:
        raise HubError(str(error)) from None
    except PermissionError as error:  # класс make hub: папки курса в exchange — root
        raise HubError(
            f"нет доступа к {error.filename}: в классе (sudo make hub) папки курса в exchange "
            "принадлежат root — соберите сдачи так же: sudo make collect"
        ) from None
    record_problems(workspace, found.problems)
    return found


def record_problems(workspace: Workspace, problems: list[uploads.Problem]) -> None:
    """Строки сбора exchange в problems.csv: прежние строки сбора заменяются, остальные — нет."""
    from feedback.teacher.core.tables import read_rows, write_rows
    from feedback.teacher.records.class_tables import natural

    path = workspace.table(uploads.Problem)
    earlier = read_rows(path, uploads.Problem, exact=True)
    kept = [row for row in earlier if not row.file.startswith(exchange.FILE_PREFIX)]
    if not problems and len(kept) == len(earlier):
        return
    workspace.folder.mkdir(parents=True, exist_ok=True)
    write_rows(path, uploads.Problem, sorted(kept + problems, key=natural))


def collect_lines(found: exchange.Collection) -> list[str]:
    """Строки ``make collect``: что собрано, что нет и почему (имена — без управляющих знаков)."""
    lines = [
        f"  {item.student} · {item.lab}: сдача {item.time:%Y-%m-%d %H:%M:%S} UTC"
        for item in found.collected
    ]
    for problem in found.problems:
        lines.append(f"  не собрано: {problem.file} — {problem.problem}")
    return [safe_console(line) for line in lines]

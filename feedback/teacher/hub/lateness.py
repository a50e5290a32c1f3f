"""Правило сдачи после срока для курса на JupyterHub: кого ``make collect`` называет опоздавшим.

Всё правило — здесь, и только здесь: откуда срок (:func:`duedates`), когда сдача опоздала
(:func:`is_late`) и как об этом сказать преподавателю (:func:`late_lines`). Сменить правило
(например, дать час форы) — правка этого модуля; ``make collect`` берёт вердикт у :func:`late`.

Срок — ``duedate`` лабораторной в базе nbgrader: его ставит преподаватель в formgrader
(Manage Assignments → карандаш у лабораторной → Due date) или ``nbgrader db assignment add
--duedate``; без срока опоздавших нет. Время сдачи — ``timestamp.txt``, который пишет
``make collect`` по времени ядра (:mod:`feedback.teacher.intake.exchange`), а не учащийся;
сравнивает их так же сам nbgrader (``SubmittedAssignment.total_seconds_late``). Опоздавшие
работы оцениваются как все, без штрафа, как и с Moodle: nbgrader по умолчанию опоздание не
штрафует (``LateSubmissionPlugin.penalty_method = "none"``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from feedback.formatting import plural
from feedback.teacher.core.console import safe_console
from feedback.teacher.core.settings import COURSE_ID, Settings
from feedback.teacher.intake import exchange


@dataclass(frozen=True)
class Late:
    """Собранная сдача, сданная после срока лабораторной (время — UTC, как у nbgrader)."""

    student: str
    lab: str
    timestamp: datetime
    duedate: datetime

    @property
    def seconds(self) -> float:
        return (self.timestamp - self.duedate).total_seconds()


def is_late(submitted: datetime, due: datetime) -> bool:
    """Правило: сдача опоздала, если она позже срока хоть на миг (как в nbgrader)."""
    return submitted > due


def duedates(settings: Settings) -> dict[str, datetime]:
    """Сроки лабораторных из базы оценок nbgrader (ставит преподаватель в formgrader)."""
    if not settings.workspace.has_gradebook:
        return {}
    from nbgrader.api import Gradebook

    with Gradebook(settings.workspace.gradebook_url, COURSE_ID) as gb:
        return {item.name: item.duedate for item in gb.assignments if item.duedate is not None}


def late(settings: Settings) -> list[Late]:
    """Собранные сдачи (``submitted/``), которые по :func:`is_late` опоздали к сроку."""
    due = duedates(settings)
    if not due:
        return []
    from nbgrader.utils import parse_utc

    found = []
    for stamp in sorted(settings.workspace.submitted.glob(f"*/*/{exchange.TIMESTAMP}")):
        folder = stamp.parent
        student, lab = folder.parent.name, folder.name
        if lab not in due:
            continue
        try:
            submitted = parse_utc(stamp.read_text(encoding="utf-8").strip() or None)
        except (OSError, ValueError, OverflowError):
            continue
        if submitted is not None and is_late(submitted, due[lab]):
            found.append(Late(student, lab, submitted, due[lab]))
    return found


def how_late(seconds: float) -> str:
    """«на 2 дня 3 часа», «на 1 час 5 минут», «на 1 минуту»: с точностью до минуты, вверх."""
    minutes = max(1, int(-(-seconds // 60)))
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [
        plural(value, *words)
        for value, words in (
            (days, ("день", "дня", "дней")),
            (hours, ("час", "часа", "часов")),
            (minutes, ("минуту", "минуты", "минут")),
        )
        if value
    ]
    return "на " + " ".join(parts)


def late_lines(found: list[Late]) -> list[str]:
    """Строки ``make collect`` об опоздавших: кто, какая лабораторная, когда и насколько."""
    if not found:
        return []
    lines = [
        "Сданы после срока (оцениваются как все, без штрафа; срок — в formgrader, Manage "
        "Assignments):"
    ]
    for item in found:
        lines.append(
            f"  {safe_console(item.student)} · {item.lab}: сдана {item.timestamp:%Y-%m-%d %H:%M} "
            f"UTC, срок {item.duedate:%Y-%m-%d %H:%M} UTC — {how_late(item.seconds)}"
        )
    return lines

"""Учётные записи пробы make hub: имена входа из списка учащихся и пароли входа.

В пробе все серверы — один пользователь Unix, а входят учащиеся по id из списка и общему
паролю, преподаватель — по своему (``SharedPasswordAuthenticator`` JupyterHub). Учётные
записи класса (свой пользователь Unix у каждого) — :mod:`feedback.teacher.hub.accounts`.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterable

from feedback.teacher.core import files
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.hub.state import TEACHER, HubError


def hub_name(student_id: str) -> str:
    """Имя входа в JupyterHub: JupyterHub приводит имена к нижнему регистру."""
    return student_id.lower()


def learners(people: Iterable[str], teacher: str = TEACHER) -> dict[str, str]:
    """Имя входа → id учащегося из списка; два id с одним именем входа — :class:`HubError`."""
    found: dict[str, str] = {}
    for person in people:
        name = hub_name(person)
        if name == hub_name(teacher):
            raise HubError(
                f"id «{person}» из списка учащихся совпадает с именем преподавателя «{teacher}»: "
                "назовите преподавателя иначе (make hub TEACHER=имя)"
            )
        if name in found:
            raise HubError(
                f"id «{found[name]}» и «{person}» из списка учащихся JupyterHub не различает "
                "(имена входа — без учёта регистра): сделайте их разными"
            )
        found[name] = person
    return found


def passwords(workspace: Workspace) -> dict[str, str]:
    """Пароли входа: один раз придумываются и дальше берутся из ``passwords.json``.

    ``learners`` — общий пароль учащихся (его раздаёт преподаватель), ``teacher`` — пароль
    преподавателя; JupyterHub требует для администратора не меньше 32 символов.
    """
    path = workspace.hub_passwords
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8"))
    chosen = {"learners": secrets.token_urlsafe(9), "teacher": secrets.token_urlsafe(24)}
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_text(path, json.dumps(chosen, indent=1), permissions=0o600)
    return chosen

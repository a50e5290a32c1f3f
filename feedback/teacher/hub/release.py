"""Выпуск лабораторной в exchange (``make hub-release``) и nbgrader с настройками курса.

Выпускает сам nbgrader (``nbgrader release_assignment``) из notebooks/; здесь — корень
exchange (:func:`prepare_exchange`: новый — с правами для класса, прежний — проверяется, а не
исправляется) и nbgrader с рабочей папкой и exchange из настроек (:func:`nbgrader_api`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from feedback.teacher.core.settings import COURSE_ID, Settings
from feedback.teacher.hub.state import HubError
from feedback.teacher.intake import exchange

#: Корень exchange, если его создаёт сам make hub: писать могут все, но переименовать или
#: удалить папку — только её владелец (бит sticky, как у /tmp). Существующий корень не
#: трогается: его права ставит администратор, а :func:`exchange.check_exchange` их проверяет.
EXCHANGE_MODE = 0o1777


def prepare_exchange(settings: Settings) -> Path:
    """Корень exchange nbgrader: новый — с правами :data:`EXCHANGE_MODE`, прежний — как есть.

    Exchange, который учащийся мог подменить (:func:`exchange.check_exchange`), —
    :class:`HubError` с тем, что исправить.
    """
    root = settings.workspace.exchange
    if not root.exists():
        root.mkdir(parents=True)
        os.chmod(root, EXCHANGE_MODE)  # mkdir не ставит sticky и урезает права по umask
    exchange.protect_inbound(root, COURSE_ID)  # inbound прежнего выпуска (nbgrader: 2733)
    try:
        exchange.check_exchange(root, COURSE_ID)
    except exchange.UnsafeExchange as error:
        raise HubError(str(error)) from None
    return root


def nbgrader_api(settings: Settings, **extra: Any) -> Any:
    """nbgrader с настройками курса, рабочей папкой и exchange из ``settings``."""
    from nbgrader.apps import NbGraderAPI
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(settings.root)).load_config()
    for name, value in settings.course_directory().items():
        setattr(config.CourseDirectory, name, value)
    config.Exchange.root = str(settings.workspace.exchange)
    for dotted, value in extra.items():
        section, name = dotted.split("__")
        setattr(getattr(config, section), name, value)
    return NbGraderAPI(config=config)


def checked(result: Mapping[str, Any], what: str) -> str:
    """Журнал удавшегося шага nbgrader; не удался — :class:`HubError` с его журналом."""
    if not result.get("success"):
        raise HubError(f"{what} не удалось:\n{result.get('log', '')}{result.get('error', '')}")
    return result.get("log", "")


def release(settings: Settings, lab: str) -> Path:
    """``nbgrader release_assignment``: лабораторная ``lab`` (id) из notebooks/ — в exchange."""
    prepare_exchange(settings)
    api = nbgrader_api(settings, ExchangeReleaseAssignment__force=True)
    checked(api.release_assignment(lab), f"выпуск {lab} в exchange")
    prepare_exchange(settings)  # и sticky на inbound, который выпуск мог только что создать
    return settings.workspace.exchange / COURSE_ID / "outbound" / lab

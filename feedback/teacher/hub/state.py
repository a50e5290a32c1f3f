"""Сервер курса (make hub): его раскладка (:class:`Hub`), режимы и сведения о запуске
(:class:`HubState`, ``hub.json``).

Здесь то, что знают все модули комнаты: куда JupyterHub курса пишет своё, как называются
режимы и группы, что ``make hub`` передаёт настройкам JupyterHub (hub/jupyterhub_config.py)
и какой ошибкой сообщает преподавателю, что не так (:class:`HubError`).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from feedback.teacher.core import files
from feedback.teacher.core.settings import COURSE_ID, Settings
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.hub import accounts as hub_users

#: Группы JupyterHub, как в руководстве nbgrader «Using nbgrader with JupyterHub».
FORMGRADERS = f"formgrade-{COURSE_ID}"
LEARNERS = f"nbgrader-{COURSE_ID}"
TEACHER = "teacher"
#: Режимы make hub (HUB_MODE): проба на своей машине и класс на одном сервере.
TRIAL = "trial"
CLASS = "class"
MODES = (TRIAL, CLASS)


class HubError(RuntimeError):
    """JupyterHub не может начаться: что-то не так у преподавателя (код выхода 2)."""


def choose_mode(asked: str | None, euid: int | None = None) -> str:
    """Режим ``make hub``: названный (``HUB_MODE``) или сам — класс, если запущен от root.

    root может завести каждому учащемуся своего пользователя Unix, и тогда проба без изоляции
    не нужна; не root — только проба.
    """
    if asked:
        if asked not in MODES:
            raise HubError(f"HUB_MODE={asked}: выберите {' или '.join(MODES)}")
        return asked
    euid = os.geteuid() if euid is None else euid
    return CLASS if euid == 0 else TRIAL


@dataclass(frozen=True)
class Hub:
    """Где JupyterHub курса держит своё и на каких адресах слушает."""

    settings: Settings = field(default_factory=Settings.from_env)
    ip: str = "127.0.0.1"
    port: int = 8000
    teacher: str = TEACHER
    #: ``trial`` — проба (один пользователь Unix, общий пароль), ``class`` — класс на сервере
    #: (:mod:`feedback.teacher.hub.accounts`). ``make hub`` выбирает сам (:func:`choose_mode`).
    mode: str = TRIAL
    prefix: str = hub_users.PREFIX
    shared: Path = hub_users.SHARED
    homes: Path = hub_users.HOMES
    #: Python окружения курса: из него запускаются JupyterHub, серверы и ядра.
    python: Path = field(default_factory=lambda: Path(sys.executable))

    @property
    def workspace(self) -> Workspace:
        return self.settings.workspace

    @property
    def folder(self) -> Path:
        return self.workspace.hub

    @property
    def users(self) -> Path:
        return self.workspace.hub_users

    @property
    def config(self) -> Path:
        """Настройки серверов: в пробе — в рабочей папке, в классе — в общей папке класса
        (рабочая папка закрыта для учащихся)."""
        return self.shared / "config" if self.mode == CLASS else self.workspace.hub_config

    @property
    def url(self) -> str:
        host = "localhost" if self.ip in ("127.0.0.1", "0.0.0.0", "") else self.ip
        return f"http://{host}:{self.port}/"


def _paths(values: Any) -> list[Path]:
    return [Path(value) for value in values or ()]


@dataclass(frozen=True)
class HubState:
    """Сведения о запуске (``hub.json``) для hub/jupyterhub_config.py: адреса, порты, прокси,
    кто преподаватель и учащиеся; в классе — ещё от кого работает сервер преподавателя,
    листы паролей и закрытые учащимся папки. Паролей здесь нет: они — в passwords.json."""

    mode: str
    root: Path
    work: Path
    exchange: Path
    config: Path
    ip: str
    port: int
    hub_port: int
    proxy_api_port: int
    proxy: Path
    teacher: str
    #: Имя входа → id учащегося из списка.
    learners: dict[str, str]
    python: Path
    # Только в классе.
    run_as: dict[str, str] = field(default_factory=dict)
    prefix: str | None = None
    password_list: Path | None = None
    password_page: Path | None = None
    created: list[str] = field(default_factory=list)
    closed: list[Path] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "mode": self.mode,
            "root": str(self.root),
            "work": str(self.work),
            "exchange": str(self.exchange),
            "config": str(self.config),
            "ip": self.ip,
            "port": self.port,
            "hub_port": self.hub_port,
            "proxy_api_port": self.proxy_api_port,
            "proxy": str(self.proxy),
            "teacher": self.teacher,
            "learners": dict(self.learners),
            "python": str(self.python),
        }
        if self.mode == CLASS:
            data |= {
                "run_as": dict(self.run_as),
                "prefix": self.prefix,
                "password_list": str(self.password_list),
                "password_page": str(self.password_page),
                "created": list(self.created),
                "closed": [str(path) for path in self.closed],
            }
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> HubState:
        """Из ``hub.json``; в записанном прежними версиями нет режима (проба) и папки настроек."""
        work = Path(data["work"])
        optional = {
            name: Path(data[name]) if data.get(name) else None
            for name in ("password_list", "password_page")
        }
        return cls(
            mode=data.get("mode", TRIAL),
            root=Path(data["root"]),
            work=work,
            exchange=Path(data["exchange"]),
            config=Path(data.get("config") or Workspace(work).hub_config),
            ip=data["ip"],
            port=int(data["port"]),
            hub_port=int(data["hub_port"]),
            proxy_api_port=int(data["proxy_api_port"]),
            proxy=Path(data["proxy"]),
            teacher=data["teacher"],
            learners=dict(data["learners"]),
            python=Path(data["python"]),
            run_as=dict(data.get("run_as") or {}),
            prefix=data.get("prefix"),
            created=list(data.get("created") or []),
            closed=_paths(data.get("closed")),
            **optional,
        )

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        files.write_text(path, json.dumps(self.to_json(), ensure_ascii=False, indent=1))

    @classmethod
    def load(cls, path: Path) -> HubState:
        """Сведения о запуске из ``path``; их нет — :class:`HubError`: сначала make hub."""
        if not path.is_file():
            raise HubError(f"нет {path}: JupyterHub курса запускают командой make hub")
        return cls.from_json(json.loads(path.read_text(encoding="utf-8")))

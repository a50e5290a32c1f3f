"""Сервер пользователя JupyterHub класса — процесс его пользователя Unix (``LocalProcessSpawner``).

Отличие одно: сервер преподавателя (``run_as``) работает от владельца курса — того, кто
запустил ``make hub``, — чтобы formgrader писал ту же базу оценок, что и ``make grade``, а
учётная запись Unix преподавателя нужна только для входа (PAM). Модуль импортирует только
JupyterHub (hub/jupyterhub_config.py называет класс строкой).
"""

from __future__ import annotations

import pwd

from jupyterhub.spawner import LocalProcessSpawner, set_user_setuid
from traitlets import Dict


class CourseSpawner(LocalProcessSpawner):
    """``LocalProcessSpawner``, где сервер имени JupyterHub может быть чужого пользователя Unix."""

    run_as = Dict(
        help="Имя в JupyterHub → пользователь Unix, от которого работает его сервер."
    ).tag(config=True)

    def system_user(self) -> str:
        return self.run_as.get(self.user.name, self.user.name)

    def make_preexec_fn(self, name):
        return set_user_setuid(self.system_user())

    def user_env(self, env):
        entry = pwd.getpwnam(self.system_user())
        env["USER"] = entry.pw_name
        if entry.pw_dir:
            env["HOME"] = entry.pw_dir
        if entry.pw_shell:
            env["SHELL"] = entry.pw_shell
        return env

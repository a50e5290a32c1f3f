"""Команды преподавателя: по модулю на цель make (как приложения nbgrader).

Команда только разбирает аргументы, собирает настройки (:class:`~feedback.teacher.core.settings.
Settings`), зовёт стадию из своей комнаты и печатает итог; строки ``make grade`` — в
:mod:`feedback.teacher.grading.messages`, строка из работы учащегося — через
:func:`feedback.teacher.core.console.safe_console`. Модули комнат командами не бывают: у них нет
``main()`` и ``if __name__ == "__main__"``. Запускаются так: ``python -m
feedback.teacher.commands.<цель>`` (рецепты Makefile). Команды сервера курса — свой модуль.

Два входа вне этой комнаты, и это не случайность: процесс единицы оценивания
(:mod:`feedback.teacher.unit.process` — его запускают пул процессов и рабочие Dask, а комнате
``unit`` нельзя импортировать команды) и проверка Node.js (:mod:`feedback.teacher.hub.
node_version` — Makefile запускает её системным Python ещё до того, как есть окружение).
"""

from __future__ import annotations

import sys

from feedback.settings import SettingError
from feedback.teacher.core.settings import Settings


def settings_from_env() -> Settings | None:
    """Настройки из переменных окружения; неразборчивое значение — строка по-русски и ``None``
    (команда выходит с кодом 2), а не трассировка."""
    try:
        return Settings.from_env()
    except SettingError as error:
        print(f"Команда не запущена: {error}", file=sys.stderr)
        return None

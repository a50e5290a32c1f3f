"""Команды преподавателя: по модулю на цель make (как приложения nbgrader).

Команда только разбирает аргументы, собирает настройки (:class:`~feedback.teacher.core.settings.
Settings`), зовёт стадию из своей комнаты и печатает итог; строки ``make grade`` — в
:mod:`feedback.teacher.grading.messages`, строка из работы учащегося — через
:func:`feedback.teacher.core.console.safe_console`. Модули комнат командами не бывают: у них нет
``main()`` и ``if __name__ == "__main__"``. Запускаются так: ``python -m
feedback.teacher.commands.<цель>`` (рецепты Makefile). Команды сервера курса — свой модуль.
"""

"""Команды преподавателя: по модулю на цель make (как приложения nbgrader).

Команда только разбирает аргументы, собирает настройки (:class:`~feedback.teacher.core.settings.
Settings`) и зовёт стадию из своей комнаты; что печатать — :mod:`feedback.teacher.core.console`.
"""

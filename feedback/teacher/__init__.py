"""Инструменты преподавателя и сопровождающего: выпуск тетрадок и оценивание.

Нужны только с дополнением ``grading`` (nbgrader); тетрадки учащихся их не импортируют.
Комнаты по стадиям, снизу вверх (комната импортирует только комнаты ниже себя, это
проверяет tests/project/test_import_graph.py):

- :mod:`~feedback.teacher.core` — настройки, рабочая папка, таблицы, атомарная запись;
- :mod:`~feedback.teacher.notebook` — тетрадки nbgrader вообще: сборка, безопасный HTML;
- :mod:`~feedback.teacher.review` — что в коде учащегося посмотреть глазами;
- :mod:`~feedback.teacher.course` — выпуск тетрадок, публичная копия, замер стоимости;
- :mod:`~feedback.teacher.intake` — что сдано и кем: архивы LMS, exchange, список учащихся;
- :mod:`~feedback.teacher.unit` — одна работа в песочнице и где выполняются единицы;
- :mod:`~feedback.teacher.records` — база оценок, снимок баллов, таблицы класса;
- :mod:`~feedback.teacher.pages` — отчёты учащимся, сводка и ошибки класса;
- :mod:`~feedback.teacher.lms` — оценки и отчёты обратно в LMS;
- :mod:`~feedback.teacher.hub` — курс на JupyterHub и formgrader;
- :mod:`~feedback.teacher.grading` — ``make grade``: стадии по порядку;
- :mod:`~feedback.teacher.commands` — команды: по модулю на цель make.

Процессы оценивания запускаются без ``rfc3987_syntax``: их входы (команда ``make grade``,
процесс единицы) явно зовут :func:`feedback.teacher.unit.lean.forbid_iri_grammars`; остальные
(formgrader) — как обычно.
"""

"""Эталоны курса: всё, по чему вердикт узнаёт верный ответ, и ничего больше.

По модулю на модуль лабораторной: :mod:`~feedback.answers.flops` (7.2) и
:mod:`~feedback.answers.memory` (7.4) — верные формулы и типичные ошибки с подсказками
(:class:`feedback.engine.comparing.Answer`); :mod:`~feedback.answers.generation` (7.1),
:mod:`~feedback.answers.wall` (7.3), :mod:`~feedback.answers.precision` (7.5) и
:mod:`~feedback.answers.accumulation` (7.5, 7.6) — сами функции вердикта с ожидаемыми
значениями, допусками и подсказками. Модули лабораторных снимают наблюдение и называют
свой эталон по имени (:func:`feedback.engine.comparing.answer`,
:func:`feedback.engine.graded.verdict`); импортируют его только при вынесении вердикта, а
эталоны импортируют модули лабораторных, но не наоборот.

В тетрадке учащегося вердикт выносится тут же, а при оценивании — вне песочницы, и в
песочнице этой папки нет (:func:`feedback.teacher.unit.bwrap.hidden_paths`). Поэтому код
учащегося при оценивании не может ни вызвать эталон вместо своей функции, ни подобрать
ответ, спрашивая вердикт.
"""

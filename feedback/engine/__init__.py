"""Движок проверок: общая часть всех проверок курса, без знаний о конкретной лабораторной.

- :mod:`~feedback.engine.result` — итог проверки (:class:`~feedback.engine.result.CheckResult`),
  плашка в тетрадке, строгий режим оценивания (``FEEDBACK_STRICT=1`` → ``CheckFailed``);
- :mod:`~feedback.engine.graded` — проверка как пара «наблюдение → вердикт», вердикт по имени
  эталона из :mod:`feedback.answers`;
- :mod:`~feedback.engine.comparing` — проверки «функция → число»: случаи, соседние случаи,
  типичные ошибки;
- :mod:`~feedback.engine.calling` — вызов функции учащегося: не реализована, упала, зависла;
- :mod:`~feedback.engine.values` — ответ учащегося как данные JSON;
- :mod:`~feedback.engine.probe` — наблюдение при оценивании (сторона песочницы);
- :mod:`~feedback.engine.waiting` — ячейка курса ждёт невыполненного задания: одна русская
  строка вместо трассировки.

Кто пользуется: модули лабораторных (:mod:`feedback.flops`, :mod:`feedback.memory`,
:mod:`feedback.wall`, :mod:`feedback.precision`, :mod:`feedback.accumulation`,
:mod:`feedback.generation.check`) строят на нём свои проверки, :mod:`feedback.answers`
выносит вердикты, а :mod:`feedback.teacher` снимает наблюдения в песочнице (ячейка-зонд
импортирует :mod:`feedback.engine.probe`) и оценивает их вне её. Тетрадки учащихся сами
движок не импортируют: ``CheckFailed``, ``CheckResult`` и ``strict_mode`` доступны прямо из
:mod:`feedback`.

Движок лёгкий (только стандартная библиотека и :mod:`feedback.formatting`,
:mod:`feedback.settings`) и не импортирует ни модули лабораторных, ни GPU-среду.
"""

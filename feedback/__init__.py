"""Проверки и помощники курса 7 «Ускорьте свою модель».

Лёгкий пакет: ``from feedback import flops, memory, formatting`` не тянет ни jax,
ни keras, ни tensorflow, ни torch — только то, что уже есть в Colab. Модули для
GPU-лабораторных импортируют тяжёлые библиотеки сами и только когда нужны.

Что импортирует тетрадка каждой лабораторной (``from feedback import …``; эти модули лежат
прямо в пакете, и их пути не меняются):

===  ==============================  ======================================================
Лаб  Тетрадка                        Модули
===  ==============================  ======================================================
7.1  lab_7_1_compare_models          generation, runtime, quiet
7.2  lab_7_2_training_flops          explore, flops, formatting, plots
7.3  lab_7_3_memory_wall             wall, qa_data, runtime, plots, quiet
7.4  lab_7_4_gpu_memory              memory, formatting (bytes_to_gb, display_memory), plots
7.5  lab_7_5_bfloat16_lora           precision, accumulation, monitor, qa_data, runtime,
                                     formatting, quiet
7.6  lab_7_6_gradient_accumulation   accumulation, precision, monitor, qa_data, runtime,
                                     formatting (bytes_to_gb), plots, quiet
===  ==============================  ======================================================

Слои под ними (тетрадки их напрямую не импортируют):

- :mod:`feedback.engine` — движок проверок: итог и строгий режим (``result``), пара
  «наблюдение → вердикт» (``graded``), проверки «функция → число» (``comparing``), вызов
  функции учащегося (``calling``), ответ как JSON (``values``), наблюдение при оценивании
  (``probe``), ячейка, которая ждёт задания (``waiting``). ``CheckFailed``, ``CheckResult``
  и ``strict_mode`` — прямо из ``feedback``;
- :mod:`feedback.gpu` — GPU-среда лабораторных 7.1, 7.3, 7.5 и 7.6: где выполняется тетрадка
  (``host``), учебный режим и крошечная Gemma (``tiny_mode``, ``tiny_gemma``), доступ к
  Kaggle (``kaggle_access``), память для JAX (``xla_memory``), предупреждения (``notice``),
  ``make gpu-check`` (``check``); тетрадкам её отдаёт :mod:`feedback.runtime`;
- :mod:`feedback.answers` — эталоны ответов и подсказки к типичным ошибкам; нужны только
  вердикту, и в песочнице оценивания этой папки нет (код учащегося её не видит);
- :mod:`feedback.teacher` — выпуск тетрадок и оценивание (``make release``, ``make grade``).

Рядом: :mod:`feedback.checks` (проверка по имени из ячейки-теста и таблица модулей с
проверками), :mod:`feedback.settings` (все переменные окружения курса), :mod:`feedback.qa_local`
(наш набор вопросов-ответов в пакете), :mod:`feedback.workspace` (рабочая копия ``my-labs/``),
:mod:`feedback.kernel_guard` (присмотр за ядром оценивания). Кто кого может импортировать —
``tests/project/test_import_graph.py``.
"""

from feedback.engine.result import CheckFailed, CheckResult, strict_mode

__all__ = ["CheckFailed", "CheckResult", "strict_mode"]
__version__ = "0.1.0"

"""Процесс оценивания без ``rfc3987_syntax``: импорт этого модуля ставит запрет.

jsonschema (его импортирует nbformat) подхватывает ``rfc3987_syntax``, если он установлен
(его ставит ``jsonschema[format-nongpl]`` для jupyter-events), ради проверки формата «iri»,
которого нет ни в одной схеме nbformat и nbgrader; а он при импорте строит три десятка
грамматик Lark — 1,5 с на каждый процесс оценивания: на ``make grade``, на шаблон единиц,
на ``make bench`` по процессу на замер (python-jsonschema/jsonschema#1428, rfc3987-syntax
1.1.0 — последняя версия).

Запрет нужен только процессам оценивания, и ставят его только они: этот модуль первым
импортируют :mod:`feedback.teacher.grading.grade` (``make grade``, ``make bench`` — по процессу на
замер) и :mod:`feedback.teacher.unit.pipeline` (шаблон единиц и единица на рабочем Dask).
formgrader,
``make feedback`` и остальные процессы, которые импортируют пакет, его не получают: там
jupyter-events проверяет свои схемы как обычно. Ставить запрет надо до импорта nbformat:
jsonschema ищет пакет один раз, при своём импорте (поэтому в тестах, где nbformat уже
импортировали модули pytest, он ничего не меняет).
"""

import sys

sys.modules.setdefault("rfc3987_syntax", None)  # import даст ImportError, jsonschema его ждёт

"""Инструменты преподавателя и сопровождающего: выпуск тетрадок и оценивание.

Нужны только с дополнением ``dev`` (nbgrader); тетрадки учащихся их не импортируют.

Пакет ``rfc3987_syntax`` здесь не загружается. jsonschema (его импортирует nbformat)
подхватывает его, если он установлен (его ставит ``jsonschema[format-nongpl]`` для
jupyter-events), ради проверки формата «iri», которого нет ни в одной схеме nbformat и
nbgrader; а он при импорте строит три десятка грамматик Lark — 1,5 с на каждый процесс
оценивания: на ``make grade``, на шаблон единиц, на ``make bench`` по процессу на замер
(python-jsonschema/jsonschema#1428, rfc3987-syntax 1.1.0 — последняя версия).
"""

import sys

sys.modules.setdefault("rfc3987_syntax", None)  # import даст ImportError, jsonschema его ждёт

"""Процесс оценивания без ``rfc3987_syntax``: :func:`forbid_iri_grammars`, первым делом процесса.

jsonschema (его импортирует nbformat) подхватывает ``rfc3987_syntax``, если он установлен
(его ставит ``jsonschema[format-nongpl]`` для jupyter-events), ради проверки формата «iri»,
которого нет ни в одной схеме nbformat и nbgrader; а он при импорте строит три десятка
грамматик Lark — 1,5 с на каждый процесс оценивания: на ``make grade``, на шаблон единиц,
на ``make bench`` по процессу на замер (python-jsonschema/jsonschema#1428, rfc3987-syntax
1.1.0 — последняя версия).

Запрет нужен только процессам оценивания, и ставят его только их входы, явным вызовом до
всех прочих импортов: команда :mod:`feedback.teacher.commands.grade` (``make grade``,
``make bench`` — по процессу на замер) и вход процесса единицы
:mod:`feedback.teacher.unit.process` (шаблон единиц и единица на рабочем Dask). Импорт
модулей пакета запрета не ставит: formgrader, ``make feedback`` и остальные процессы
проверяют схемы jupyter-events как обычно. Вызывать надо до импорта nbformat: jsonschema
ищет пакет один раз, при своём импорте (поэтому в тестах, где nbformat уже импортировали
модули pytest, вызов ничего не меняет).
"""

import sys


def forbid_iri_grammars() -> None:
    """Запрещает в этом процессе импорт ``rfc3987_syntax``: jsonschema получит ImportError."""
    sys.modules.setdefault("rfc3987_syntax", None)

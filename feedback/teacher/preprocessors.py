"""Препроцессор nbgrader для выпуска тетрадок учащихся с русскими заглушками.

Внутри функции решение заменяется на ``raise NotImplementedError`` — проверка поймает
его и скажет «функция ещё не реализована». Но решение на верхнем уровне ячейки
(например, заполнение таблицы) так заменять нельзя: «Run all» остановился бы на
этой ячейке, и учащийся не увидел бы вердиктов ниже. Там остаётся только
комментарий-приглашение, а проверка увидит незаполненные «…». То же для решения
внутри выражения (аргументы вызова): его начало помечается ``### BEGIN SOLUTION inline``.
"""

from __future__ import annotations

import re

from nbgrader.preprocessors import ClearSolutions, NbGraderPreprocessor
from traitlets import Dict, Unicode

CODE_STUB = '# Добавьте сюда свой код\nraise NotImplementedError("Добавьте сюда свой код")'
TOP_LEVEL_STUB = "# Добавьте сюда свой код"
TEXT_STUB = "_Впишите сюда свой ответ._"
INLINE_MARK = "inline"


class CourseClearSolutions(ClearSolutions):
    """ClearSolutions, который не ставит ``raise`` на верхний уровень ячейки и в выражения."""

    code_stub = Dict({"python": CODE_STUB}, help="Русская заглушка для кода").tag(config=True)
    text_stub = Unicode(TEXT_STUB, help="Русская заглушка для письменного ответа").tag(config=True)
    top_level_stub = Unicode(
        TOP_LEVEL_STUB, help="Заглушка для решения, начинающегося с первого столбца"
    ).tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and self._wants_comment_stub(cell.source):
            saved = self.code_stub
            self.code_stub = {language: self.top_level_stub for language in saved}
            try:
                return super().preprocess_cell(cell, resources, cell_index)
            finally:
                self.code_stub = saved
        return super().preprocess_cell(cell, resources, cell_index)

    def _wants_comment_stub(self, source: str) -> bool:
        return any(
            self.begin_solution_delimeter in line
            and (not line[:1].isspace() or line.rstrip().endswith(INLINE_MARK))
            for line in source.splitlines()
        )


def _is_test_cell(cell) -> bool:
    grading = cell.get("metadata", {}).get("nbgrader", {})
    return cell.cell_type == "code" and grading.get("grade") and not grading.get("solution")


class DropLibraryStderr(NbGraderPreprocessor):
    """Убирает поток stderr из ячеек-тестов перед выставлением баллов.

    nbgrader снимает все баллы за ячейку, если в ней что-то напечатано в stderr, а
    предупреждения TensorFlow, JAX или matplotlib туда пишут постоянно. Настоящая
    ошибка проверки — это вывод типа ``error``, его мы не трогаем.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if _is_test_cell(cell):
            cell.outputs = [
                output
                for output in cell.outputs
                if not (output.output_type == "stream" and output.name == "stderr")
            ]
        return cell, resources


HIDDEN_TESTS = re.compile(
    r"^[ \t]*### BEGIN HIDDEN TESTS.*?^[ \t]*### END HIDDEN TESTS[^\n]*\n?", re.M | re.S
)


class ShortenReportErrors(NbGraderPreprocessor):
    """Готовит отчёт для учащегося: без скрытых тестов и без длинных трассировок.

    nbgrader по умолчанию показывает в отчёте исходный код скрытых тестов, а
    трассировка ошибки цитирует его ещё раз (jupyter/nbgrader#917, #1363). Здесь из
    ячеек-тестов вырезаются скрытые блоки, а от ошибки остаются только её тип и текст —
    для проверок курса это и есть русский вердикт. В остальных ячейках так же
    сокращаются только вердикты проверок и остановки по времени; трассировки ошибок в
    коде учащегося остаются — они ему полезны.
    """

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type != "code":
            return cell, resources
        test = _is_test_cell(cell)
        if test:
            cell.source = HIDDEN_TESTS.sub("", cell.source).rstrip("\n")
        for output in cell.outputs:
            if output.output_type == "error" and (test or output.ename in SHORT_EVERYWHERE):
                output.traceback = [_short_error(output.ename, output.evalue)]
        return cell, resources


#: Ошибки, которые в отчёте всегда сокращаются до одной строки: вердикты проверок и
#: остановка по лимиту времени (её трассировка учащемуся ничего не скажет).
SHORT_EVERYWHERE = {"CheckFailed", "KeyboardInterrupt", "CellTimeoutError"}


def _short_error(name: str, value: str) -> str:
    if name == "CheckFailed":
        return value
    if name in {"KeyboardInterrupt", "CellTimeoutError"}:
        return "Ячейка выполнялась слишком долго и была остановлена (лимит времени проверки)."
    return f"{name}: {value}" if value else name

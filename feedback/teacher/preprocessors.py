"""Препроцессор nbgrader для выпуска тетрадок учащихся с русскими заглушками.

Внутри функции решение заменяется на ``raise NotImplementedError`` — проверка поймает
его и скажет «функция ещё не реализована». Но решение на верхнем уровне ячейки
(например, заполнение таблицы) так заменять нельзя: «Run all» остановился бы на
этой ячейке, и учащийся не увидел бы вердиктов ниже. Там остаётся только
комментарий-приглашение, а проверка увидит незаполненные «…».
"""

from __future__ import annotations

from nbgrader.preprocessors import ClearSolutions
from traitlets import Unicode

CODE_STUB = '# Добавьте сюда свой код\nraise NotImplementedError("Добавьте сюда свой код")'
TOP_LEVEL_STUB = "# Добавьте сюда свой код"
TEXT_STUB = "_Впишите сюда свой ответ._"


class CourseClearSolutions(ClearSolutions):
    """ClearSolutions, который не ставит ``raise`` на верхний уровень ячейки."""

    top_level_stub = Unicode(
        TOP_LEVEL_STUB, help="Заглушка для решения, начинающегося с первого столбца"
    ).tag(config=True)

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type == "code" and self._has_top_level_region(cell.source):
            saved = self.code_stub
            self.code_stub = {language: self.top_level_stub for language in saved}
            try:
                return super().preprocess_cell(cell, resources, cell_index)
            finally:
                self.code_stub = saved
        return super().preprocess_cell(cell, resources, cell_index)

    def _has_top_level_region(self, source: str) -> bool:
        return any(
            self.begin_solution_delimeter in line and not line[:1].isspace()
            for line in source.splitlines()
        )

"""Препроцессоры nbgrader курса: выпуск с русскими заглушками и отчёты.

Внутри функции решение заменяется на ``raise NotImplementedError`` — проверка поймает
его и скажет «функция ещё не реализована». Но решение на верхнем уровне ячейки
(например, заполнение таблицы) так заменять нельзя: «Run all» остановился бы на
этой ячейке, и учащийся не увидел бы вердиктов ниже. Там остаётся только
комментарий-приглашение, а проверка увидит незаполненные «…». То же для решения
внутри выражения (аргументы вызова): его начало помечается ``### BEGIN SOLUTION inline``.
"""

from __future__ import annotations

from pathlib import Path

from nbgrader.preprocessors import ClearSolutions, NbGraderPreprocessor
from traitlets import Dict, Unicode

from feedback.probe import OBSERVATION_MIME

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


class ReportCleanup(NbGraderPreprocessor):
    """Готовит проверенную тетрадку к отчёту для учащегося.

    Убирает заметки для преподавателя (что посмотреть вручную) и служебные данные
    проверок. Трассировки ошибок в коде самого учащегося (решения и добавленные ячейки)
    остаются — они ему полезны; в ячейках курса ошибка — следствие (например, NameError
    после невыполненного задания), и от неё остаётся одна строка. Остановка по времени
    везде — одна строка.
    """

    def preprocess(self, nb, resources):
        nb.cells = [cell for cell in nb.cells if cell.metadata.get("course7") != "review-note"]
        return super().preprocess(nb, resources)

    def preprocess_cell(self, cell, resources, cell_index):
        if cell.cell_type != "code":
            return cell, resources
        cell.outputs = [
            output for output in cell.outputs if OBSERVATION_MIME not in output.get("data", {})
        ]
        learners = bool(cell.metadata.get("nbgrader", {}).get("solution"))
        learners = learners or cell.metadata.get("course7") == "added"
        for output in cell.outputs:
            if output.output_type != "error":
                continue
            if output.ename in TIMEOUTS:
                output.traceback = [TIMEOUT_TEXT]
            elif not learners:
                output.traceback = [f"{output.ename}: {output.evalue}"]
            else:
                output.traceback = [
                    frame for frame in output.traceback if PACKAGE_DIR not in str(frame)
                ]
        return cell, resources


#: Кадры пакета курса (например, отказ перехватчика ядра) в трассировке учащегося —
#: не его код: из отчёта они убираются.
PACKAGE_DIR = str(Path(__file__).resolve().parent.parent) + "/"


#: Ошибки, которыми заканчивается ячейка, остановленная по лимиту времени.
TIMEOUTS = {"KeyboardInterrupt", "CellTimeoutError"}
TIMEOUT_TEXT = "Ячейка выполнялась слишком долго и была остановлена (лимит времени проверки)."


class RefuseAutograde(NbGraderPreprocessor):
    """Останавливает ``nbgrader autograde``: он выполнил бы код учащихся без песочницы.

    Курс оценивается командой ``make grade`` (:mod:`feedback.teacher.grade`): каждая
    работа — в своей песочнице, вердикты выносятся вне неё.
    """

    def preprocess(self, nb, resources):
        raise RuntimeError(
            "nbgrader autograde в этом курсе отключён: он выполнил бы код учащихся с вашими "
            "правами и доверил бы им баллы. Оценивайте командой make grade."
        )

"""Тетрадки учащихся, выполненные «как есть»: у каждой проверки — русский вердикт.

Учащийся открывает тетрадку, ничего не заполняет и нажимает «Run all». Каждая
выполненная проверка показывает красный русский вердикт без трассировки. Упасть может
только ячейка, которая сама отказывается работать без выполненного задания (загрузка
модели в 7.5 без выбранного типа весов), и только с коротким русским сообщением: на ней
«Run all» останавливается, как в Jupyter и Colab. Если учащийся выполняет ячейки и дальше,
каждая, которой нужна незагруженная модель, говорит одной русской строкой, что ждёт
задания 1, а не показывает английскую трассировку ``NameError``.
"""

from __future__ import annotations

import json
import re

import pytest

from notebook_runner import ROOT, graded_cells, outputs_text, run_notebook

#: Тетрадки, выполненные один раз (фикстура модуля), делят тесты одного процесса xdist.
pytestmark = pytest.mark.xdist_group("student_notebooks")


LABS = sorted(path.name for path in (ROOT / "notebooks").iterdir() if path.is_dir())
RUSSIAN = re.compile("[а-яё]{4,}")


#: Где «Run all» нетронутой тетрадки останавливается: ячейка, которая отказывается работать
#: без выполненного задания, — ошибка и что говорят две первые строки её сообщения; затем —
#: ошибка ячеек ниже, которые ждут того же задания.
REFUSALS = {
    # 7.5: тип весов не выбран — загрузка отказывается сразу, float32 не грузится.
    "lab_7_5_bfloat16_lora": (
        "WeightsDtypeError",
        "Модель не загружена",
        "ещё не выбран",
        "WaitingForModel",
    ),
}


@pytest.fixture(scope="module", params=LABS)
def executed_student_notebook(request):
    """Тетрадка после «Run all»; та, где он останавливается, — и после ячеек ниже остановки.

    Ячейки до первой ошибки те же, что после «Run all»; дальше — как у учащегося, который
    после остановки выполняет ячейки по одной. Второй прогон той же тетрадки не нужен.
    """
    path = ROOT / "notebooks" / request.param / f"{request.param}.ipynb"
    nb = run_notebook(path, run_all=request.param not in REFUSALS)
    nb.metadata["course7_lab"] = request.param
    return nb


def test_only_a_refusal_in_russian_can_stop_run_all(executed_student_notebook):
    lab = executed_student_notebook.metadata["course7_lab"]
    errors = [
        output
        for cell in executed_student_notebook.cells
        if "raises-exception" not in cell.metadata.get("tags", [])
        for output in cell.get("outputs", [])
        if output.output_type == "error"
    ]
    if lab not in REFUSALS:
        assert errors == []
        return
    error = errors[0]  # на нём «Run all» остановился; ошибки ниже — в следующем тесте
    name, first, second, _ = REFUSALS[lab]
    assert error.ename == name
    assert first in error.traceback[0] and second in error.traceback[1]
    text = "\n".join(error.traceback)
    assert RUSSIAN.search(text) and "Traceback" not in text
    shown = "\n".join(outputs_text(cell) for cell in executed_student_notebook.cells)
    assert "Total params" not in shown  # model.summary() не выполнялся: модели нет


def test_cells_below_the_stop_say_in_one_russian_line_what_they_wait_for(
    executed_student_notebook,
):
    lab = executed_student_notebook.metadata["course7_lab"]
    if lab not in REFUSALS:
        return
    cells = executed_student_notebook.cells
    errors = [(i, o) for i, cell in enumerate(cells) for o in cell.get("outputs", [])]
    errors = [(i, output) for i, output in errors if output.output_type == "error"]
    stop = errors[0][0]
    for _, error in errors[1:]:  # ячейки курса: одна русская строка, а не NameError
        assert error.ename == REFUSALS[lab][3], error.ename
        [line] = error.traceback
        assert RUSSIAN.search(line) and "задание 1" in line
    # Каждая ячейка ниже, которой нужна модель, — и проверки, и код курса, и заготовка
    # учащегося — говорит, что модель ещё не загружена.
    needs_model = [
        cell
        for cell in cells[stop + 1 :]
        if cell.cell_type == "code" and re.search(r"\bmodel\b", cell.source)
    ]
    assert len(needs_model) >= 6, [cell.source for cell in needs_model]
    for cell in needs_model:
        assert "ещё не загружена" in outputs_text(cell), cell.source


def test_every_check_shows_a_red_russian_verdict(executed_student_notebook):
    graded = graded_cells(executed_student_notebook)
    checks = [cell for cell in graded if cell.get("execution_count")]
    assert bool(checks) == bool(graded)  # «Run all» дошёл хотя бы до первой проверки
    for cell in checks:
        shown = outputs_text(cell)
        assert "course7-check" in shown and "data-passed='false'" in shown, cell.source
        assert RUSSIAN.search(shown), shown
        assert "Traceback" not in shown


#: Что говорит каждая проверка нетронутой тетрадки: задание ещё не сделано.
NOT_DONE = {
    "lab_7_1_compare_models": ("ещё не реализована",),
    "lab_7_2_training_flops": ("ещё не реализована", "ещё не заполнена", "осталось «…»"),
    "lab_7_3_memory_wall": ("ещё не заполнено",),
    "lab_7_4_gpu_memory": ("ещё не реализована",),
    # После остановки: модели нет, функция не написана, параметры AdamW не переданы.
    "lab_7_5_bfloat16_lora": (
        "ещё не выбран",
        "ещё не посчитана",
        "ещё не загружена",
        "ещё не реализована",
        "не передан",
    ),
}


def test_untouched_checks_say_the_task_is_not_done(executed_student_notebook):
    lab = executed_student_notebook.metadata.get("course7_lab")
    for cell in graded_cells(executed_student_notebook):
        if cell.get("execution_count") and lab in NOT_DONE:
            assert any(words in outputs_text(cell) for words in NOT_DONE[lab]), cell.source


def test_every_lab_with_tasks_has_checks():
    for lab in LABS:
        nb = json.loads((ROOT / "notebooks" / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
        has_tasks = any(
            c["metadata"].get("nbgrader", {}).get("solution") and c["cell_type"] == "code"
            for c in nb["cells"]
        )
        has_checks = any(
            c["metadata"].get("nbgrader", {}).get("grade") and c["cell_type"] == "code"
            for c in nb["cells"]
        )
        assert has_checks == has_tasks, lab


def test_nothing_prints_a_traceback(executed_student_notebook):
    for cell in executed_student_notebook.cells:
        assert "Traceback" not in outputs_text(cell)

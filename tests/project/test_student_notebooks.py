"""Тетрадки учащихся, выполненные «как есть»: у каждой проверки — русский вердикт.

Учащийся открывает тетрадку, ничего не заполняет и нажимает «Run all». Каждая
выполненная проверка показывает красный русский вердикт без трассировки. Упасть может
только ячейка, которой нужно невыполненное задание, и только с коротким русским
сообщением: ячейка, которая сама отказывается работать (загрузка модели в 7.5 без
выбранного типа весов), или ячейка курса, которая ждёт ответа учащегося (обучение 7.6 —
оптимизатора задания 1); на ней «Run all» останавливается, как в Jupyter и Colab. Если
учащийся выполняет ячейки и дальше, каждая, которой нужен результат задания, говорит одной
русской строкой, какого задания ждёт, а не показывает английскую трассировку
``NameError``. Нетронутая тетрадка обучает модель только там, где ответ учащегося не нужен.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pytest

from notebook_runner import ROOT, graded_cells, outputs_text, run_notebook

#: Тетрадки, выполненные один раз (фикстура модуля), делят тесты одного процесса xdist.
pytestmark = pytest.mark.xdist_group("student_notebooks")


LABS = sorted(path.name for path in (ROOT / "notebooks").iterdir() if path.is_dir())
RUSSIAN = re.compile("[а-яё]{4,}")


@dataclass(frozen=True)
class Stop:
    """Где «Run all» нетронутой тетрадки останавливается и что говорят ячейки, ждущие задания.

    ``refusal`` — ошибка ячейки, которая сама отказывается работать без задания, и что
    говорят две первые строки её сообщения; ``None`` — «Run all» останавливается на первой
    же ячейке, которая ждёт задания. Ячейки, которым нужен результат задания (их код
    подходит под ``needs``; от остановки и ниже, не меньше ``at_least``), говорят ``says``, а
    падают они ошибкой ``waiting`` в одну русскую строку, где названо ``task``.
    """

    refusal: tuple[str, str, str] | None
    waiting: str
    task: str
    needs: str
    says: str
    at_least: int


STOPS = {
    # 7.5: тип весов не выбран — загрузка отказывается сразу, float32 не грузится; ниже
    # каждой ячейке с model нужна незагруженная модель.
    "lab_7_5_bfloat16_lora": Stop(
        ("WeightsDtypeError", "Модель не загружена", "ещё не выбран"),
        "WaitingForModel",
        "задание 1",
        r"\bmodel\b",
        "ещё не загружена",
        6,
    ),
    # 7.6: обучение с накоплением ждёт оптимизатора задания 1 (в заготовке накопления нет).
    "lab_7_6_gradient_accumulation": Stop(
        None,
        "WaitingForTask",
        "задания 1",
        r"\boptimizer\b|\bhistory\b",
        "Обучение ждёт задания 1",
        1,
    ),
}


@pytest.fixture(scope="module", params=LABS)
def executed_student_notebook(request):
    """Тетрадка после «Run all»; та, где он останавливается, — и после ячеек ниже остановки.

    Ячейки до первой ошибки те же, что после «Run all»; дальше — как у учащегося, который
    после остановки выполняет ячейки по одной. Второй прогон той же тетрадки не нужен.
    """
    path = ROOT / "notebooks" / request.param / f"{request.param}.ipynb"
    nb = run_notebook(path, run_all=request.param not in STOPS)
    nb.metadata["course7_lab"] = request.param
    return nb


def error_outputs(nb) -> list[tuple[int, object]]:
    """Ошибки ячеек, которые падать не должны (не ``raises-exception``): номер ячейки и ошибка."""
    return [
        (i, output)
        for i, cell in enumerate(nb.cells)
        if "raises-exception" not in cell.metadata.get("tags", [])
        for output in cell.get("outputs", [])
        if output.output_type == "error"
    ]


def test_only_a_refusal_in_russian_can_stop_run_all(executed_student_notebook):
    lab = executed_student_notebook.metadata["course7_lab"]
    errors = [error for _, error in error_outputs(executed_student_notebook)]
    if lab not in STOPS:
        assert errors == []
        return
    error = errors[0]  # на нём «Run all» остановился; ошибки ниже — в следующем тесте
    refusal = STOPS[lab].refusal
    if refusal is None:  # остановилась ячейка, которая ждёт задания: тоже одна строка
        assert error.ename == STOPS[lab].waiting
        return
    name, first, second = refusal
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
    if lab not in STOPS:
        return
    stop = STOPS[lab]
    cells = executed_student_notebook.cells
    errors = error_outputs(executed_student_notebook)
    first = errors[0][0]
    waiting = errors[1:] if stop.refusal else errors
    assert waiting, "ни одна ячейка не сказала, что ждёт задания"
    for _, error in waiting:  # ячейки курса: одна русская строка, а не NameError
        assert error.ename == stop.waiting, error.ename
        [line] = error.traceback
        assert RUSSIAN.search(line) and stop.task in line, line
    # Каждая ячейка от остановки и ниже, которой нужен результат задания, — и проверки, и код
    # курса, и заготовка учащегося — говорит, чего она ждёт.
    start = first + 1 if stop.refusal else first
    needs = [
        cell
        for cell in cells[start:]
        if cell.cell_type == "code" and re.search(stop.needs, cell.source)
    ]
    assert len(needs) >= stop.at_least, [cell.source for cell in needs]
    for cell in needs:
        assert stop.says in outputs_text(cell), cell.source


#: Ячейки, в которых нетронутая тетрадка обучает модель (``model.fit`` с полосой прогресса).
#: Таких нет (issue 40): опыт 7.6 ждёт батча, вписанного вместо «…», а обучение с накоплением —
#: оптимизатора задания 1.
TRAININGS: dict[str, tuple[str, ...]] = {}

#: Строка прогресса Keras в конце шага обучения: «… 18s/step - loss: 1.5330 …».
PROGRESS = re.compile(r"/step - loss: ")


def test_untouched_notebook_trains_only_where_no_answer_is_needed(executed_student_notebook):
    lab = executed_student_notebook.metadata["course7_lab"]
    trained = [
        cell.get("id")
        for cell in executed_student_notebook.cells
        if cell.cell_type == "code" and PROGRESS.search(outputs_text(cell))
    ]
    assert tuple(trained) == TRAININGS.get(lab, ()), trained
    shown = "\n".join(outputs_text(cell) for cell in executed_student_notebook.cells)
    assert "Generations after epoch" not in shown  # GenerationMonitor не запускался


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
    # Заготовки оптимизаторов обоих заданий: ни накопления, ни скорости обучения.
    "lab_7_6_gradient_accumulation": ("не передан",),
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

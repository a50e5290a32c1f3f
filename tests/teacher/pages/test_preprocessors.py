"""Препроцессоры nbgrader курса: заглушки выпуска, отчёты, отказ nbgrader autograde."""

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from feedback.engine.probe import OBSERVATION_MIME
from feedback.teacher.pages.preprocessors import (
    CourseClearSolutions,
    RefuseAutograde,
    ReportCleanup,
)

from notebook_runner import ROOT
from submissions import nbgrader, student_notebook, submission, write_submission


def test_report_drops_teacher_notes_and_shortens_timeouts():
    note = new_markdown_cell("**Посмотрите вручную**")
    note.metadata["course7"] = "review-note"
    shown = new_markdown_cell("**Замечания оценивания**")
    shown.metadata["course7"] = "grading-note"
    timeout = new_output("error", ename="KeyboardInterrupt", evalue="", traceback=["tb1", "tb2"])
    learner_error = new_output("error", ename="ZeroDivisionError", evalue="x", traceback=["tb"])
    data = new_output("display_data", data={OBSERVATION_MIME: {}, "text/plain": "[наблюдение]"})
    code = new_code_cell("1/0", outputs=[timeout, learner_error, data])
    code.metadata["nbgrader"] = {"solution": True, "grade_id": "f"}
    missing = new_output("error", ename="NameError", evalue="name 'model' is not defined")
    missing.traceback = ["tb", "tb"]
    course = new_code_cell("model.fit()", outputs=[missing])
    nb, _ = ReportCleanup().preprocess(new_notebook(cells=[note, shown, code, course]), {})
    assert [cell.source for cell in nb.cells[:1]] == ["**Замечания оценивания**"]
    assert len(nb.cells) == 3
    assert "слишком долго" in nb.cells[1].outputs[0].traceback[0]
    assert nb.cells[1].outputs[1].traceback == ["tb"]  # ошибка в коде учащегося — целиком
    assert len(nb.cells[1].outputs) == 2
    assert nb.cells[2].outputs[0].traceback == ["NameError: name 'model' is not defined"]


def test_refuse_autograde_explains_make_grade():
    with pytest.raises(RuntimeError, match="make grade"):
        RefuseAutograde().preprocess(new_notebook(), {})


@pytest.mark.slow
def test_nbgrader_autograde_is_refused_by_course_config(tmp_path, monkeypatch):
    """Кнопка «Autograde» formgrader и nbgrader autograde не выполняют код учащихся."""
    lab = "lab_7_2_training_flops"
    marker = tmp_path / "learner-code-ran"
    nb = submission(lab, {"compute_num_flops": f"open({str(marker)!r}, 'w').close()"})
    write_submission(tmp_path / "work" / "submitted", "ivanov", lab, nb)
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(tmp_path / "work"))
    release = f"--CourseDirectory.release_directory={tmp_path / 'release'}"
    assert nbgrader("generate_assignment", lab, "--force", release, check=False).returncode == 0
    out = nbgrader("autograde", lab, "--force", check=False)
    assert out.returncode != 0 and "make grade" in out.stdout + out.stderr
    assert not marker.exists()
    assert not (tmp_path / "work" / "autograded" / "ivanov" / lab / f"{lab}.ipynb").exists()


def test_inline_and_top_level_regions_get_a_comment_stub_functions_get_raise():
    def cleared(source):
        cell = new_code_cell(source)
        cell.metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "s"}
        nb = new_notebook(
            cells=[cell],
            metadata={
                "kernelspec": {"language": "python", "name": "python3", "display_name": "Python 3"}
            },
        )
        nb, _ = CourseClearSolutions().preprocess(nb, {})
        return nb.cells[0].source

    inline = cleared("f(\n    ### BEGIN SOLUTION inline\n    x=1,\n    ### END SOLUTION\n)")
    assert inline == "f(\n    # Добавьте сюда свой код\n)"
    top = cleared("### BEGIN SOLUTION\nx = 1\n### END SOLUTION")
    assert top == "# Добавьте сюда свой код"
    body = cleared("def f():\n    ### BEGIN SOLUTION\n    return 1\n    ### END SOLUTION")
    assert "raise NotImplementedError" in body and "YOUR CODE" not in body


def test_course_frames_leave_a_learners_traceback():
    """Отказ перехватчика ядра приходит с кадрами пакета курса: в отчёте их нет."""
    from feedback.teacher.pages.preprocessors import PACKAGE_DIR

    frames = [
        "PermissionError Traceback (most recent call last)",
        "Cell In[3], line 4\n----> 4 open('feedback/engine/probe.py', 'w')",
        f"File {PACKAGE_DIR}kernel_guard.py:193, in _hook(event, args)",
        "PermissionError: подкладывает свой пакет курса: запрещено при оценивании",
    ]
    error = new_output("error", ename="PermissionError", evalue="x", traceback=frames)
    code = new_code_cell("open('feedback/engine/probe.py', 'w')", outputs=[error])
    code.metadata["nbgrader"] = {"solution": True, "grade_id": "f"}
    nb, _ = ReportCleanup().preprocess(new_notebook(cells=[code]), {})
    assert nb.cells[0].outputs[0].traceback == [frames[0], frames[1], frames[3]]


# --------------------------------------------------------------------------- критерии оценки


def test_report_drops_the_criteria_cells():
    from feedback.teacher.pages.preprocessors import TEACHER_ONLY
    from feedback.teacher.unit import pipeline as unit

    assert TEACHER_ONLY == {unit.REVIEW_NOTE, unit.RUBRIC_NOTE}
    answer = new_markdown_cell("Мой ответ")
    answer.metadata["nbgrader"] = {"solution": True, "grade": True, "grade_id": "r", "points": 1}
    criteria = unit.rubric_cell("r", {"text": "**Критерии для преподавателя.** …"}, shown=False)
    nb, _ = ReportCleanup().preprocess(new_notebook(cells=[answer, criteria]), {})
    assert [cell.source for cell in nb.cells] == ["Мой ответ"]


def _graded_copy(tmp_path, monkeypatch, lab: str, upload: dict, gpu: bool = False):
    """Проверенная тетрадка единицы (без ядра: выполнение подменено) с критериями из solutions/."""
    from feedback.teacher.core.results import Job
    from feedback.teacher.core.settings import CPU_LIMITS
    from feedback.teacher.unit import pipeline as unit
    from feedback.teacher.unit.execute import Execution

    monkeypatch.setattr(unit, "scan", lambda *args, **kwargs: [])
    monkeypatch.setattr(
        unit,
        "execute",
        lambda notebook, *args: Execution(notebook=notebook, status=["ok"] * len(notebook.cells)),
    )
    monkeypatch.setattr(unit, "kernel_caches", lambda job, unit_dir: ({}, [], []))
    job = Job(
        student="ivanov",
        lab=lab,
        release=student_notebook(lab),
        upload=upload,
        seed="s",
        sandbox="none",
        limits=CPU_LIMITS,
        unit_dir=str(tmp_path / lab),
        gpu=gpu,
        rubrics=unit.rubrics(ROOT / "solutions" / lab / f"{lab}.ipynb"),
    )
    return unit.run_unit(job).autograded


def _criteria_after(cells) -> dict[str, str]:
    """Ячейки критериев по grade_id ячейки прямо над ними (``None`` — не под ответом)."""
    found = {}
    for above, cell in zip([None, *cells], cells, strict=False):
        if cell.metadata.get("course7") == "rubric":
            grading = above.metadata.get("nbgrader", {}) if above is not None else {}
            found[grading.get("grade_id") if grading.get("solution") else None] = cell.source
    return found


def test_the_unit_puts_criteria_under_each_written_answer_only(tmp_path, monkeypatch):
    lab = "lab_7_2_training_flops"
    upload = student_notebook(lab)
    cells = _graded_copy(tmp_path, monkeypatch, lab, upload).cells
    criteria = _criteria_after(cells)
    assert set(criteria) == {"reflection_scaling", "reflection_backward"}
    assert all("Критерии для преподавателя" in text for text in criteria.values())
    assert (
        "10-кратно меньшем числе токенов" in criteria["reflection_scaling"]
    )  # образец ответа из solutions/
    assert all("собственный запуск" not in text for text in criteria.values())
    roles = [cell.metadata.get("course7") for cell in cells]
    assert roles.count("rubric") == 2


def test_criteria_of_a_question_about_the_learners_run_say_where_the_outputs_are(
    tmp_path, monkeypatch
):
    from feedback.teacher.unit import pipeline as unit

    lab = "lab_7_5_bfloat16_lora"
    upload = student_notebook(lab)
    training = next(
        cell for cell in upload["cells"] if "grading-skip" in cell["metadata"].get("tags", [])
    )
    training["outputs"] = [new_output("stream", name="stdout", text="Эпоха 1/4: loss 2,31\n")]
    criteria = _criteria_after(_graded_copy(tmp_path, monkeypatch, lab, upload, gpu=True).cells)
    assert set(criteria) == {"reflection_epochs", "reflection_bf16_lora"}
    assert unit.OWN_RUN_SHOWN in criteria["reflection_epochs"].replace("\n> ", " ")
    assert "собственный запуск" not in criteria["reflection_bf16_lora"]

    training["outputs"] = []
    criteria = _criteria_after(_graded_copy(tmp_path, monkeypatch, lab, upload, gpu=True).cells)
    assert unit.OWN_RUN_MISSING in criteria["reflection_epochs"].replace("\n> ", " ")


def test_only_the_run_dependent_questions_are_marked_so():
    from feedback.teacher.unit import pipeline as unit

    marked = {
        (lab.parent.name, grade_id)
        for lab in sorted((ROOT / "solutions").glob("*/*.ipynb"))
        for grade_id, rubric in unit.rubrics(lab).items()
        if rubric["own_run"]
    }
    assert marked == {
        ("lab_7_1_compare_models", "reflection_speed"),
        ("lab_7_1_compare_models", "reflection_quality"),
        ("lab_7_5_bfloat16_lora", "reflection_epochs"),
    }


def test_report_titles_come_from_the_course_not_from_the_learner():
    import json

    from nbformat import reads

    from feedback.teacher.pages.preprocessors import REPORT_KEY

    def read(lab):
        return reads(json.dumps(student_notebook(lab)), as_version=4)

    nb = read("lab_7_5_bfloat16_lora")
    added = new_markdown_cell("# Взломано\n\n## Моя глава")
    added.metadata["course7"] = "added"
    nb.cells.insert(0, added)
    resources = {}
    nb, _ = ReportCleanup().preprocess(nb, resources)
    assert resources[REPORT_KEY]["lab_title"] == "Лабораторная 7.5. Дообучите Gemma-4B на одной T4"
    titles = {
        cell.metadata.nbgrader.grade_id: cell.metadata[REPORT_KEY]["title"]
        for cell in nb.cells
        if REPORT_KEY in cell.metadata
    }
    assert titles["check_weights_dtype"] == "Тип весов для загрузки"  # русское имя проверки
    assert titles["reflection_epochs"] == "Вопрос 1"

    nb = read("lab_7_2_training_flops")
    nb, _ = ReportCleanup().preprocess(nb, {})
    flops = next(
        c
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade_id") == "check_compute_num_flops"
    )
    # имя проверки — имя функции: тогда заголовок задания над ней
    assert flops.metadata[REPORT_KEY]["title"] == "Задание 1. Функция compute_num_flops"

"""Препроцессоры nbgrader курса: заглушки выпуска, отчёты, отказ nbgrader autograde."""

import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from feedback.probe import OBSERVATION_MIME
from feedback.teacher.preprocessors import CourseClearSolutions, RefuseAutograde, ReportCleanup

from submissions import nbgrader, submission, write_submission


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
    from feedback.teacher.preprocessors import PACKAGE_DIR

    frames = [
        "PermissionError Traceback (most recent call last)",
        "Cell In[3], line 4\n----> 4 open('feedback/probe.py', 'w')",
        f"File {PACKAGE_DIR}kernel_guard.py:193, in _hook(event, args)",
        "PermissionError: подкладывает свой пакет курса: запрещено при оценивании",
    ]
    error = new_output("error", ename="PermissionError", evalue="x", traceback=frames)
    code = new_code_cell("open('feedback/probe.py', 'w')", outputs=[error])
    code.metadata["nbgrader"] = {"solution": True, "grade_id": "f"}
    nb, _ = ReportCleanup().preprocess(new_notebook(cells=[code]), {})
    assert nb.cells[0].outputs[0].traceback == [frames[0], frames[1], frames[3]]

"""Препроцессоры nbgrader курса: заглушки, stderr и отчёты без скрытых тестов."""

from nbformat.v4 import new_code_cell, new_output

from feedback.teacher.preprocessors import DropLibraryStderr, ShortenReportErrors


def test_cell(source="check()", outputs=()):
    cell = new_code_cell(source, outputs=list(outputs))
    cell.metadata["nbgrader"] = {"grade": True, "solution": False, "points": 2, "grade_id": "t"}
    return cell


def test_stderr_is_dropped_from_test_cells_only():
    noise = new_output("stream", name="stderr", text="WARNING: tensorflow")
    verdict = new_output("display_data", data={"text/plain": "✅"})
    graded = test_cell(outputs=[noise, verdict])
    DropLibraryStderr().preprocess_cell(graded, {}, 0)
    assert [o.output_type for o in graded.outputs] == ["display_data"]

    plain = new_code_cell("print()", outputs=[noise])
    DropLibraryStderr().preprocess_cell(plain, {}, 0)
    assert plain.outputs == [noise]


def test_report_hides_hidden_tests_and_shortens_errors():
    source = (
        "### BEGIN HIDDEN TESTS\nsecret_check(fn, cases=[(1, 2)])\n### END HIDDEN TESTS\n"
        "visible_check(fn)"
    )
    error = new_output(
        "error",
        ename="CheckFailed",
        evalue="❌ f: ответ неверный.",
        traceback=["Traceback ...", "secret_check(fn, cases=[(1, 2)])", "CheckFailed: ..."],
    )
    cell = test_cell(source, [error])
    ShortenReportErrors().preprocess_cell(cell, {}, 0)
    assert cell.source == "visible_check(fn)"
    assert cell.outputs[0].traceback == ["❌ f: ответ неверный."]


def test_timeouts_and_other_errors_are_one_line():
    timeout = new_output("error", ename="KeyboardInterrupt", evalue="", traceback=["..."])
    other = new_output("error", ename="NameError", evalue="name 'x' is not defined", traceback=[])
    cell = test_cell(outputs=[timeout, other])
    ShortenReportErrors().preprocess_cell(cell, {}, 0)
    assert "слишком долго" in cell.outputs[0].traceback[0]
    assert cell.outputs[1].traceback == ["NameError: name 'x' is not defined"]


def test_check_failures_outside_test_cells_are_shortened_too():
    from nbformat.v4 import new_code_cell

    learner_error = new_output("error", ename="ZeroDivisionError", evalue="x", traceback=["tb"])
    verdict = new_output("error", ename="CheckFailed", evalue="❌ вердикт", traceback=["tb"])
    cell = new_code_cell("...", outputs=[learner_error, verdict])
    ShortenReportErrors().preprocess_cell(cell, {}, 0)
    assert cell.outputs[0].traceback == ["tb"]
    assert cell.outputs[1].traceback == ["❌ вердикт"]


def test_inline_and_top_level_regions_get_a_comment_stub_functions_get_raise():
    from nbformat.v4 import new_notebook

    from feedback.teacher.preprocessors import CourseClearSolutions

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

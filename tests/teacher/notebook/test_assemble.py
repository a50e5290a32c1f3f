"""Сборка проверяемой тетрадки: ответы из работы, всё остальное — из выпуска."""

import ast
import copy
import json

import nbformat
import pytest

from feedback.checks import CHECK_MODULES
from feedback.teacher.notebook.assemble import (
    assemble,
    is_answer,
    is_test,
    parse_check_call,
    probe_source,
)

from notebook_runner import ROOT
from submissions import cell_by_id, solution_sources, student_notebook, submission

LAB2 = "lab_7_2_training_flops"
LABS = sorted(path.parent.name for path in (ROOT / "notebooks").glob("*/*.ipynb"))


def release(lab=LAB2):
    return nbformat.read(ROOT / "notebooks" / lab / f"{lab}.ipynb", as_version=4)


def answers(assembled):
    return {
        cell.metadata["nbgrader"]["grade_id"]: cell.source
        for cell in assembled.notebook.cells
        if "nbgrader" in cell.metadata and cell.metadata["nbgrader"].get("solution")
    }


def colab(nb):
    nb = copy.deepcopy(nb)
    nb["nbformat_minor"] = 0
    for cell in nb["cells"]:
        cell.pop("id", None)
        cell["metadata"] = {}
        if isinstance(cell["source"], str):
            cell["source"] = cell["source"].splitlines(keepends=True)
    return nb


def test_fixed_cells_come_from_the_release_and_answers_from_the_upload():
    nb = submission(LAB2)
    for cell in nb["cells"]:
        if not cell["metadata"].get("nbgrader", {}).get("solution"):
            cell["source"] = "pass  # учащийся всё переписал"
    assembled = assemble(release(), nb)
    expected = {gid: src for gid, src in solution_sources(LAB2).items()}
    assert {k: v for k, v in answers(assembled).items() if k in expected} == expected
    fixed = [c for c in assembled.notebook.cells if not is_answer(c)]
    assert [c.source for c in fixed] == [c.source for c in release().cells if not is_answer(c)]
    assert assembled.notes == []


@pytest.mark.parametrize("lab", LABS)
def test_colab_saved_notebooks_without_markup_are_matched_by_position(lab):
    full = assemble(release(lab), submission(lab))
    bare = assemble(release(lab), colab(submission(lab)))
    assert answers(bare) == answers(full)
    assert bare.notes == [] and "added" not in bare.roles


def test_added_helper_cells_stay_in_place_and_edits_of_fixed_cells_are_dropped():
    nb = submission(LAB2)
    cells = nb["cells"]
    answer = cells.index(cell_by_id(nb, "compute_num_flops"))
    helper = nbformat.v4.new_code_cell("def six():\n    return 6")
    cells.insert(answer, helper)
    cell_by_id(nb, "compute_num_flops")["source"] = (
        "def compute_num_flops(p, n):\n    return six() * p * n"
    )
    text = next(c for c in cells if "## Правило 6" in "".join(c["source"]))
    text["source"] = "".join(text["source"]).replace("Почти", "ПОЧТИ")
    cell_by_id(nb, "check_compute_num_flops")["source"] = "pass"
    cells.append(copy.deepcopy(cell_by_id(nb, "check_final_results")))
    nb = colab(nb)
    nb["cells"].insert(3, copy.deepcopy(cell_by_id(student_notebook(LAB2), "check_final_results")))
    assembled = assemble(release(), nb)
    sources = [c.source for c in assembled.notebook.cells]
    position = sources.index("def six():\n    return 6")
    assert assembled.roles[position] == "added"
    assert sources[position + 1].startswith("def compute_num_flops")
    assert "ПОЧТИ" not in "".join(sources)
    assert sources.count("flops.check_final_results(final_results_data, compute_num_flops)") == 1
    assert "flops.check_compute_num_flops(compute_num_flops)" in sources


def test_a_deleted_answer_is_reported_and_left_as_the_stub():
    nb = submission(LAB2)
    nb["cells"].remove(cell_by_id(nb, "compute_num_flops"))
    assembled = assemble(release(), nb)
    assert any("compute_num_flops" in note for note in assembled.notes)
    stub = cell_by_id(student_notebook(LAB2), "compute_num_flops")["source"]
    assert answers(assembled)["compute_num_flops"] == "".join(stub)


def test_edited_markup_is_ignored():
    nb = submission(LAB2)
    test = cell_by_id(nb, "check_compute_num_flops")
    test["metadata"]["nbgrader"].update(points=1000, schema_version=99, locked=False)
    cell_by_id(nb, "final_results_data")["metadata"]["nbgrader"]["points"] = 50
    assembled = assemble(release(), nb)
    points = {
        c.metadata["nbgrader"]["grade_id"]: c.metadata["nbgrader"].get("points")
        for c in assembled.notebook.cells
        if "nbgrader" in c.metadata
    }
    assert points["check_compute_num_flops"] == 2 and points["final_results_data"] is None


@pytest.mark.parametrize("lab", LABS)
def test_every_test_cell_is_one_check_call_that_becomes_a_probe(lab):
    for cell in release(lab).cells:
        if is_test(cell):
            call = parse_check_call(cell.source)
            source = probe_source("gid", call, {"cases": [[1, 2]]}, "метка")
            body = ast.parse(source).body
            emit = body[-1].value
            # Зонд сам импортирует модуль проверки — из таблицы модулей с проверками.
            module = ast.literal_eval(body[-2].value.args[0])
            assert module == f"feedback.{call.name.split('.')[0]}"
            assert module.removeprefix("feedback.") in CHECK_MODULES
            grade_id, name, objects, params, token = (ast.unparse(arg) for arg in emit.args)
            assert (grade_id, name, token) == ("'gid'", repr(call.name), "'метка'")
            expected = ast.unparse(ast.parse(f"lambda: ({', '.join(call.objects)},)"))
            assert objects == expected
            assert json.loads(ast.literal_eval(params)) == {"cases": [[1, 2]]}


@pytest.mark.parametrize(
    "source",
    [
        "flops.check_compute_num_flops(f())",
        "x = 1",
        "flops.check_x(f)",
        "check(f)",
        "flops.check_compute_num_flops(f, cases=CASES)",
    ],
)
def test_malformed_test_cells_are_a_course_error(source):
    with pytest.raises((ValueError, KeyError)):
        parse_check_call(source)


@pytest.mark.parametrize("lab", LABS)
def test_only_fixed_code_cells_are_skipped_when_grading(lab):
    for cell in release(lab).cells:
        if "grading-skip" in cell.metadata.get("tags", []):
            assert cell.cell_type == "code" and "nbgrader" not in cell.metadata, cell.source

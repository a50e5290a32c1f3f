"""Содержание лабораторных 7.1, 7.2 и 7.4 после issue 40: числа, баллы, вопросы, сроки."""

from __future__ import annotations

import re

from feedback import measured
from feedback.gpu.check import CONFIGS
from tests.project.test_lab_content import assigned, cells, grade_id, lab_named, text

LAB_71, LAB_72, LAB_74 = lab_named("7.1"), lab_named("7.2"), lab_named("7.4")


def points(lab: str) -> dict[str, float]:
    return {
        grade_id(cell): cell["metadata"]["nbgrader"]["points"]
        for cell in cells(lab)
        if cell["metadata"].get("nbgrader", {}).get("grade")
    }


def whole(lab: str) -> str:
    return " ".join(" ".join(text(cell).split()) for cell in cells(lab))


def before(lab: str, wanted: str) -> str:
    """Весь текст, который учащийся видит до ячейки с ``grade_id`` = ``wanted``."""
    seen = []
    for cell in cells(lab, "notebooks"):
        if grade_id(cell) == wanted:
            return " ".join(seen)
        seen.append(text(cell))
    raise AssertionError(f"{lab}: нет ячейки {wanted}")


# --------------------------------------------------------------------------- 7.4


def test_7_4_gives_written_answers_more_points_than_one_line_formulas():
    got = points(LAB_74)
    checks = {key: value for key, value in got.items() if key.startswith("check_")}
    written = {key: value for key, value in got.items() if key.startswith("reflection_")}
    assert len(checks) == 5 and all(value == 1 for value in checks.values())
    assert sum(written.values()) > sum(checks.values())
    assert written["reflection_input"] == max(written.values())  # вывод батча — самый трудный
    assert sum(got.values()) == 13  # максимум в Moodle (docs/teaching.md) прежний


def test_rubrics_of_7_4_name_the_points_of_their_cell():
    for cell in cells(LAB_74):
        found = re.search(r"Критерии для преподавателя \((\d+) балл", text(cell))
        if found:
            assert int(found[1]) == cell["metadata"]["nbgrader"]["points"], grade_id(cell)


def test_7_4_takes_the_t4_budget_of_7_5_and_7_6():
    assert assigned(LAB_74, "T4_USABLE_GIB") == assigned(lab_named("7.5"), "T4_USABLE_GIB")
    assert "14,25 ГиБ" in whole(LAB_74) and "14,7 ГиБ" not in whole(LAB_74)
    assert "около 15 ГиБ" not in whole(LAB_74)


def test_7_4_does_not_say_float32_weights_almost_fit_a_t4():
    """7.3: веса во float32 (14,45 ГиБ) в T4 не помещаются вовсе, а не «занимают почти всю»."""
    assert "почти всю её память" not in whole(LAB_74)
    assert "14,45 ГиБ" in whole(LAB_74)


def test_7_4_setup_does_not_give_away_the_weights_answer():
    assert "14,90 ГиБ" not in before(LAB_74, "check_calculate_param_memory")


def test_7_4_says_after_question_1_that_real_activations_are_far_larger():
    record = measured.load_record()
    real = record.activation_gib_per_example()
    config = CONFIGS["4b"]
    formula = 400 * config["num_layers"] * config["hidden_dim"] * 2 / 1024**3
    cells_74 = cells(LAB_74)
    index = next(i for i, cell in enumerate(cells_74) if grade_id(cell) == "reflection_largest")
    after = " ".join(text(cell) for cell in cells_74[index + 1 : index + 2])
    assert after.startswith("<details>")  # разбор — после ответа, свёрнутый
    assert f"≈ {real:.2f} ГиБ".replace(".", ",") in after
    assert f"{formula:.3f} ГиБ".replace(".", ",") in after
    assert f"в {real / formula:.0f} раз" in after
    assert record.provenance.gpu in after and record.provenance.jax in after
    assert "упрощённой модели" in after


def test_7_4_budget_is_twenty_to_twenty_five_minutes():
    assert "20–25 минут" in text(cells(LAB_74)[2])


# --------------------------------------------------------------------------- 7.2


def test_7_2_question_1_is_a_new_case_not_answered_before_it():
    question = next(
        text(cell) for cell in cells(LAB_72) if grade_id(cell) == "reflection_scaling_question"
    )
    assert "в 10 раз и данные в 10 раз" not in question  # старый вопрос: ответ был в тексте
    seen = before(LAB_72, "reflection_scaling_question")
    assert "7 млрд" in question and "7 млрд" not in seen
    assert "100 млрд" not in seen


# --------------------------------------------------------------------------- 7.1


def test_7_1_is_honest_about_waiting_on_a_t4():
    intro = whole(LAB_71)
    assert "не измерял" in intro and "около часа" in intro
    assert "от полуминуты до пары минут" not in intro


def test_7_1_prints_generations_visibly():
    code = " ".join(text(cell) for cell in cells(LAB_71) if cell["cell_type"] == "code")
    assert "print(jide_text)" not in code and "generation.visible(jide_text)" in code
    assert "generation.show_texts(generations_gemma_1b)" in code


def test_one_tolerance_rule_for_every_gib_answer():
    """7.3, 7.4 и 7.5 (и FLOPs 7.2) принимают ответ по одному правилу курса — 1 % (issue 40)."""
    from feedback import flops, memory
    from feedback.answers import precision, wall
    from feedback.engine.comparing import ANSWER_REL_TOL, FunctionTask

    assert wall.WEIGHTS_REL_TOL == precision.BUDGET_REL_TOL == ANSWER_REL_TOL == 0.01
    tasks = [v for v in vars(memory).values() if isinstance(v, FunctionTask)]
    assert len(tasks) == 5 and {task.rel_tol for task in tasks} == {ANSWER_REL_TOL}
    assert flops.COMPUTE_NUM_FLOPS.rel_tol == ANSWER_REL_TOL

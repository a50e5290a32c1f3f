"""Оценивание GPU-лабораторных (7.1, 7.5, 7.6) на обычной машине в крошечном режиме.

Та же цепочка nbgrader, что и для CPU-лабораторных: верные работы получают все баллы
автопроверки, работа с типичной ошибкой теряет баллы только за своё задание, нетронутая —
ноль с русским вердиктом в отчёте.
"""

from __future__ import annotations

import pytest

from submissions import (
    assert_expected_points,
    grade_all,
    report,
    student_notebook,
    submission,
)

pytestmark = pytest.mark.slow

LAB1 = "lab_7_1_compare_models"
LAB5 = "lab_7_5_bfloat16_lora"
LAB6 = "lab_7_6_gradient_accumulation"

LAB5_TASKS = ("check_bfloat16", "check_lora", "check_optimizer")


def lab5_points(lost: str | None = None) -> dict[str, int]:
    return {task: 0 if task == lost else 2 for task in LAB5_TASKS}


OPTIMIZER_7_5 = """optimizer = keras.optimizers.AdamW(
    learning_rate={lr}, weight_decay=0.01, beta_1=0.9, beta_2=0.95, epsilon=1e-6, clipnorm=0.5
)"""
OPTIMIZER_7_6 = """optimizer = keras.optimizers.AdamW(
    weight_decay=0.01, beta_1=0.9, beta_2=0.95, epsilon=1e-6, clipnorm=0.5, {extra}
)"""
SAME_PROMPT = """generations_gemma_1b = []
duration_gemma_1b_ns = 0
for prompt in generation.PROMPTS:
    generations_gemma_1b.append(generation.generate(gemma_1b, generation.PROMPTS[0], 5))"""

SUBMISSIONS = {
    "g75_correct": (LAB5, submission(LAB5), lab5_points()),
    "g75_float32": (
        LAB5,
        submission(
            LAB5, {"load_bfloat16": "model = keras_hub.models.Gemma3CausalLM.from_preset(PRESET)"}
        ),
        lab5_points("check_bfloat16"),
    ),
    "g75_rank_8": (
        LAB5,
        submission(LAB5, {"enable_lora": "model.backbone.enable_lora(rank=8)"}),
        lab5_points("check_lora"),
    ),
    "g75_lr_from_7_6": (
        LAB5,
        submission(LAB5, {"optimizer": OPTIMIZER_7_5.format(lr="1e-4")}),
        lab5_points("check_optimizer"),
    ),
    "g75_untouched": (LAB5, student_notebook(LAB5), {task: 0 for task in LAB5_TASKS}),
    "g76_correct": (LAB6, submission(LAB6), {"check_optimizer_accumulation": 2}),
    "g76_no_accumulation": (
        LAB6,
        submission(
            LAB6, {"optimizer_accumulation": OPTIMIZER_7_6.format(extra="learning_rate=8e-4")}
        ),
        {"check_optimizer_accumulation": 0},
    ),
    "g71_correct": (
        LAB1,
        submission(LAB1),
        {"check_generations_gemma_1b": 2, "check_generations_gemma_4b": 2},
    ),
    "g71_same_prompt_everywhere": (
        LAB1,
        submission(LAB1, {"generations_gemma_1b": SAME_PROMPT}),
        {"check_generations_gemma_1b": 0, "check_generations_gemma_4b": 2},
    ),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return grade_all(
        tmp_path_factory.mktemp("grading_gpu"),
        tmp_path_factory.mktemp("submissions_gpu"),
        SUBMISSIONS,
        {"COURSE7_TINY": None},  # оценивание само включает крошечный режим
    )


def test_gpu_labs_get_the_expected_points(graded):
    assert_expected_points(graded, SUBMISSIONS)


def test_gpu_reports_name_the_mistake_in_russian(graded):
    assert "float32" in report(graded, "g75_float32", LAB5)
    assert "8" in report(graded, "g75_rank_8", LAB5) and "ранг" in report(
        graded, "g75_rank_8", LAB5
    )
    assert "gradient_accumulation_steps" in report(graded, "g76_no_accumulation", LAB6)
    for student, (lab, _, _) in SUBMISSIONS.items():
        html = report(graded, student, lab)
        assert "HIDDEN TESTS" not in html and "Traceback (most recent call last)" not in html

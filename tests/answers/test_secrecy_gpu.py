"""Проверки GPU-лабораторных 7.3, 7.5 и 7.6 не выдают верных ответов (issue 42, п. 1).

Каждая проверка с баллами запускается на нетронутой заготовке и на типичных неверных ответах;
в её вердикте не должно быть верного значения ни в одной записи (8e-4, 0.0008, «= 8», …): вердикт
называет ошибку и правило, а не ответ. Вердикты вызываются напрямую (без keras): наблюдение —
то, что сняла бы проверка в тетрадке.
"""

from __future__ import annotations

import re

import pytest

from feedback.answers import accumulation, precision, wall
from feedback.engine.values import describe

ADAMW = {
    "class": "AdamW",
    "adamw": True,
    "learning_rate": 8e-4,
    "weight_decay": 0.01,
    "beta_1": 0.9,
    "beta_2": 0.95,
    "epsilon": 1e-6,
    "clipnorm": 0.5,
    "global_clipnorm": None,
    "clipvalue": None,
    "gradient_accumulation_steps": 8,
}
#: Заготовка задания 1 в 7.6: AdamW без скорости (Keras по умолчанию) и без накопления.
UNTOUCHED_7_6 = {**ADAMW, "learning_rate": 1e-3, "gradient_accumulation_steps": None}


def facts(**changes):
    return {**ADAMW, **changes}


def forms(number: float) -> list[str]:
    """Как число может появиться в тексте: 8e-4, 8e-04, 0.0008, 8 · 10⁻⁴, 8,0 · 10⁻⁴."""
    mantissa, exponent = f"{number:e}".split("e")
    m = mantissa.rstrip("0").rstrip(".")
    e = int(exponent)
    sup = str(e).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return [f"{m}e{e}", f"{m}e{e:03d}", f"{number:.10f}".rstrip("0"), f"{m} · 10{sup}"]


def steps_leaks(steps: int, text: str) -> list[str]:
    patterns = [rf"gradient_accumulation_steps\s*=\s*{steps}\b", rf"=\s*{steps}\b(?![,.]\d)"]
    return [p for p in patterns if re.search(p, text)]


# Задание → (верные steps, верная скорость) и типичные неверные ответы.
TASK_MISTAKES = {
    "t4": [
        UNTOUCHED_7_6,
        facts(gradient_accumulation_steps=None),
        facts(gradient_accumulation_steps=2),
        facts(gradient_accumulation_steps=4),
        facts(learning_rate=1e-4),
        facts(learning_rate=2e-4),
        facts(learning_rate=4e-4),
        facts(learning_rate=5e-5),
        facts(learning_rate=1e-4 * 8**0.5),
        facts(learning_rate=1.25e-5),
        facts(learning_rate=8e-5),
        facts(learning_rate=8e-3),
        facts(learning_rate="schedule"),
        facts(epsilon=1e-7, clipnorm=None),
    ],
    "32gb": [
        UNTOUCHED_7_6,
        facts(gradient_accumulation_steps=None),
        facts(gradient_accumulation_steps=8),
        facts(gradient_accumulation_steps=4),
        facts(gradient_accumulation_steps=2, learning_rate=2e-4),
        facts(gradient_accumulation_steps=2, learning_rate=4e-4),
        facts(gradient_accumulation_steps=2, learning_rate=1e-4),
        facts(gradient_accumulation_steps=2, learning_rate=8e-5),
    ],
    "lab_7_5": [
        {**UNTOUCHED_7_6, "epsilon": 1e-7, "beta_2": 0.999, "clipnorm": None},
        facts(learning_rate=5e-5, gradient_accumulation_steps=None, epsilon=1e-7),
        facts(learning_rate=5e-5, gradient_accumulation_steps=None, epsilon=1e-5),
        facts(learning_rate=5e-5, gradient_accumulation_steps=None, epsilon=1e-8),
    ],
}


@pytest.mark.parametrize("task", list(TASK_MISTAKES))
def test_optimizer_checks_name_the_mistake_not_the_answer(task):
    steps, learning_rate = accumulation.TASKS[task]
    hidden = forms(learning_rate) if task != "lab_7_5" else forms(1e-6)  # в 7.5 ε выводят сами
    for wrong in TASK_MISTAKES[task]:
        result = accumulation.judge_optimizer(wrong, task=task)
        assert not result.passed, wrong
        text = result.message
        assert not [f for f in hidden if re.search(rf"(?<![\d.]){re.escape(f)}", text)], text
        assert "ожидалось" not in text.lower(), text
        if steps:
            assert not steps_leaks(steps, text), (wrong, text)


def test_the_leak_detector_sees_the_old_giveaways():
    old = "learning_rate: ожидалось 8e-4. Добавьте gradient_accumulation_steps=8 в конструктор."
    assert [f for f in forms(8e-4) if re.search(rf"(?<![\d.]){re.escape(f)}", old)]
    assert steps_leaks(8, old)
    assert steps_leaks(2, "микробатчей нужно 8 ÷ 4 = 2.")
    assert not steps_leaks(2, "эффективный батч 2 × 4 = 8")


def test_right_optimizers_still_pass():
    for task, (steps, learning_rate) in accumulation.TASKS.items():
        right = facts(gradient_accumulation_steps=steps, learning_rate=learning_rate)
        assert accumulation.judge_optimizer(right, task=task).passed, task


WEIGHTS_7_3 = wall.weights_gib(wall.GEMMA_4B_PARAMS, 4)


@pytest.mark.parametrize("answer", [3.0, 15, 14.9, 7.23, 3_880_099_328 * 4, 15.52, 115.6])
def test_7_3_weights_check_does_not_name_the_answer(answer):
    result = wall.judge_weights_memory(describe(answer))
    assert not result.passed
    for shown in ("14,45", "14,5", "14.45", "14.5"):
        assert shown not in result.message, result.message


def test_7_3_untouched_answer_names_no_number():
    with pytest.raises(Exception) as error:
        wall.judge_weights_memory(describe(Ellipsis))
    assert "14" not in str(error.value)


BUDGET_WRONG = [
    {"float32": 3.0, "float16": 7.23, "bfloat16": 7.23},
    {"float32": 15.52, "float16": 7.76, "bfloat16": 7.76},
    {"float32": 14.9, "float16": 7.45, "bfloat16": 7.45},
    {"float32": 0.26, "float16": 7.02, "bfloat16": 7.02},
    {"float32": 14.45, "float16": 14.45, "bfloat16": 14.45},
]


@pytest.mark.parametrize("answer", BUDGET_WRONG)
def test_7_5_budget_check_does_not_name_the_answers(answer):
    result = precision.judge_weights_budget(describe(answer))
    assert not result.passed
    for dtype, got in answer.items():
        right = precision.weights_gib(precision.BUDGET_PARAMS, precision.BUDGET_BYTES[dtype])
        if abs(got - right) / right < precision.BUDGET_REL_TOL:
            continue  # верное значение учащегося можно повторить
        for shown in {f"{right:.2f}".replace(".", ","), f"{right:.1f}".replace(".", ",")}:
            assert f"{dtype}: ожидалось" not in result.message
            assert f"{shown} ГиБ" not in result.message.replace("\u00a0", " "), (shown, result)


@pytest.mark.parametrize("choice", ["float32", "float16", "mixed_bfloat16", "float64", "fp16"])
def test_7_5_dtype_check_does_not_name_bfloat16(choice):
    result = precision.judge_weights_dtype(describe(choice))
    assert not result.passed
    assert '"bfloat16"' not in result.message and "— bfloat16" not in result.message
    assert not re.search(r"(?<!mixed_)\bbfloat16\b", result.message), result.message


def test_check_calls_in_the_notebooks_name_the_task_not_the_answer():
    """Вызов проверки виден учащемуся: ``steps=2`` в нём выдал бы ответ задания 2."""
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "notebooks"
    for lab in ("lab_7_5_bfloat16_lora", "lab_7_6_gradient_accumulation"):
        notebook = json.loads((root / lab / f"{lab}.ipynb").read_text(encoding="utf-8"))
        calls = [
            "".join(cell["source"])
            for cell in notebook["cells"]
            if "check_optimizer(" in "".join(cell["source"])
        ]
        assert calls, lab
        for call in calls:
            assert "task=" in call and "steps=" not in call and "learning_rate" not in call

"""Содержание лабораторных: ответы не над вопросами, числа в тексте — из расчёта и одни на курс.

Ревизия содержания (issue 29) нашла разборы прямо под вопросами, расходящиеся между
лабораторными доли памяти JAX и бюджеты T4, оценки компилятора, названные как замер, и
порядок данных, в котором шаг оптимизатора усреднял примеры одной темы. Эти тесты читают
тетрадки как текст (исходные и учащихся) и выполняют только ячейку подготовки данных.
"""

from __future__ import annotations

import ast
import itertools
import json
import random
import re
from types import SimpleNamespace

import pytest

from feedback import measured, precision, qa_data
from feedback.gpu.check import CONFIGS

from notebook_runner import ROOT

LABS = sorted(path.name for path in (ROOT / "solutions").iterdir() if path.is_dir())
FOLDERS = ("solutions", "notebooks")
SPACES = re.compile(r"[ \u00a0\u202f]+")


def cells(lab: str, folder: str = "solutions") -> list[dict]:
    path = ROOT / folder / lab / f"{lab}.ipynb"
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def text(cell: dict) -> str:
    """Текст ячейки с обычными пробелами вместо неразрывных."""
    return SPACES.sub(" ", "".join(cell["source"]))


def lab_named(number: str) -> str:
    return next(lab for lab in LABS if lab.startswith(f"lab_{number.replace('.', '_')}_"))


def grade_id(cell: dict) -> str | None:
    return cell["metadata"].get("nbgrader", {}).get("grade_id")


# --------------------------------------------------------------------------- разборы

WORKED = re.compile(r"Разбор (вопроса|задания) (\d+)")
FOLDED = re.compile(
    r"^<details><summary>Разбор (?:вопроса|задания) \d+ — откройте, когда ответите</summary>\n"
    r".+\n</details>$",
    re.S,
)


def worked_answers(lab: str, folder: str) -> list[tuple[int, str, str]]:
    """Разборы лабораторной: (номер ячейки, «вопроса» или «задания», номер)."""
    found = []
    for index, cell in enumerate(cells(lab, folder)):
        if cell["cell_type"] == "markdown":
            found += [(index, kind, number) for kind, number in WORKED.findall(text(cell))]
    return found


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_worked_answer_is_folded_below_the_learners_answer(folder):
    """Разбор спрятан под <details> и стоит после ответа учащегося (issue 29, п. 1)."""
    counts = {}
    for lab in LABS:
        lab_cells = cells(lab, folder)
        for index, kind, number in worked_answers(lab, folder):
            cell = text(lab_cells[index]).strip()
            assert FOLDED.match(cell), f"{lab}[{index}]: разбор не спрятан:\n{cell[:200]}"
            if kind == "вопроса":  # вопрос, под ним ответ учащегося, разбор — ниже
                question = next(
                    i
                    for i, c in enumerate(lab_cells)
                    if text(c).startswith(f"**Вопрос {number}.**")
                )
                answer = question + 1
                assert lab_cells[answer]["metadata"]["nbgrader"]["solution"], lab
            else:  # задание, его проверка, разбор — ниже проверки
                task = next(
                    i
                    for i, c in enumerate(lab_cells)
                    if re.match(rf"#+ Задание {number}\.", text(c))
                )
                answer = next(
                    i
                    for i, c in enumerate(lab_cells)
                    if i > task and c["metadata"].get("nbgrader", {}).get("grade")
                )
            assert index > answer, f"{lab}: разбор {kind} {number} над ответом"
            counts[lab] = counts.get(lab, 0) + 1
    assert counts == {
        lab_named("7.1"): 1,
        lab_named("7.4"): 3,
        lab_named("7.5"): 2,
        lab_named("7.6"): 2,
    }


def test_the_folded_answer_detector_rejects_an_open_one():
    assert not FOLDED.match("**Разбор вопроса 1.** Чтобы выдать каждый следующий токен…")
    assert FOLDED.match(
        "<details><summary>Разбор вопроса 1 — откройте, когда ответите</summary>\n\nТекст.\n"
        "</details>"
    )


# --------------------------------------------------------------------------- баллы


def lab_points(lab: str) -> float:
    """Максимум лабораторной: баллы всех ячеек nbgrader с оценкой (проверки и ответы)."""
    return sum(
        cell["metadata"].get("nbgrader", {}).get("points", 0)
        for cell in cells(lab, "notebooks")
        if cell["metadata"].get("nbgrader", {}).get("grade")
    )


def test_teaching_guide_names_each_labs_maximum():
    """Максимум оценки в Moodle из docs/teaching.md — это баллы тетрадки (issue 29: 7.5, 7.6)."""
    guide = SPACES.sub(" ", (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8"))
    listed = re.search(r"равную баллам\s+лабораторной: ((?:7\.\d — \d+(?:, | \())+)", guide)
    named = dict(re.findall(r"(7\.\d) — (\d+)", listed[1]))
    assert {number: int(points) for number, points in named.items()} == {
        lab[4:7].replace("_", "."): lab_points(lab) for lab in LABS
    }


# --------------------------------------------------------------------------- память


def setup_fraction(lab: str) -> float:
    """Доля памяти, которую ячейка подготовки отдаёт JAX (XLA_PYTHON_CLIENT_MEM_FRACTION)."""
    for cell in cells(lab):
        found = re.search(r'XLA_PYTHON_CLIENT_MEM_FRACTION"\] = "([\d.]+)"', text(cell))
        if found and cell["cell_type"] == "code":
            return float(found[1])
    raise AssertionError(f"{lab}: доля памяти JAX не задана")


def test_7_1_and_7_3_give_jax_the_same_share_of_a_t4_and_say_so():
    """Issue 29, п. 13: 7.1 не задавала долю (JAX брал 75 %), а 7.3 говорила о 90 %."""
    first, wall = lab_named("7.1"), lab_named("7.3")
    fraction = setup_fraction(first)
    assert fraction == setup_fraction(wall)
    t4_gib = 15  # 15 360 МиБ, которые T4 отдаёт программам
    share = f"{fraction * 100:.0f} % — около {fraction * t4_gib:.1f} ГиБ".replace(".", ",")
    for lab in (first, wall):
        assert any(share in text(cell) for cell in cells(lab)), (lab, share)


def assigned(lab: str, name: str) -> object:
    """Значение константы ``name = …`` из ячейки кода лабораторной (выражение из литералов)."""
    for cell in cells(lab):
        if cell["cell_type"] != "code":
            continue
        for node in ast.walk(ast.parse("".join(cell["source"]))):
            if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == name for target in node.targets
            ):
                return eval(compile(ast.Expression(node.value), name, "eval"), {})  # литералы
    raise AssertionError(f"{lab}: нет {name}")


def test_one_t4_budget_in_7_5_and_7_6_and_the_measured_overhead():
    """Issue 29, п. 14; issue 40: линия T4 на графике 7.6 — тот же бюджет, что в 7.5, а память
    шага сверх весов в 7.5 — из записи замеров, а не оценка компилятора."""
    lora, accumulation = lab_named("7.5"), lab_named("7.6")
    assert assigned(lora, "T4_USABLE_GIB") == assigned(accumulation, "T4_USABLE_GIB")
    record = measured.load_record()
    overhead = record.row("b1_t4").peak_gib - record.row("w16_t4").peak_gib
    assert precision.training_overhead_gib("gemma3_4b_text") == pytest.approx(overhead)
    shown = f"{overhead:.2f}".replace(".", ",")
    assert any(shown in text(cell) for cell in cells(lora)), shown


#: Прежние оценки компилятора XLA на процессоре (issue 40: неверны) и их константы.
ESTIMATES = re.compile(r"\b(?:11,5|26|4,3)\s?ГиБ|XLA_STEP_GIB|TRAINING_STEP_GIB|оценке компилятора")


@pytest.mark.parametrize("number", ["7.3", "7.5", "7.6"])
def test_the_wrong_compiler_estimates_are_gone(number):
    mentions = [cell for cell in cells(lab_named(number)) if ESTIMATES.search(text(cell))]
    assert not mentions, [text(cell)[:200] for cell in mentions]


def test_kv_cache_figure_of_7_4_follows_from_the_gemma_4b_config():
    """Issue 29, п. 11: при инференсе — KV-кэш, ≈ 136 КиБ на токен у Gemma-4B в bfloat16."""
    config = CONFIGS["4b"]
    per_token = 2 * config["num_layers"] * config["num_key_value_heads"] * config["head_dim"] * 2
    batch = 8 * 1024 * per_token / 1024**3  # батч лабораторной: 8 примеров по 1024 токена
    memory = " ".join(text(cell) for cell in cells(lab_named("7.4")))
    assert f"≈ {per_token / 1024:.0f} КиБ на токен" in memory
    assert f"около {batch:.2f} ГиБ".replace(".", ",") in memory
    assert f"{config['num_layers']} слоя · {config['num_key_value_heads']} головы" in memory


# --------------------------------------------------------------------------- данные


def data_cell(lab: str) -> str:
    return next(
        "".join(cell["source"])
        for cell in cells(lab)
        if cell["cell_type"] == "code" and "qa_data.load_qa()" in "".join(cell["source"])
    )


def prepared_prompts(lab: str, rows: list[dict]) -> list[str]:
    """Запросы, которые ячейка подготовки данных лабораторной отдаст model.fit."""
    namespace = {
        "random": random,
        "qa_data": SimpleNamespace(load_qa=lambda: [dict(row) for row in rows]),
        "runtime": SimpleNamespace(choose_preset=lambda name: name),
        "print": lambda *args, **kwargs: None,
        "display": lambda *args, **kwargs: None,
    }
    exec(compile(data_cell(lab), lab, "exec"), namespace)  # код курса, без модели и сети
    return namespace["data"]["prompts"]


def same_topic_neighbours(prompts: list[str], topic: dict[str, str]) -> int:
    return sum(topic[a] == topic[b] for a, b in itertools.pairwise(prompts))


@pytest.mark.parametrize("number", ["7.5", "7.6"])
def test_training_data_is_shuffled_once_with_the_course_seed(number):
    """Issue 29, п. 10: fit из keras-hub не перемешивает, а набор идёт группами по темам."""
    rows = qa_data.load_local_qa()
    topic = {qa_data.format_question(row["question"]): row["category"] for row in rows}
    in_file_order = [qa_data.format_question(row["question"]) for row in rows]
    expected = list(rows)
    random.Random(812).shuffle(expected)

    prompts = prepared_prompts(lab_named(number), rows)

    assert prompts == [qa_data.format_question(row["question"]) for row in expected]
    assert same_topic_neighbours(prompts, topic) < same_topic_neighbours(in_file_order, topic) / 3


def test_7_5_and_7_6_train_on_the_same_order():
    rows = qa_data.load_local_qa()
    assert prepared_prompts(lab_named("7.5"), rows) == prepared_prompts(lab_named("7.6"), rows)


# --------------------------------------------------------------------------- термины


def test_7_6_defines_the_micro_step_against_the_optimizer_step_once():
    """Issue 29, п. 21; issue 40: «микрошаг» — проход по одному микробатчу, «шаг оптимизатора» —
    одно обновление весов; оба определены один раз, в задании, которое ими пользуется, а «шаг
    обучения» (его легко спутать со скоростью обучения) в 7.6 не встречается."""
    flat = [re.sub(r"\s+", " ", text(cell)) for cell in cells(lab_named("7.6"))]
    task = next(i for i, cell in enumerate(flat) if "## Задание 1." in cell)
    definitions = {
        "**микрошагом**": "проход по одному микробатчу назовём **микрошагом**",
        "**шагом оптимизатора**": "одно обновление весов — **шагом оптимизатора**",
    }
    for term, definition in definitions.items():
        assert [i for i, cell in enumerate(flat) if term in cell] == [task], term
        assert definition in flat[task]
    assert not [cell for cell in flat if re.search(r"шаг\w* обучения", cell)]

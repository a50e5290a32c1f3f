"""Проверки лабораторной 7.2 через публичный API."""

import numpy as np
import pytest

from feedback import CheckFailed, flops
from feedback.answers.flops import training_flops

from bad_functions import BAD_FUNCTIONS

SPEC_FLOPS = {  # SPEC.md, таблица задания 2
    "BERT-Base": 2.178e18,
    "T5-Large": 4.62e21,
    "Gemma-1B (Africa Galore)": 1.8e14,
    "PaLM": 2.527e24,
}


def correct(param_count, num_tokens):
    return 6 * param_count * num_tokens


def table(**overrides):
    rows = [
        {"Scenario": name, "Parameters": p, "Tokens": n, "FLOPs": correct(p, n)}
        for name, p, n in flops.SCENARIOS
    ]
    for row in rows:
        if row["Scenario"] in overrides:
            row["FLOPs"] = overrides[row["Scenario"]]
    return rows


def test_reference_matches_spec_table():
    for name, p, n in flops.SCENARIOS:  # в SPEC.md числа округлены
        assert training_flops(p, n) == pytest.approx(SPEC_FLOPS[name], rel=1e-3)


@pytest.mark.parametrize(
    "fn",
    [
        correct,
        lambda p, n: int(6 * p * n),
        lambda p, n: np.float64(6) * p * n,
        lambda p, n: np.float32(6 * p * n),
        lambda p, n: np.array(6 * p * n),
        lambda p, n: 2 * p * n + 4 * p * n,
    ],
)
def test_correct_variants_pass(fn):
    result = flops.check_compute_num_flops(fn)
    assert result, result.message


@pytest.mark.parametrize(
    ("fn", "hint"),
    [
        (lambda p, n: 2 * p * n, "только прямой проход"),
        (lambda p, n: 4 * p * n, "только обратный проход"),
        (lambda p, n: p * n, "не хватает множителя 6"),
        (lambda p, n: 6 * (p + n), "перемножить"),
    ],
)
def test_known_mistakes_get_their_hint(fn, hint):
    result = flops.check_compute_num_flops(fn)
    assert not result
    assert hint in result.message
    assert "Ожидалось" not in result.message and "1,8·10¹⁴" not in result.message
    assert "Получено:" in result.message
    assert "Случай: param_count = 1 млрд, num_tokens = 30\u202f000" in result.message


def test_hard_coded_lab_answer_fails():
    result = flops.check_compute_num_flops(lambda p, n: 1.8e14)
    assert not result
    assert "110 млн" in result.message  # назван второй, не лабораторный случай


@pytest.mark.parametrize(("fn", "verdict"), BAD_FUNCTIONS)
def test_bad_functions_get_a_russian_verdict(fn, verdict):
    result = flops.check_compute_num_flops(fn)
    assert not result
    assert verdict in result.message
    assert "Traceback" not in result.message


@pytest.mark.parametrize(("fn", "verdict"), BAD_FUNCTIONS)
def test_strict_mode_turns_every_failure_into_check_failed(monkeypatch, fn, verdict):
    monkeypatch.setenv("FEEDBACK_STRICT", "1")
    with pytest.raises(CheckFailed, match=verdict):
        flops.check_compute_num_flops(fn)


def test_failure_inside_our_helpers_is_a_verdict_too(monkeypatch):
    def broken(*args, **kwargs):
        raise RuntimeError("сломалось")

    monkeypatch.setattr("feedback.engine.comparing.format_pair", broken)
    result = flops.check_compute_num_flops(lambda p, n: 2 * p * n)
    assert not result
    assert "проверка не смогла завершиться" in result.message


def test_full_and_rounded_tables_pass():
    assert flops.check_final_results(table())
    assert flops.check_final_results(table(**{"BERT-Base": 2.18e18, "PaLM": 2.53e24}))


def test_table_as_dataframe_passes():
    pandas = pytest.importorskip("pandas")
    assert flops.check_final_results(pandas.DataFrame(table()))


def test_duplicated_and_missing_scenarios_fail():
    rows = table()
    rows[3] = dict(rows[0])
    result = flops.check_final_results(rows)
    assert not result
    assert "«BERT-Base» встречается 2 раза" in result.message
    assert "Нет сценария «PaLM»" in result.message


def test_ellipsis_left_in_table_is_named():
    result = flops.check_final_results(table(**{"T5-Large": ...}))
    assert not result
    assert "«T5-Large»: вместо FLOPs осталось «…»" in result.message


def test_bert_multiplied_by_its_40_passes_gets_the_footnote_hint():
    result = flops.check_final_results(table(**{"BERT-Base": 40 * 6 * 110e6 * 3.3e9}))
    assert not result.passed and result.mistake == "flops.table_all_bert_passes"
    assert "40 — число проходов BERT" in result.message and "одна эпоха" in result.message


@pytest.mark.parametrize("factor", [10, 0.1])
def test_an_exponent_slip_in_the_table_is_named(factor):
    result = flops.check_final_results(table(**{"T5-Large": factor * 6 * 770e6 * 1e12}))
    assert not result.passed and result.mistake == "flops.table_exponent_slip"
    assert "ровно в 10 раз" in result.message and "показателе степени" in result.message


def test_four_p_n_hint_names_the_lora_box_too():
    result = flops.check_final_results(table(**{"Gemma-1B (Africa Galore)": 4 * 1e9 * 30e3}))
    assert result.mistake == "flops.backward_only"
    assert "оценку для LoRA" in result.message and "обучение полное" in result.message


def test_wrong_flops_in_table_get_hint():
    result = flops.check_final_results(table(PaLM=2 * 540e9 * 780e9))
    assert "только прямой проход" in result.message
    assert "«PaLM», FLOPs" in result.message


def computed_by(fn):
    """Таблица, которую учащийся заполнил своей функцией (решение задания 2)."""
    rows = table()
    for row in rows:
        row["FLOPs"] = fn(row["Parameters"], row["Tokens"])
    return rows


def forward_only(param_count, num_tokens):
    return 2 * param_count * num_tokens


def test_a_table_from_the_wrong_function_is_one_problem_pointing_to_task_1():
    result = flops.check_final_results(computed_by(forward_only), forward_only)
    assert not result.passed and result.mistake == "flops.forward_only"
    assert result.headline == "в таблице одна ошибка."
    [problem] = result.details
    assert "во всех четырёх строках" in problem and "задании 1" in problem
    assert problem.count("Подсказка:") == 1 and "только прямой проход" in problem
    # Без функции — по подсказке в каждой из четырёх строк, как раньше.
    alone = flops.check_final_results(computed_by(forward_only))
    assert alone.message.count("только прямой проход") == 4 and "задании 1" not in alone.message


def test_an_unknown_wrong_function_is_named_once_without_a_hint():
    def squared(param_count, num_tokens):
        return 6 * param_count * num_tokens**2

    result = flops.check_final_results(computed_by(squared), squared)
    assert not result.passed and result.mistake == "unknown"
    [problem] = result.details
    assert "те же, что даёт ваша функция compute_num_flops" in problem
    assert "Подсказка" not in problem


def test_rows_typed_by_hand_keep_their_own_hints():
    rows = computed_by(forward_only)
    rows[3]["FLOPs"] = 4 * 540e9 * 780e9  # PaLM вписан руками, и неверно по-другому
    result = flops.check_final_results(rows, forward_only)
    assert result.headline == "ошибок в таблице: 2."
    first, second = result.details
    assert "«BERT-Base», «T5-Large», «Gemma-1B (Africa Galore)»" in first and "PaLM" not in first
    assert second.startswith("«PaLM», FLOPs:") and "оценку для LoRA" in second


def test_a_right_table_passes_whatever_the_function():
    assert flops.check_final_results(table(), forward_only)


def test_a_right_function_with_a_wrong_row_gets_the_row_hint():
    result = flops.check_final_results(table(PaLM=2 * 540e9 * 780e9), correct)
    assert "«PaLM», FLOPs" in result.message and "задании 1" not in result.message


@pytest.mark.parametrize("fn", [..., None, "compute_num_flops", BAD_FUNCTIONS[0][0]])
def test_an_unusable_function_leaves_the_table_check_as_it_was(fn):
    result = flops.check_final_results(computed_by(forward_only), fn)
    assert result.message.count("только прямой проход") == 4


def test_the_table_from_the_wrong_function_fails_the_cell_in_strict_mode(monkeypatch):
    monkeypatch.setenv("FEEDBACK_STRICT", "1")
    with pytest.raises(CheckFailed, match="задании 1"):
        flops.check_final_results(computed_by(forward_only), forward_only)


@pytest.mark.parametrize(
    ("rows", "verdict"),
    [
        (..., "ещё не заполнена"),
        (None, "ещё не заполнена"),
        ([], "пуста"),
        ("BERT", "список словарей"),
        ([("BERT-Base", 1, 2, 3)], "не словарь"),
        ([{"Scenario": "BERT-Base"}], "нет ключей"),
    ],
)
def test_malformed_tables_get_a_verdict(rows, verdict):
    result = flops.check_final_results(rows)
    assert not result
    assert verdict in result.message


def test_unknown_scenario_is_named():
    rows = table()
    rows[0]["Scenario"] = "GPT-3"  # ни на один сценарий задания не похоже
    message = flops.check_final_results(rows).message
    assert "Неизвестный сценарий «GPT-3»" in message
    assert "Нет сценария «BERT-Base»" in message and "Похоже" not in message


@pytest.mark.parametrize(
    ("index", "written"),
    [
        (2, "Gemma-1B"),  # без «(Africa Galore)»
        (2, "gemma 1b africa galore"),
        (0, "BERT"),
        (0, "Bert base"),
        (1, "T5 large"),
        (3, "PaLM-540B"),
    ],
)
def test_a_renamed_scenario_is_one_problem_with_the_name_it_resembles(index, written):
    rows = table()
    expected = rows[index]["Scenario"]
    rows[index]["Scenario"] = written
    result = flops.check_final_results(rows)
    assert not result.passed
    assert result.headline == "в таблице одна ошибка."
    assert f"Похоже, «{written}» — это «{expected}»: переименуйте" in result.message
    assert "Нет сценария" not in result.message and "Неизвестный сценарий" not in result.message


def test_each_unknown_name_is_paired_with_its_own_missing_scenario():
    rows = table()
    rows[0]["Scenario"], rows[3]["Scenario"] = "Palm", "bert-base"
    rows[1]["Scenario"] = "Llama"  # не похоже ни на один пропавший сценарий
    result = flops.check_final_results(rows)
    assert "Похоже, «bert-base» — это «BERT-Base»" in result.message
    assert "Похоже, «Palm» — это «PaLM»" in result.message
    assert "Нет сценария «T5-Large»" in result.message
    assert "Неизвестный сценарий «Llama»" in result.message
    assert result.headline == "ошибок в таблице: 4."


@pytest.mark.parametrize(
    ("parameters", "tokens"),
    [
        ("110e6", "3.3e9"),
        ("110 млн", "3,3 млрд"),  # так их печатает formatting.format_number
        (110_000_000, "3\u202f300\u202f000\u202f000"),
        ("сто десять миллионов", None),  # данные столбцы не оцениваются вовсе
    ],
)
def test_given_columns_may_be_strings_only_flops_are_graded(parameters, tokens):
    rows = table()
    rows[0]["Parameters"], rows[0]["Tokens"] = parameters, tokens
    result = flops.check_final_results(rows)
    assert result.passed, result.message


def test_changed_given_column_explains_wrong_flops():
    rows = table(**{"T5-Large": 6 * 77e6 * 1e12})
    rows[1]["Parameters"] = "77e6"
    message = flops.check_final_results(rows).message
    assert "«T5-Large», FLOPs: у вас 4,62·10²⁰ FLOPs — это меньше, чем 6·P·N" in message
    assert "4,62·10²¹" not in message
    assert "В столбце Parameters у вас 77 млн, а в задании 770 млн" in message


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        ("2.178e18", "в ячейке строка '2.178e18', а нужно число. Уберите кавычки"),
        ("много", "в ячейке строка 'много', а нужно число."),
        (None, "в ячейке None — впишите число"),
        (True, "в ячейке логическое значение True"),
        ([2.178e18], "в ячейке список, а нужно одно число"),
        (float("nan"), "в ячейке NaN"),
        (float("inf"), "в ячейке бесконечность"),
        (training_flops, "в ячейке объект типа function, а нужно число. Похоже"),
    ],
)
def test_a_bad_flops_cell_is_described_as_a_table_cell(value, phrase):
    result = flops.check_final_results(table(**{"BERT-Base": value}))
    assert not result.passed
    assert f"«BERT-Base», FLOPs: {phrase}" in result.message
    assert "функция вернула" not in result.message
    assert result.headline == "в таблице одна ошибка."


def test_several_problems_are_counted_in_agreement():
    result = flops.check_final_results(table(**{"BERT-Base": ..., "PaLM": ...}))
    assert result.headline == "ошибок в таблице: 2."


def test_hidden_cases_catch_a_function_tuned_to_the_visible_ones():
    visible = {
        tuple(case.values()): 6 * case["param_count"] * case["num_tokens"]
        for case in flops.FLOPS_CASES
    }

    def tuned(p, n):
        return visible.get((p, n), 0.0)

    assert flops.check_compute_num_flops(tuned)
    hidden = flops.check_compute_num_flops(tuned, cases=[(3e8, 2e10)])
    assert not hidden and "3·10⁸" not in hidden.message and "300 млн" in hidden.message
    assert flops.check_compute_num_flops(correct, cases=[(3e8, 2e10), (5, 7)])


def test_a_hanging_function_is_stopped_and_not_called_again(monkeypatch):
    import time

    monkeypatch.setattr("feedback.engine.calling.CALL_TIME_LIMIT", 0.3)
    calls = []

    def hangs(p, n):
        calls.append((p, n))
        while True:
            pass

    started = time.monotonic()
    result = flops.check_compute_num_flops(hangs)
    assert not result.passed and "не вернула ответ" in result.message
    assert len(calls) == 1 and time.monotonic() - started < 3


def test_the_teacher_sets_the_call_budget_through_the_kernel_environment(monkeypatch):
    import time

    monkeypatch.setenv("COURSE7_CALL_TIMEOUT", "0.2")

    def hangs(p, n):
        while True:
            pass

    started = time.monotonic()
    result = flops.check_compute_num_flops(hangs)
    assert not result.passed and "0,2" in result.message
    assert time.monotonic() - started < 2
    monkeypatch.setenv("COURSE7_CALL_TIMEOUT", "не число")
    from feedback.engine.calling import CALL_TIME_LIMIT, call_time_limit

    assert call_time_limit() == CALL_TIME_LIMIT


# --------------------------------------------------------------------------- задание 4: время


def seconds(num_flops, peak_flops_per_second, utilization):
    return num_flops / (peak_flops_per_second * utilization)


def test_training_seconds_passes():
    result = flops.check_training_seconds(seconds)
    assert result.passed, result.message


@pytest.mark.parametrize(
    ("fn", "mistake", "words"),
    [
        (lambda f, peak, u: f / peak, "flops.time_at_peak", "паспортный пик"),
        (lambda f, peak, u: f * u / peak, "flops.time_utilization_inverted", "в числителе"),
        (lambda f, peak, u: seconds(f, peak, u) / 3600, "flops.time_in_hours", "часы"),
    ],
)
def test_each_wrong_time_formula_gets_its_hint(fn, mistake, words):
    result = flops.check_training_seconds(fn)
    assert not result.passed and result.mistake == mistake
    assert words in result.message


def test_time_without_utilization_is_caught_on_the_neighbour_case():
    """Функция, которая не смотрит на utilization, но случайно верна на 40 %."""
    result = flops.check_training_seconds(lambda f, peak, u: f / (peak * 0.4))
    assert not result.passed
    assert "utilization" in result.message


@pytest.mark.parametrize(("fn", "verdict"), BAD_FUNCTIONS)
def test_bad_time_functions_get_a_russian_verdict(fn, verdict):
    result = flops.check_training_seconds(fn)
    assert not result.passed and verdict in result.message
    assert "Traceback" not in result.message


def test_the_graded_table_probe_never_calls_the_learners_function():
    """Зонд таблицы при оценивании не вызывает функцию задания 1: баллов за неё здесь нет, а
    чужой код внутри зонда мог бы подменить и его наблюдение (работа c72_fake_observation)."""
    from feedback.engine.probe import observation_payload

    called = []

    def learners_function(param_count, num_tokens):
        called.append((param_count, num_tokens))
        return 6 * param_count * num_tokens

    objects = lambda: ([], learners_function)  # noqa: E731
    observation_payload("gid", "flops.check_final_results", objects, "{}", "метка")
    assert called == []
    flops.FINAL_RESULTS.observe_envelope(objects, {})  # вне оценивания — для подсказки
    assert called

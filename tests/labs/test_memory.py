"""Проверки лабораторной 7.4 через публичный API."""

import numpy as np
import pytest

from feedback import CheckFailed, memory
from feedback.formatting import bytes_to_gb

from bad_functions import BAD_FUNCTIONS

GIB = 1024**3

CHECKS = {
    "param": (memory.check_calculate_param_memory, lambda p, b: bytes_to_gb(p * b)),
    "input": (memory.check_calculate_input_data_memory, lambda b, n, t: b * n * t / GIB),
    "gradient": (memory.check_calculate_gradient_memory, lambda p, b: p * b / GIB),
    "optimizer": (memory.check_calculate_optimizer_memory, lambda p, b: 2 * p * b / GIB),
    "activation": (
        memory.check_calculate_activation_memory,
        lambda b, n, layers, d, w: b * n * layers * d * w / GIB,
    ),
}


@pytest.mark.parametrize("name", CHECKS)
def test_correct_functions_pass(name):
    check, solution = CHECKS[name]
    assert check(solution), check(solution).message
    assert check(lambda *args: np.float64(solution(*args)))


@pytest.mark.parametrize("name", CHECKS)
@pytest.mark.parametrize(("fn", "verdict"), BAD_FUNCTIONS)
def test_bad_functions_get_a_verdict(name, fn, verdict):
    check, _ = CHECKS[name]
    result = check(fn)
    assert not result
    assert verdict in result.message


@pytest.mark.parametrize("name", CHECKS)
def test_strict_mode_raises(monkeypatch, name):
    monkeypatch.setenv("FEEDBACK_STRICT", "1")
    check, _ = CHECKS[name]
    with pytest.raises(CheckFailed):
        check(lambda *args: 0.0)


@pytest.mark.parametrize("name", CHECKS)
def test_unit_mistakes_get_hints(name):
    check, solution = CHECKS[name]
    as_bytes = check(lambda *args: solution(*args) * GIB)
    assert "вернула байты" in as_bytes.message
    as_gb = check(lambda *args: solution(*args) * GIB / 1e9)
    assert "10⁹" in as_gb.message
    as_mib = check(lambda *args: solution(*args) * 1024)
    assert "МиБ" in as_mib.message


def test_adam_counted_once_gets_hint():
    result = memory.check_calculate_optimizer_memory(lambda p, b: p * b / GIB)
    assert "два числа" in result.message
    assert "Получено: 14,9 ГиБ" in result.message and "меньше верного" in result.message
    assert "29,8" not in result.message  # верный объём не называется (issue 42)


def test_weights_added_to_optimizer_get_hint():
    result = memory.check_calculate_optimizer_memory(lambda p, b: 3 * p * b / GIB)
    assert "calculate_param_memory" in result.message


def test_gradient_counted_twice_gets_hint():
    result = memory.check_calculate_gradient_memory(lambda p, b: 2 * p * b / GIB)
    assert "одно число на каждый параметр" in result.message


def test_forgotten_bytes_factor_gets_hint():
    assert "bytes_per_param" in memory.check_calculate_param_memory(lambda p, b: p / GIB).message
    message = memory.check_calculate_input_data_memory(lambda b, n, t: b * n / GIB).message
    assert "bytes_per_token_id" in message


@pytest.mark.parametrize("missing", range(5))
def test_each_missing_activation_factor_is_named(missing):
    def fn(*args):
        product = 1
        for position, value in enumerate(args):
            if position != missing:
                product *= value
        return product / GIB

    result = memory.check_calculate_activation_memory(fn)
    assert not result
    assert f"не хватает множителя {memory.ACTIVATION_ARGS[missing]}" in result.message


def test_zero_input_memory_is_named_without_the_right_volume():
    result = memory.check_calculate_input_data_memory(lambda b, n, t: 0.0)
    assert "Получено: 0 ГиБ" in result.message and "меньше верного" in result.message
    assert "32\u202f768" not in result.message and "0,0000305" not in result.message


def test_hard_coded_lab_answer_fails():
    result = memory.check_calculate_param_memory(lambda p, b: 14.901161193847656)
    assert not result
    assert "bytes_per_param = 2" in result.message


@pytest.mark.parametrize("name", CHECKS)
def test_own_cases_are_used(name):
    check, solution = CHECKS[name]
    arity = solution.__code__.co_argcount
    case = tuple(range(3, 3 + arity))
    assert check(solution, cases=[case])
    result = check(lambda *args: 1.0, cases=[case])
    assert not result and "Случай: " in result.message


def test_a_function_reading_a_global_instead_of_its_argument_gets_a_hint():
    param_count_global = 4e9  # как PARAM_COUNT в тетрадке

    def calculate_param_memory(param_count, bytes_per_param):
        return param_count_global * bytes_per_param / 1024**3

    result = memory.check_calculate_param_memory(calculate_param_memory)
    assert not result.passed
    assert "не меняется, когда меняется param_count" in result.message
    assert "PARAM_COUNT" in result.message

    def calculate_gradient_memory(param_count, bytes_per_param):
        return param_count * 4 / 1024**3  # BYTES_PER_PARAMETER вместо аргумента

    result = memory.check_calculate_gradient_memory(calculate_gradient_memory)
    assert "BYTES_PER_PARAMETER" in result.message and "bytes_per_param" in result.message


def test_without_a_neighbouring_case_there_is_no_global_hint():
    result = memory.check_calculate_param_memory(lambda p, b: 1.0, cases=[(1e9, 2)])
    assert not result.passed and "глобальную" not in result.message


def test_a_function_reading_the_token_id_global_gets_a_hint_in_the_open_cases():
    bytes_per_token_id_global = 4  # как BYTES_PER_TOKEN_ID в тетрадке

    def calculate_input_data_memory(batch_size, max_length, bytes_per_token_id):
        return batch_size * max_length * bytes_per_token_id_global / 1024**3

    result = memory.check_calculate_input_data_memory(calculate_input_data_memory)
    assert not result.passed
    assert "не меняется, когда меняется bytes_per_token_id" in result.message
    assert "глобальную переменную BYTES_PER_TOKEN_ID" in result.message
    assert "BYTES_PER_PARAMETER" not in result.message


#: Константы лабораторной 7.4: функция, которая берёт их вместо аргументов.
LAB_CONSTANTS = {
    "batch_size": ("BATCH_SIZE", 8),
    "max_length": ("MAX_LENGTH", 1024),
    "num_layers": ("NUM_LAYERS", 32),
    "embedding_dim": ("EMBEDDING_DIM", 2560),
    "bytes_per_param": ("BYTES_PER_PARAMETER", 4),
}


@pytest.mark.parametrize("argument", memory.ACTIVATION_ARGS)
def test_each_activation_global_is_named_in_the_open_cases(argument):
    constant, value = LAB_CONSTANTS[argument]
    position = memory.ACTIVATION_ARGS.index(argument)

    def calculate_activation_memory(*args):
        args = list(args)
        args[position] = value  # глобальная переменная вместо аргумента
        product = 1
        for factor in args:
            product *= factor
        return product / GIB

    result = memory.check_calculate_activation_memory(calculate_activation_memory)
    assert not result.passed
    assert f"не меняется, когда меняется {argument}" in result.message
    assert f"глобальную переменную {constant}" in result.message


@pytest.mark.parametrize(
    ("argument", "constant", "value"),
    [("batch_size", "BATCH_SIZE", 8), ("max_length", "MAX_LENGTH", 1024)],
)
def test_each_input_global_is_named_in_the_open_cases(argument, constant, value):
    position = ("batch_size", "max_length", "bytes_per_token_id").index(argument)

    def calculate_input_data_memory(*args):
        args = list(args)
        args[position] = value
        return args[0] * args[1] * args[2] / GIB

    result = memory.check_calculate_input_data_memory(calculate_input_data_memory)
    assert f"глобальную переменную {constant}" in result.message


def test_constant_two_instead_of_bytes_per_token_id_is_named():
    result = memory.check_calculate_input_data_memory(lambda b, n, t: b * n * 2 / GIB)
    assert result.mistake == "memory.constant_bytes_per_token_id"
    assert "постоянное число 2" in result.message and "BYTES_PER_TOKEN_ID" not in result.message


def test_weights_in_bits_get_hint():
    result = memory.check_calculate_param_memory(lambda p, b: 8 * p * b / GIB)
    assert result.mistake == "memory.bits_not_bytes"
    assert "биты" in result.message


@pytest.mark.parametrize("digits", [None, 1])
def test_rounded_weights_get_hint(digits):
    result = memory.check_calculate_param_memory(lambda p, b: round(p * b / GIB, digits))
    assert result.mistake == "memory.rounded_result", result.message
    assert "без округления" in result.message


def test_weights_rounded_to_hundredths_pass_like_in_labs_7_3_and_7_5():
    """Одно правило допуска курса (1 %): round(…, 2) в ГиБ для весов принимается."""
    result = memory.check_calculate_param_memory(lambda p, b: round(p * b / GIB, 2))
    assert result.passed, result.message
    assert memory.PARAM_MEMORY.rel_tol == 0.01


def test_tiny_volume_rounded_to_hundredths_gets_the_rounding_hint():
    result = memory.check_calculate_input_data_memory(lambda b, n, t: round(b * n * t / GIB, 2))
    assert result.mistake == "memory.rounded_result", result.message
    assert "1 %" in result.message

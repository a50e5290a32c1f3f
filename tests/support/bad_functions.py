"""Набор «плохих» функций учащегося: каждая должна дать свой русский вердикт."""

import math

import numpy as np


def stub(*args):
    raise NotImplementedError("Добавьте сюда свой код")


def returns_ellipsis(*args):
    return ...


def returns_none(*args):
    pass


def returns_string(*args):
    return "14.9 GB"


def returns_list(*args):
    return [1.0, 2.0]


def returns_nan(*args):
    return math.nan


def returns_inf(*args):
    return math.inf


def returns_bool(*args):
    return True


def raises_key_error(*args):
    return {}["missing"]


def wrong_arity():
    return 1.0


def returns_array(*args):
    return np.array([1.0, 2.0, 3.0])


#: (функция, фрагмент ожидаемого вердикта)
BAD_FUNCTIONS = [
    (stub, "ещё не реализована"),
    (returns_ellipsis, "ещё не реализована"),
    (returns_none, "вернула None"),
    (returns_string, "вернула строку"),
    (returns_list, "вернула список"),
    (returns_nan, "NaN"),
    (returns_inf, "бесконечность"),
    (returns_bool, "логическое"),
    (raises_key_error, "ошибкой KeyError"),
    (wrong_arity, "не удалось вызвать"),
    (returns_array, "массив"),
    (..., "ещё не реализована"),
    (None, "ещё не реализована"),
    (42, "саму функцию"),
]

"""Ответ учащегося как данные: описание в JSON и восстановление для вердикта."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from feedback.engine.values import (
    MAX_TEXT,
    Opaque,
    describe,
    describe_error,
    lookalikes,
    revive,
    revive_error,
)


def through_json(value):
    return revive(json.loads(json.dumps(describe(value), allow_nan=False)))


@pytest.mark.parametrize(
    "value",
    [0, 7, -3, 2**70, 1.5, -0.0, 1e300, "текст", "", b"bytes", None, True, False, ...],
)
def test_plain_values_survive_json(value):
    revived = through_json(value)
    assert revived == value and type(revived) is type(value)


def test_special_floats_survive_json():
    assert math.isnan(through_json(math.nan))
    assert through_json(math.inf) == math.inf and through_json(-math.inf) == -math.inf


def test_numpy_scalars_and_single_element_arrays_become_numbers():
    assert through_json(np.float32(2.5)) == 2.5
    assert through_json(np.int64(3)) == 3
    assert through_json(np.array(4.0)) == 4.0
    assert through_json(np.array([[5.0]])) == 5.0
    assert through_json(np.bool_(True)) is True


def test_big_arrays_keep_type_name_and_size():
    revived = through_json(np.zeros((2, 3)))
    assert type(revived).__name__ == "ndarray" and revived.size == 6


def test_containers_and_tables():
    value = {"a": [1, (2.5, "x")], "b": {"c": None}}
    assert through_json(value) == {"a": [1, (2.5, "x")], "b": {"c": None}}
    table = pd.DataFrame([{"Scenario": "PaLM", "FLOPs": 2.5e24}])
    assert through_json(table) == [{"Scenario": "PaLM", "FLOPs": 2.5e24}]
    assert through_json({1, 2}) == set()


def test_unknown_objects_keep_only_their_type_name():
    class Model:
        def __getattr__(self, name):
            raise RuntimeError("не трогайте меня")

    revived = through_json(Model())
    assert type(revived).__name__ == "Model"


def test_what_an_object_says_about_itself_is_ignored():
    class Liar(str):
        def __str__(self):
            return "42"

        def __len__(self):
            return 1

    assert through_json(Liar("настоящий текст")) == "настоящий текст"


def test_long_text_is_truncated():
    assert len(through_json("я" * (MAX_TEXT + 100))) == MAX_TEXT


@pytest.mark.parametrize(
    "junk", [None, 1, "x", [], {"t": "float"}, {"t": "list", "items": 5}, {"t": "nope"}]
)
def test_damaged_descriptions_become_placeholders_not_errors(junk):
    assert isinstance(revive(junk), Opaque)


def test_errors_keep_name_message_and_builtin_kind():
    for error in (NotImplementedError("заглушка"), TypeError("f() takes 1 argument"), KeyError(1)):
        revived = revive_error(json.loads(json.dumps(describe_error(error))))
        assert isinstance(revived, type(error)) and str(revived) == str(error)

    class Custom(Exception):
        pass

    revived = revive_error(describe_error(Custom("своё")))
    assert type(revived).__name__ == "Custom" and str(revived) == "своё"


def test_learner_subclasses_of_numbers_are_reported_as_what_they_are():
    """Подкласс float с собственным __float__ не подделает число в наблюдении."""

    class Forged(float):
        def __float__(self):
            return 6e18

    class ForgedInt(int):
        def __int__(self):
            return 42

    assert describe(Forged(1.0)) == {"t": "object", "type": "Forged", "lookalike": "число"}
    assert describe(ForgedInt(1))["type"] == "ForgedInt"
    assert lookalikes({"ok": describe([1.0, Forged(1.0)])}) == ["Forged"]
    assert math.isnan(revive(describe(float("nan"))))
    assert describe(np.float64(2.5)) == {"t": "float", "v": 2.5}  # numpy — настоящее число
    assert describe(np.int64(7)) == {"t": "int", "v": 7}


def test_lookalike_arrays_and_tables_are_not_trusted():
    """Объект с item/shape/size или to_dict, написанный учащимся, — просто объект."""

    class ndarray:  # имя как у numpy, модуль — нет
        size, shape = 1, (1,)

        def item(self):
            return 6e18

    class DataFrame:
        def to_dict(self, orient):
            return [{"FLOPs": 6e18}]

    assert lookalikes(describe([ndarray(), DataFrame()])) == ["ndarray", "DataFrame"]
    assert lookalikes(describe([1, "a", np.ones(3), object()])) == []
    assert describe(pd.DataFrame([{"a": 1}]))["t"] == "dataframe"

"""Учебный режим: переменная COURSE7_TINY и решение choose_preset в этом процессе."""

import pytest

from feedback.gpu import tiny_mode


@pytest.fixture(autouse=True)
def _forget():
    tiny_mode.forget_choice()
    yield
    tiny_mode.forget_choice()


@pytest.mark.parametrize(
    ("value", "expected"),
    [("1", True), (" Yes ", True), ("0", False), ("off", False), ("", None), ("maybe", None)],
)
def test_setting_from_environment(value, expected):
    assert tiny_mode.tiny_setting({"COURSE7_TINY": value}) is expected


def test_remembered_choice_counts_only_without_the_variable():
    assert not tiny_mode.is_tiny_mode({})
    tiny_mode.remember_choice(True)
    assert tiny_mode.is_tiny_mode({})
    assert not tiny_mode.is_tiny_mode({"COURSE7_TINY": "0"})
    tiny_mode.forget_choice()
    assert not tiny_mode.is_tiny_mode({})

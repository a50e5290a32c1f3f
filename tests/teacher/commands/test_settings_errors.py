"""Команды make с неразборчивой переменной окружения: строка по-русски и код 2, а не трассировка.

Каждая команда сама читает настройки (``Settings.from_env``); ``JOBS=x`` или
``COURSE7_MEMORY_LIMIT=много`` — ввод преподавателя, и команда должна сказать, какая переменная
не так, ничего не начав.
"""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("command", ["export", "feedback", "summary", "formgrader", "hub"])
@pytest.mark.parametrize(("variable", "value"), [("JOBS", "x"), ("COURSE7_MEMORY_LIMIT", "много")])
def test_a_bad_variable_is_a_russian_line_and_exit_2(
    command, variable, value, monkeypatch, capsys, tmp_path
):
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(tmp_path / "work"))
    monkeypatch.setenv(variable, value)
    module = importlib.import_module(f"feedback.teacher.commands.{command}")
    args = ["--no-browser"] if command == "formgrader" else []
    assert module.main(args) == 2
    err = capsys.readouterr().err
    assert "Команда не запущена" in err and variable in err and "Traceback" not in err
    assert not (tmp_path / "work").exists()  # ничего не начато

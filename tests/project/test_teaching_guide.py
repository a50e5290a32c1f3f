"""docs/teaching.md: каждая команда ``make`` из руководства преподавателя есть в Makefile.

Руководство показывает каждый шаг командой, которую преподаватель набирает в свежей копии
репозитория; цель или переменная, которой нет в Makefile, — шаг, который не сработает.
"""

from __future__ import annotations

import re

from feedback.settings import VARIABLES

from notebook_runner import ROOT

GUIDE = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")
#: ``make цель`` и переменные после неё: ``make grade SUBMISSIONS=… ROSTER=…``.
COMMAND = re.compile(r"\bmake ([a-z][a-z-]*)((?: [A-Z_]+=\S*)*)")
#: Строка ``export ИМЯ …`` Makefile (с продолжением через «\»).
EXPORTED = re.compile(r"^export ((?:[^\n]*\\\n)*[^\n]*)", re.M)


def test_every_make_command_of_the_guide_is_a_makefile_target():
    targets = set(re.findall(r"^([a-z][a-z-]*):", MAKEFILE, re.M))
    used = {match[1] for match in COMMAND.finditer(GUIDE)}
    assert {"env", "grade", "formgrader", "feedback", "export"} <= used
    assert used - targets == set()


def test_every_variable_the_guide_passes_to_make_is_read_by_the_makefile():
    passed = {
        variable
        for match in COMMAND.finditer(GUIDE)
        for variable in re.findall(r" ([A-Z_]+)=", match[2])
    }
    assert {"SUBMISSIONS", "ROSTER", "WORKSHEET", "LAB"} <= passed
    # Рецепт читает переменную текстом $(ИМЯ) или из окружения — "$$ИМЯ", ${ИМЯ:+…}; либо
    # Makefile передаёт её программе в окружении (export), а та читает её через реестр
    # feedback/settings.py (ALLOW_INSECURE_DASK).
    exported = set(re.findall(r"[A-Z_]+", " ".join(EXPORTED.findall(MAKEFILE))))
    unread = {
        name
        for name in passed
        if f"$({name})" not in MAKEFILE
        and not re.search(rf"\$\$\{{?{name}\b", MAKEFILE)
        and not (name in exported and name in VARIABLES)
    }
    assert unread == set()

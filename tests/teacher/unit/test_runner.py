"""Где выполняются единицы: места на ядрах процессора и работа, которая не вернулась."""

import json
from dataclasses import replace

import pytest

from feedback.teacher.core.results import Job
from feedback.teacher.core.settings import CPU_LIMITS
from feedback.teacher.unit import runner
from feedback.teacher.unit.runner import cpu_slots, run_isolated

from notebook_runner import ROOT


@pytest.mark.parametrize(
    ("workers", "cpus", "slots"),
    [
        (1, {0, 1}, [[]]),
        (2, {0, 1}, [[0], [1]]),
        (3, {0, 1}, [[0], [1], [0]]),
        (2, {0, 1, 2, 3}, [[0, 1], [2, 3]]),
    ],
)
def test_each_slot_gets_its_own_cpus(monkeypatch, workers, cpus, slots):
    monkeypatch.setattr(runner.os, "sched_getaffinity", lambda pid: cpus)
    assert cpu_slots(workers) == slots


def job(release: object, seconds: float = 30) -> Job:
    return Job(
        student="ivanov",
        lab="lab_7_2_training_flops",
        file="x.ipynb",
        release=release,
        upload={"cells": []},
        seed="s",
        sandbox="none",
        limits=replace(CPU_LIMITS, notebook_seconds=seconds, cell_seconds=seconds),
    )


RELEASE = json.loads(
    (ROOT / "notebooks/lab_7_2_training_flops/lab_7_2_training_flops.ipynb").read_text()
)


@pytest.mark.slow
def test_a_crashing_unit_becomes_an_unassessed_work(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE7_UNITS_DIR", str(tmp_path))
    broken = replace(job(RELEASE), allowed=None)  # задание без списка помощников: единица падает
    result = run_isolated(broken)
    assert result.problems[0].startswith("Работа не оценена: сбой оценивания")
    assert list(tmp_path.iterdir()) == []  # временная папка единицы убрана


@pytest.mark.slow
def test_a_unit_that_does_not_return_in_time_is_killed(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE7_UNITS_DIR", str(tmp_path))
    # Срок — ноль секунд: ни одна единица не успеет, как бы быстра ни была машина (с полусекундой
    # быстрая машина успевала выполнить пустую работу и тест падал).
    slow = job(RELEASE, seconds=0)
    result = run_isolated(replace(slow, limits=replace(slow.limits, unit_grace_seconds=0)))
    assert "не завершилось за 0 с" in result.problems[0]
    assert all(test.score == 0 for test in result.tests.values())

"""Когда наблюдению ячейки-теста не верят (:func:`feedback.teacher.unit.score.subversion`)."""

from __future__ import annotations

import nbformat
import pytest

from feedback.engine.probe import OBSERVATION_MIME, observation_digest
from feedback.teacher.unit.score import subversion

TOKEN = "метка-работы"
PAYLOAD = {
    "grade_id": "check_f",
    "check": "flops.check_compute_num_flops",
    "token": TOKEN,
    "observation": {"ok": {"calls": [{"t": "float", "v": 6.0}]}},
}


def cell_showing(payload: dict) -> nbformat.NotebookNode:
    cell = nbformat.v4.new_code_cell("проверка")
    cell.outputs = [
        nbformat.v4.new_output("display_data", data={OBSERVATION_MIME: payload, "text/plain": ""})
    ]
    return cell


def test_an_observation_the_probe_marked_with_its_digest_is_trusted():
    assert (
        subversion(cell_showing(PAYLOAD), "check_f", TOKEN, {observation_digest(PAYLOAD)}) is None
    )


def test_without_a_kernel_record_only_the_output_is_checked():
    assert subversion(cell_showing(PAYLOAD), "check_f", TOKEN, None) is None


@pytest.mark.parametrize(
    ("marks", "reason"),
    [
        (set(), "не отметился"),
        ({observation_digest(PAYLOAD), "ещё один"}, "отметился в записи ядра 2 раза"),
    ],
)
def test_a_missing_or_doubled_probe_mark_is_a_reason(marks, reason):
    assert reason in subversion(cell_showing(PAYLOAD), "check_f", TOKEN, marks)


def test_an_observation_rewritten_on_its_way_to_the_output_is_a_reason():
    """Зонд снял 6·P·N = 6, а в вывод дошло утроенное: подменили display по дороге."""
    rewritten = {**PAYLOAD, "observation": {"ok": {"calls": [{"t": "float", "v": 18.0}]}}}
    reason = subversion(cell_showing(rewritten), "check_f", TOKEN, {observation_digest(PAYLOAD)})
    assert "подменил вывод" in reason

"""Проверка как «наблюдение → вердикт»: конверты, имена, вытягивание случаев, зонд."""

import json
import random

import pytest

from feedback import flops, memory
from feedback.calling import LearnerProblem
from feedback.graded import GradedCheck, check_function, find, split_arguments
from feedback.probe import observation_payload
from feedback.result import passed


def test_names_from_test_cells_resolve_to_checks():
    assert find("flops.check_compute_num_flops") is flops.check_compute_num_flops.graded
    assert check_function("memory.check_calculate_param_memory") is (
        memory.check_calculate_param_memory
    )
    for bad in ("flops.training_flops", "os.check_x", "flops", "../x.check_y", "flops.check_nope"):
        with pytest.raises((KeyError, ModuleNotFoundError)):
            find(bad)


def test_objects_and_params_are_split_by_the_signature():
    import inspect

    signature = inspect.signature(flops.check_compute_num_flops)
    objects, params = split_arguments(signature, (len,), {"cases": [(1, 2)]})
    assert objects == (len,) and params == {"cases": [(1, 2)]}
    with pytest.raises(TypeError):
        split_arguments(signature, (), {})


def spec(observe=None, judge=None):
    return GradedCheck(
        "x.check_y",
        "заголовок",
        observe or (lambda obj: obj),
        judge or (lambda observation: passed("заголовок", str(observation))),
    )


def test_observation_envelopes_never_raise():
    def missing():
        return (undefined_name,)  # noqa: F821

    assert "problem" in spec().observe_envelope(missing, {})
    problem = spec(observe=lambda obj: (_ for _ in ()).throw(LearnerProblem("нет.", "совет")))
    assert problem.observe_envelope(lambda: (1,), {}) == {
        "problem": {"headline": "нет.", "details": ["совет"]}
    }
    broken = spec(observe=lambda obj: 1 / 0)
    assert "ZeroDivisionError" in broken.observe_envelope(lambda: (1,), {})["error"]


@pytest.mark.parametrize(
    "envelope",
    [None, 5, [], {}, {"ok": None}, {"problem": 3}, {"problem": {"details": 7}}, {"error": {}}],
)
def test_damaged_envelopes_fail_the_check_without_raising(envelope):
    check = flops.check_compute_num_flops.graded
    result = check.judge_envelope(envelope, {})
    assert not result.passed and result.headline


def test_a_problem_envelope_cannot_pass():
    result = spec().judge_envelope({"problem": {"headline": "всё верно", "details": []}}, {})
    assert not result.passed


def test_drawn_cases_are_per_seed_include_public_ones_and_vary_one_argument():
    check = memory.check_calculate_activation_memory.graded
    first = check.grading_params(random.Random("s:ivanov"), {})
    again = check.grading_params(random.Random("s:ivanov"), {})
    other = check.grading_params(random.Random("s:petrov"), {})
    assert first == again and first != other
    public = [list(case.values()) for case in memory.ACTIVATION_CASES]
    assert first["cases"][: len(public)] == public
    drawn = first["cases"][len(public) :]
    for base, neighbour in zip(drawn[::2], drawn[1::2], strict=True):
        assert sum(a != b for a, b in zip(base, neighbour, strict=True)) == 1


def test_grading_path_gives_the_same_verdict_as_the_notebook():
    def forward_only(p, n):
        return 2 * p * n

    params = {"cases": [[3e8, 2e10], [13, 17]]}
    payload = observation_payload(
        "check_compute_num_flops",
        "flops.check_compute_num_flops",
        lambda: (forward_only,),
        json.dumps(params),
    )
    envelope = json.loads(json.dumps(payload))["observation"]
    graded = find("flops.check_compute_num_flops").judge_envelope(envelope, params)
    direct = flops.check_compute_num_flops(forward_only, cases=params["cases"])
    assert str(graded) == str(direct) and not graded.passed


def test_oversized_observations_are_refused(monkeypatch):
    monkeypatch.setattr("feedback.probe.MAX_OBSERVATION_CHARS", 10_000)
    payload = observation_payload(
        "check_generations_gemma_1b",
        "generation.check_generations",
        lambda: (["я" * 4000] * 10,),
        "{}",
    )
    assert "слишком большой" in payload["observation"]["problem"]["headline"]

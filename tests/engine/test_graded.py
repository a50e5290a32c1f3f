"""Проверка как «наблюдение → вердикт»: конверты, имена, вытягивание случаев, зонд.

И то, что вердикта без эталонов нет: модули лабораторных не импортируют
:mod:`feedback.answers`, а без него любая проверка курса снимает наблюдение, но не
проходит. Сценарий :data:`VERDICTS_SCRIPT` здесь запускается в отдельном процессе без
эталонов, а в tests/teacher/unit/test_sandbox.py — в настоящей песочнице.
"""

import json
import os
import random
import subprocess
import sys
import types

import pytest

from feedback import CheckFailed, flops, memory, wall
from feedback.checks import CHECK_MODULES, check_function, find
from feedback.engine.calling import LearnerProblem
from feedback.engine.comparing import FunctionTask
from feedback.engine.graded import (
    AnswersUnavailable,
    GradedCheck,
    Verdict,
    reference,
    split_arguments,
    verdict,
)
from feedback.engine.probe import observation_payload
from feedback.engine.result import passed

from notebook_runner import ROOT


def test_names_from_test_cells_resolve_to_checks():
    assert find("flops.check_compute_num_flops") is flops.check_compute_num_flops.graded
    assert check_function("memory.check_calculate_param_memory") is (
        memory.check_calculate_param_memory
    )
    for bad in ("flops.training_flops", "os.check_x", "flops", "../x.check_y", "flops.check_nope"):
        with pytest.raises((KeyError, ModuleNotFoundError)):
            find(bad)


def test_the_engine_finds_only_declared_checks_and_imports_no_lab_module():
    """Движок находит проверку только в импортированном модуле; по имени модуль импортирует
    :mod:`feedback.checks`, и только модуль из его таблицы."""
    out = python(
        "import sys",
        "from feedback.engine import graded, probe",
        "try:\n    graded.find('flops.check_compute_num_flops')\n"
        "except KeyError as error:\n    print('KeyError', error)",
        "print(sorted(m for m in sys.modules if m in ('feedback.flops', 'feedback.memory')))",
        "from feedback import checks",
        "name = 'flops.check_compute_num_flops'",
        "print(checks.find(name) is graded.find(name))",
        "try:\n    checks.find('runtime.check_x')\n"
        "except KeyError as error:\n    print('KeyError', error)",
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    assert lines[0].startswith("KeyError") and "не импортирован" in lines[0]
    assert lines[1:3] == ["[]", "True"]
    assert lines[3].startswith("KeyError") and "нет проверок курса" in lines[3]


def test_objects_and_params_are_split_by_the_signature():
    import inspect

    signature = inspect.signature(flops.check_compute_num_flops)
    objects, params = split_arguments(signature, (len,), {"cases": [(1, 2)]})
    assert objects == (len,) and params == {"cases": [(1, 2)]}
    with pytest.raises(TypeError):
        split_arguments(signature, (), {})


def test_an_optional_learner_object_is_an_object_only_when_passed():
    """Ячейка-тест старого выпуска без функции и новая — с ней: обе вызывают проверку таблицы."""
    import inspect

    signature = inspect.signature(flops.check_final_results)
    rows = [{"Scenario": "PaLM"}]
    assert split_arguments(signature, (rows,), {}) == ((rows,), {})
    assert split_arguments(signature, (rows, len), {}) == ((rows, len), {})
    assert split_arguments(signature, (rows,), {"fn": len}) == ((rows, len), {})


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
    from feedback import generation  # noqa: F401 — модуль проверки; в ядре его импортирует зонд

    monkeypatch.setattr("feedback.engine.probe.MAX_OBSERVATION_CHARS", 10_000)
    payload = observation_payload(
        "check_generations_gemma_1b",
        "generation.check_generations",
        lambda: (["я" * 4000] * 10,),
        "{}",
    )
    assert "слишком большой" in payload["observation"]["problem"]["headline"]


# --------------------------------------------------------------------------- без эталонов

#: Модули лабораторных с проверками (``модуль.check_…`` в ячейках-тестах) — таблица
#: :data:`feedback.checks.CHECK_MODULES`; тест ниже сверяет её с исходниками.
LAB_MODULES = CHECK_MODULES
#: Заголовок вердикта, когда эталонов нет (в песочнице оценивания).
NO_ANSWERS = "вердикт здесь не выносится: эталонов проверки нет."
#: Вердикт этой проверки 7.2 лежит в модуле лабораторной, но эталон берёт лениво
#: (:func:`feedback.engine.comparing.answer`) и без него пройти не может.
JUDGED_IN_THE_LAB_MODULE = {"flops.check_final_results"}

#: Делает :mod:`feedback.answers` неимпортируемым — как пустая папка в песочнице.
BLOCK_ANSWERS = """import importlib.abc, sys


class _NoAnswers(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "feedback.answers" or name.startswith("feedback.answers."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoAnswers())
"""

#: Для каждой проверки курса — правдоподобный верный ответ; печатает, что вышло.
#: Наблюдение снимается настоящим ``observe`` (модели — заглушки без keras), кроме
#: оптимизатора: его наблюдение без keras не снять, оно задано готовым.
VERDICTS_SCRIPT = """import json
from feedback import accumulation, flops, generation, memory, precision, wall
from feedback.engine.graded import AnswersUnavailable, GradedCheck, roundtrip

checks = {
    function.graded.name: function
    for module in (flops, memory, precision, accumulation, wall, generation)
    for attribute, function in vars(module).items()
    if attribute.startswith("check_") and isinstance(getattr(function, "graded", None), GradedCheck)
}
GIB = 1024**3


class Variable:
    def __init__(self, path, dtype, shape):
        self.path, self.dtype, self.shape = path, dtype, shape


class Layer:
    lora_enabled, lora_rank = True, 4

    def __init__(self, path):
        self.name = self.path = path


class Backbone:
    dtype_policy = None

    def __init__(self, weights, layers):
        self.weights, self.sublayers = list(weights), list(layers)

    def _flatten_layers(self, include_self=False):
        return list(self.sublayers)


class Model:
    def __init__(self, weights, trainable, layers=()):
        self.backbone = Backbone(weights, layers)
        self.weights, self.trainable_weights = list(weights), list(trainable)


kernel = Variable("decoder_block_0/attention/query/kernel", "bfloat16", (8, 8))
lora = [Variable(f"decoder_block_0/query/lora_kernel_{x}", "float32", (8, 4)) for x in "ab"]


def product(*values):
    result = 1
    for value in values:
        result *= value
    return result


objects = {
    "flops.check_compute_num_flops": (lambda p, n: 6 * p * n,),
    "flops.check_final_results": (
        [
            {"Scenario": s, "Parameters": p, "Tokens": n, "FLOPs": 6 * p * n}
            for s, p, n in flops.SCENARIOS
        ],
        lambda p, n: 6 * p * n,
    ),
    "memory.check_calculate_param_memory": (lambda p, b: p * b / GIB,),
    "memory.check_calculate_input_data_memory": (lambda b, n, t: b * n * t / GIB,),
    "memory.check_calculate_gradient_memory": (lambda p, b: p * b / GIB,),
    "memory.check_calculate_optimizer_memory": (lambda p, b: 2 * p * b / GIB,),
    "memory.check_calculate_activation_memory": (lambda *args: product(*args) / GIB,),
    "precision.check_weights_dtype": ("bfloat16",),
    "precision.check_weights_budget": (
        {"float32": 3_880_099_328 * 4 / GIB, "float16": 3_880_099_328 * 2 / GIB,
         "bfloat16": 3_880_099_328 * 2 / GIB},
    ),
    "precision.check_bfloat16": (Model([kernel], [kernel]),),
    "precision.check_lora": (Model([kernel, *lora], lora, [Layer("decoder_block_0/query")]),),
    "precision.check_lora_parameter_count": (
        lambda d, h, q, kv, r, n: n * (r * d * (q + kv) + 2 * r * h),
    ),
    "flops.check_training_seconds": (lambda f, peak, u: f / (peak * u),),
    "wall.check_weights_memory": (wall.GEMMA_4B_PARAMS * 4 / GIB,),
    "generation.check_generations": ([p + " — и продолжение." for p in generation.PROMPTS],),
}
observations = {
    "accumulation.check_optimizer": {
        "class": "AdamW", "adamw": True, "learning_rate": 8e-4, "weight_decay": 0.01,
        "beta_1": 0.9, "beta_2": 0.95, "epsilon": 1e-6, "clipnorm": 0.5,
        "global_clipnorm": None, "clipvalue": None, "gradient_accumulation_steps": 8,
    },
}
report = {}
for name, function in sorted(checks.items()):
    spec = function.graded
    if name in observations:
        envelope = {"ok": observations[name]}
    else:
        envelope = roundtrip(spec.observe_envelope(lambda: objects[name], {}))
    result = spec.judge_envelope(envelope, {})
    try:
        spec.judge(envelope.get("ok"))
        judge = "judged"
    except AnswersUnavailable:
        judge = "AnswersUnavailable"
    except Exception as error:
        judge = type(error).__name__
    direct = function(*objects[name]).passed if name in objects else None
    report[name] = {
        "observed": "ok" in envelope, "passed": result.passed, "headline": result.headline,
        "judge": judge, "direct": direct,
    }
print("VERDICTS " + json.dumps(report, ensure_ascii=False))
"""


def graded_checks():
    """Все проверки курса: ``check_…`` модулей лабораторных с ``.graded``."""
    found = {}
    for module in LAB_MODULES:
        for attribute, function in vars(__import__(f"feedback.{module}", fromlist=["_"])).items():
            graded = getattr(function, "graded", None)
            if attribute.startswith("check_") and isinstance(graded, GradedCheck):
                found[graded.name] = graded
    return found


def verdicts(output):
    """Отчёт :data:`VERDICTS_SCRIPT` из его вывода."""
    [line] = [line for line in output.splitlines() if line.startswith("VERDICTS ")]
    return json.loads(line.removeprefix("VERDICTS "))


def assert_no_verdict_without_answers(report):
    """Без эталонов наблюдение снято, а ни одна проверка не прошла — и всё из-за эталонов."""
    assert set(report) == set(graded_checks())
    for name, seen in report.items():
        assert seen["observed"], (name, seen)
        assert not seen["passed"] and seen["headline"] == NO_ANSWERS, (name, seen)
        assert seen["judge"] == "AnswersUnavailable" and seen["direct"] in (False, None), name


def python(*sources):
    env = {key: value for key, value in os.environ.items() if key != "FEEDBACK_STRICT"}
    return subprocess.run(
        [sys.executable, "-c", "\n".join(sources)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_module_with_checks_is_a_lab_module():
    package = ROOT / "feedback"
    with_checks = {
        path.relative_to(package).parts[0].removesuffix(".py")
        for path in package.rglob("*.py")
        if path.relative_to(package).parts[0] not in ("answers", "teacher")
        and "@graded_check(" in path.read_text(encoding="utf-8")
    }
    assert with_checks == set(LAB_MODULES)
    assert {name.split(".")[0] for name in graded_checks()} == set(LAB_MODULES)
    # Каждая проверка находится по своему имени — тому, что пишут ячейки-тесты.
    for name, graded in graded_checks().items():
        assert find(name) is graded, name


def test_verdicts_live_in_the_answers_and_are_named_not_imported():
    for name, check in graded_checks().items():
        module = name.split(".")[0]
        if isinstance(check.judge, Verdict):
            assert check.judge.name.startswith(f"{module}.judge_"), name
            assert check.judge.resolve().__module__ == f"feedback.answers.{module}", name
        elif isinstance(getattr(check.judge, "__self__", None), FunctionTask):
            assert check.judge.__self__.answer.startswith(f"{module}."), name
        else:
            assert name in JUDGED_IN_THE_LAB_MODULE, f"вердикт {name} не в feedback.answers"
    assert GradedCheck("x.check_y", "т", len, "wall.judge_weights_memory").judge == verdict(
        "wall.judge_weights_memory"
    )


def test_lab_modules_do_not_import_the_answers():
    """Импорт модулей лабораторных (и зонда) не трогает эталоны — даже когда их нет."""
    modules = [f"feedback.{module}" for module in LAB_MODULES]
    modules += ["feedback.generation.check", "feedback.engine.comparing", "feedback.engine.probe"]
    listing = "print(sorted(m for m in sys.modules if m.startswith('feedback.answers')))"
    imports = "import sys\n" + "\n".join(f"import {module}" for module in modules)
    for sources in ((imports, listing), (BLOCK_ANSWERS, imports, listing)):
        out = python(*sources)
        assert out.returncode == 0, out.stderr[-3000:]
        assert out.stdout.strip() == "[]"


def test_without_answers_every_check_observes_but_none_passes():
    blocked = python(BLOCK_ANSWERS, VERDICTS_SCRIPT)
    assert blocked.returncode == 0, blocked.stderr[-3000:]
    assert_no_verdict_without_answers(verdicts(blocked.stdout))
    # Те же ответы с эталонами проходят: отказ выше — из-за эталонов, а не из-за ответов.
    control = python(VERDICTS_SCRIPT)
    assert control.returncode == 0, control.stderr[-3000:]
    for name, seen in verdicts(control.stdout).items():
        assert seen["passed"] and seen["judge"] == "judged", (name, seen)
        assert seen["direct"] in (True, None), name


def test_a_verdict_without_answers_is_a_failed_check_not_an_exception(monkeypatch):
    """Решено так: ``judge_envelope`` не бросает и тут, а сама функция вердикта — бросает."""
    monkeypatch.setitem(sys.modules, "feedback.answers.wall", None)
    spec = find("wall.check_weights_memory")
    envelope = spec.observe_envelope(lambda: (14.45,), {})
    with pytest.raises(AnswersUnavailable):
        spec.judge(envelope["ok"])
    result = spec.judge_envelope(envelope, {})
    assert not result.passed and result.headline == NO_ANSWERS
    assert "feedback.answers.wall" in result.message
    assert not wall.check_weights_memory(14.45).passed
    monkeypatch.setenv("FEEDBACK_STRICT", "1")
    with pytest.raises(CheckFailed, match="эталонов проверки нет"):
        wall.check_weights_memory(14.45)
    monkeypatch.delitem(sys.modules, "feedback.answers.wall")
    assert wall.check_weights_memory(14.45).passed  # с эталонами — снова вердикт


def test_missing_answers_are_named_but_broken_answers_are_not_hidden(monkeypatch):
    for name in ("nosuchlab.judge_x", "wall.judge_nothing"):
        with pytest.raises(AnswersUnavailable, match=name.replace(".", r"\.")):
            reference(name)
    with pytest.raises(AnswersUnavailable, match="не функция вердикта"):
        verdict("wall.WEIGHTS_REL_TOL")(14.45)

    def broken(name):
        raise ModuleNotFoundError("No module named 'scipy'", name="scipy")

    monkeypatch.setattr(
        "feedback.engine.graded.importlib", types.SimpleNamespace(import_module=broken)
    )
    with pytest.raises(ModuleNotFoundError, match="scipy"):
        reference("wall.judge_weights_memory")


def test_a_verdict_problem_keeps_its_mistake_code_and_an_envelope_problem_is_unknown():
    from feedback.answers.mistakes import problem
    from feedback.engine.graded import GradedCheck

    def judge(observation):
        raise problem("generation.single_string", "одна строка", "Подсказка: список")

    check = GradedCheck("x.check_x", "x", observe=lambda value: value, judge=judge)
    assert check.judge_envelope({"ok": 1}, {}).mistake == "generation.single_string"
    plain = GradedCheck("x.check_y", "y", observe=lambda v: v, judge=lambda o: 1 / 0)
    assert plain.judge_envelope({"ok": 1}, {}).mistake == "unknown"
    assert check.judge_envelope({"problem": {"headline": "нет"}}, {}).mistake == "unknown"

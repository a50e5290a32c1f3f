"""Общий движок проверок «функция → число».

Проверка вызывает функцию учащегося на нескольких случаях (не только на константах
лабораторной, чтобы жёстко вписанный ответ не прошёл), сравнивает с эталоном и,
если ответ совпал с типичной ошибкой, добавляет подсказку именно про неё.

Вердикт никогда не называет верный ответ (issue 42): он называет случай, что получилось у
учащегося, больше оно верного или меньше и подсказку к известной ошибке. Верное число на
любом случае выдало бы формулу (462 при P = 7 и N = 11 — это 6·P·N), а на случаях с
константами лабораторной — и графу, за которую ставят баллы. Проверяет это
``tests/answers/test_secrecy.py``. При
оценивании к открытым случаям добавляются вытянутые для каждого учащегося свои
(:meth:`FunctionTask.draw`), и у каждого случайного случая есть «соседи», которые
отличаются одним аргументом: так видно, если функция этот аргумент не использует.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from feedback.engine.calling import (
    as_number,
    describe_case,
    learner_value,
    observe_call,
    require_function,
)
from feedback.engine.graded import AnswersUnavailable, GradedCheck, Params, reference
from feedback.engine.result import UNKNOWN, CheckResult, failed, passed
from feedback.formatting import format_number, format_pair, plural

Formula = Callable[..., float]
#: Как вытянуть значение аргумента для случая оценивания.
Sampler = Callable[[random.Random], float]


@dataclass(frozen=True)
class Mistake:
    """Типичная ошибка: что получилось бы по неверной формуле, подсказка к ней и её код.

    ``id`` — код ошибки из :mod:`feedback.answers.mistakes` (``"flops.forward_only"``): его
    несёт вердикт (:attr:`CheckResult.mistake`), по нему преподаватель считает ошибки класса.
    """

    formula: Formula
    hint: str
    id: str


@dataclass(frozen=True)
class Answer:
    """Эталон задания «функция → число»: верная формула и типичные ошибки."""

    formula: Formula
    mistakes: tuple[Mistake, ...] = ()


def answer(name: str) -> Answer:
    """Эталон ``"модуль.ИМЯ"`` из :mod:`feedback.answers` — только для вердикта.

    В песочнице оценивания папки эталонов нет (:class:`AnswersUnavailable`): там вердикт
    не выносится, а код учащегося не должен дотянуться до верной формулы.
    """
    found = reference(name)
    if not isinstance(found, Answer):
        raise AnswersUnavailable(f"{name} — не эталон")
    return found


#: Правило допуска курса для числовых ответов: ответ, отличающийся от верного не больше чем на
#: 1 % (округлённый до трёх значащих цифр: 14,9 вместо 14,901…), принимается. Одно правило
#: для всех лабораторных, где ответ — объём памяти или число операций.
ANSWER_REL_TOL = 1e-2


def direction(got: float, expected: float) -> str:
    """«больше верного» или «меньше верного» — без самого верного числа."""
    if got < 0 <= expected:
        return "Ответ отрицательный, а такая величина отрицательной не бывает."
    return "Ответ больше верного." if got > expected else "Ответ меньше верного."


def is_close(got: float, expected: float, rel_tol: float) -> bool:
    """Совпадение с относительной точностью (и нулями, сравниваемыми точно)."""
    return math.isclose(got, expected, rel_tol=rel_tol, abs_tol=0.0)


def find_mistake(
    got: float, case: dict[str, Any], expected: float, mistakes: Sequence[Mistake], rel_tol: float
) -> Mistake | None:
    """Первая типичная ошибка, с которой совпал ответ (её подсказка и код)."""
    for mistake in mistakes:
        wrong = mistake.formula(*case.values())
        if not is_close(wrong, expected, rel_tol) and is_close(got, wrong, rel_tol):
            return mistake
    return None


def _explains_all(
    mistake: Mistake, task: FunctionTask, cases: list[dict[str, Any]], values: list[float | None]
) -> bool:
    """Объясняет ли ошибка все числовые ответы, а не только один случай."""
    for case, got in zip(cases, values, strict=True):
        if got is None:
            continue
        wrong, expected = mistake.formula(*case.values()), task.formula(*case.values())
        if not is_close(got, wrong, task.rel_tol) and not is_close(wrong, expected, task.rel_tol):
            return False
    return True


def named_cases(
    cases: Sequence[Sequence[float]] | None, defaults: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Свои случаи (кортежи аргументов по порядку) с именами аргументов из ``defaults``."""
    if cases is None:
        return [dict(case) for case in defaults]
    names = list(defaults[0])
    return [dict(zip(names, case, strict=True)) for case in cases]


def log_uniform(low: float, high: float, digits: int = 3) -> Sampler:
    """Случайное число между ``low`` и ``high`` на логарифмической шкале, ``digits`` цифр."""

    def sample(rng: random.Random) -> float:
        value = 10 ** rng.uniform(math.log10(low), math.log10(high))
        return float(f"{value:.{digits}g}")

    return sample


def integers(low: int, high: int) -> Sampler:
    """Случайное целое от ``low`` до ``high`` включительно."""
    return lambda rng: rng.randint(low, high)


def choice(*values: float) -> Sampler:
    """Одно из перечисленных значений."""
    return lambda rng: rng.choice(values)


@dataclass(frozen=True)
class FunctionTask:
    """Задание «напишите функцию»: открытые случаи и имя эталона с типичными ошибками.

    Сам эталон (:class:`Answer`) лежит в :mod:`feedback.answers` и нужен только
    вердикту; наблюдению хватает имени функции и случаев. ``samplers`` — как тянуть
    каждый аргумент для случаев оценивания; ``globals_hint`` — какая глобальная
    переменная лабораторной соответствует аргументу (её берут по ошибке вместо самого
    аргумента).
    """

    title: str
    cases: tuple[dict[str, Any], ...]
    answer: str  # имя эталона в feedback.answers, например "flops.COMPUTE_NUM_FLOPS"
    formatter: Callable[..., str] = format_number
    rel_tol: float = 1e-6
    samplers: Mapping[str, Sampler] = field(default_factory=dict)
    globals_hint: Mapping[str, str] = field(default_factory=dict)
    drawn_cases: int = 3

    @property
    def arguments(self) -> tuple[str, ...]:
        return tuple(self.cases[0])

    @property
    def formula(self) -> Formula:
        """Верная формула (только для вердикта: в песочнице её нет)."""
        return answer(self.answer).formula

    @property
    def mistakes(self) -> tuple[Mistake, ...]:
        return answer(self.answer).mistakes

    def observe(self, fn: Any, cases: Sequence[Sequence[float]] | None = None) -> dict[str, Any]:
        """Исходы вызовов ``fn`` на всех случаях (сторона учащегося)."""
        require_function(fn)
        calls: list[dict[str, Any]] = []
        for case in named_cases(cases, self.cases):
            # Зависшую функцию дальше не вызываем: вердикт всё равно по первой ошибке.
            hung = any(call.get("t") == "timeout" for call in calls)
            calls.append({"t": "skipped"} if hung else observe_call(fn, case))
        return {"calls": calls}

    def judge(
        self, observation: Any, cases: Sequence[Sequence[float]] | None = None
    ) -> CheckResult:
        """Вердикт по исходам (сторона преподавателя)."""
        named = named_cases(cases, self.cases)
        calls = observation.get("calls") if isinstance(observation, dict) else None
        if not isinstance(calls, list) or len(calls) != len(named):
            raise ValueError("число исходов не совпадает с числом случаев")
        return judge_numeric(self, named, calls)

    def draw(self, rng: random.Random, params: Params) -> dict[str, Any]:
        """Открытые случаи и ``drawn_cases`` случайных, у каждого — сосед по одному аргументу."""
        cases = [list(case.values()) for case in self.cases]
        names = self.arguments
        for index in range(self.drawn_cases):
            base = {name: self.samplers[name](rng) for name in names}
            varied = names[index % len(names)]
            neighbour = dict(base)
            while neighbour[varied] == base[varied]:
                neighbour[varied] = self.samplers[varied](rng)
            cases += [list(base.values()), list(neighbour.values())]
        return {**params, "cases": cases}

    def graded(self, name: str) -> GradedCheck:
        """Проверка курса с этим заданием под именем ``name`` (``"модуль.check_…"``)."""
        return GradedCheck(name, self.title, self.observe, self.judge, self.draw)


#: Коды ошибок «функция не использует аргумент»: берёт известную глобальную переменную
#: лабораторной или что-то другое.
READS_GLOBAL = "calling.reads_global"
IGNORES_ARGUMENT = "calling.ignores_argument"


def _ignored_argument(
    task: FunctionTask, index: int, cases: list[dict[str, Any]], values: list[float | None]
) -> tuple[str, str] | None:
    """Подсказка и код ошибки, если ответ не меняется при смене одного аргумента, а должен."""
    case, got = cases[index], values[index]
    for other, other_got in zip(cases, values, strict=True):
        if other is case or other_got is None or got is None:
            continue
        changed = [name for name in case if case[name] != other[name]]
        if len(changed) != 1:
            continue
        name = changed[0]
        expected, other_expected = task.formula(*case.values()), task.formula(*other.values())
        if is_close(got, other_got, task.rel_tol) and not is_close(
            expected, other_expected, task.rel_tol
        ):
            constant = task.globals_hint.get(name)
            source = f"глобальную переменную {constant}" if constant else "что-то другое"
            hint = (
                f"ответ не меняется, когда меняется {name} ({format_number(other[name])} → "
                f"{format_number(case[name])}). Похоже, функция не использует аргумент "
                f"{name}, а берёт {source}. Считайте только по аргументам функции."
            )
            return hint, READS_GLOBAL if constant else IGNORES_ARGUMENT
    return None


def _numbers(calls: list[Any], cases: list[dict[str, Any]]) -> list[float | None]:
    values: list[float | None] = []
    for outcome, case in zip(calls, cases, strict=True):
        try:
            values.append(as_number(learner_value(outcome, case), case))
        except Exception:
            values.append(None)
    return values


def judge_numeric(task: FunctionTask, cases: list[dict[str, Any]], calls: list[Any]) -> CheckResult:
    """Сверяет исходы с эталоном; останавливается на первом неверном случае.

    Называет случай, полученное значение (с достаточным числом цифр), больше оно верного или
    меньше и подсказку: к известной ошибке, к аргументу, который функция не использует. Само
    верное значение не называет (issue 42).
    """
    values = _numbers(calls, cases)
    for index, (outcome, case) in enumerate(zip(calls, cases, strict=True)):
        got = as_number(learner_value(outcome, case), case)
        expected = task.formula(*case.values())
        if is_close(got, expected, task.rel_tol):
            continue
        # Цифр столько, чтобы неверное не выглядело верным; показываем только полученное.
        _, shown_got = format_pair(expected, got, task.formatter)
        details = [describe_case(case), f"Получено: {shown_got}", direction(got, expected)]
        explained = [m for m in task.mistakes if _explains_all(m, task, cases, values)]
        found = find_mistake(got, case, expected, explained, task.rel_tol)
        hinted = (found.hint, found.id) if found else _ignored_argument(task, index, cases, values)
        if hinted is None:
            details.append("Подсказка: сверьте формулу с описанием задания.")
            return failed(task.title, "ответ неверный.", *details, mistake=UNKNOWN)
        hint, mistake = hinted
        details.append(f"Подсказка: {hint}")
        return failed(task.title, "ответ неверный.", *details, mistake=mistake)
    checked = plural(len(cases), "случай", "случая", "случаев")
    return passed(task.title, f"верно во всех проверенных случаях ({checked}).")

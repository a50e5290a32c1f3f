"""Проверки лабораторной 7.2 «Оцените FLOPs обучения».

Правило курса: за эпоху обучение тратит около 6·P·N операций — 2·P·N на прямой
проход и 4·P·N на обратный (P — все параметры модели, N — токены). Время обучения —
FLOPs, делённые на полезную скорость видеокарты: паспортный пик × доля пика (MFU).
Сами формулы и типичные ошибки — в :mod:`feedback.answers.flops` (в песочнице
оценивания их нет).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from feedback.engine.calling import LearnerProblem, as_number, learner_value
from feedback.engine.comparing import (
    ANSWER_REL_TOL,
    FunctionTask,
    answer,
    choice,
    is_close,
    log_uniform,
)
from feedback.engine.graded import OPTIONAL, GradedCheck, graded_check
from feedback.engine.result import UNKNOWN, CheckResult, failed, passed
from feedback.engine.values import describe, revive
from feedback.formatting import (
    format_flops,
    format_number,
    format_pair,
    format_significant,
    parse_number,
    plural,
)

#: Сценарии задания 2: название (как в таблице), параметры P, токены N.
SCENARIOS: tuple[tuple[str, float, float], ...] = (
    ("BERT-Base", 110e6, 3.3e9),
    ("T5-Large", 770e6, 1e12),
    ("Gemma-1B (Africa Galore)", 1e9, 30e3),
    ("PaLM", 540e9, 780e9),
)
COLUMNS = ("Scenario", "Parameters", "Tokens", "FLOPs")
#: Допуск для таблицы — правило курса (1 %): округлённые до трёх значащих цифр числа
#: (2,18e18) принимаются.
TABLE_REL_TOL = ANSWER_REL_TOL


#: Случаи для функции: константы лабораторной и другие, чтобы не прошёл вписанный ответ.
FLOPS_CASES = (
    {"param_count": 1e9, "num_tokens": 30e3},
    {"param_count": 110e6, "num_tokens": 3.3e9},
    {"param_count": 7, "num_tokens": 11},
    {"param_count": 2.5e6, "num_tokens": 4e5},
    {"param_count": 540e9, "num_tokens": 780e9},
)


COMPUTE_NUM_FLOPS = FunctionTask(
    "compute_num_flops",
    FLOPS_CASES,
    "flops.COMPUTE_NUM_FLOPS",
    formatter=format_flops,
    rel_tol=ANSWER_REL_TOL,
    samplers={"param_count": log_uniform(1e3, 1e12), "num_tokens": log_uniform(1e3, 1e13)},
)


@graded_check(COMPUTE_NUM_FLOPS.graded("flops.check_compute_num_flops"))
def check_compute_num_flops(fn: Any, cases: Sequence[Sequence[float]] | None = None) -> CheckResult:
    """Проверяет ``compute_num_flops(param_count, num_tokens)`` на нескольких случаях.

    ``cases`` — свои наборы аргументов по порядку; по умолчанию — встроенные.
    """


#: Случаи для функции времени: пример лабораторной (RTX 4080, 40 % пика) и другие.
TIME_CASES = (
    {"num_flops": 1.875e18, "peak_flops_per_second": 97.5e12, "utilization": 0.4},
    {"num_flops": 1.875e18, "peak_flops_per_second": 97.5e12, "utilization": 0.3},
    {"num_flops": 2.527e24, "peak_flops_per_second": 97.5e12, "utilization": 0.3},
    {"num_flops": 2.527e24, "peak_flops_per_second": 65e12, "utilization": 0.3},
    {"num_flops": 6e9, "peak_flops_per_second": 1e9, "utilization": 0.5},
)


def _format_seconds(seconds: float, digits: int = 3) -> str:
    return f"{format_significant(seconds, digits)} с"


TRAINING_SECONDS = FunctionTask(
    "training_seconds",
    TIME_CASES,
    "flops.TRAINING_SECONDS",
    formatter=_format_seconds,
    samplers={
        "num_flops": log_uniform(1e15, 1e25),
        "peak_flops_per_second": log_uniform(1e12, 1e15),
        "utilization": choice(0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6),
    },
)


@graded_check(TRAINING_SECONDS.graded("flops.check_training_seconds"))
def check_training_seconds(fn: Any, cases: Sequence[Sequence[float]] | None = None) -> CheckResult:
    """Проверяет ``training_seconds(num_flops, peak_flops_per_second, utilization)``.

    Нужны секунды: ``num_flops / (peak_flops_per_second × utilization)``.
    """


def _rows_as_dicts(rows: Any) -> list[dict[str, Any]]:
    if rows is Ellipsis or rows is None:
        raise LearnerProblem("таблица ещё не заполнена: final_results_data пуста или равна «…».")
    if hasattr(rows, "to_dict") and hasattr(rows, "columns"):
        rows = rows.to_dict("records")
    if isinstance(rows, dict | str) or not hasattr(rows, "__iter__"):
        raise LearnerProblem(
            f"ожидался список словарей, а получен объект типа {type(rows).__name__}.",
            'Пример строки: {"Scenario": "BERT-Base", "Parameters": 110e6, '
            '"Tokens": 3.3e9, "FLOPs": ...}',
        )
    rows = list(rows)
    if not rows:
        raise LearnerProblem("таблица пуста: добавьте в final_results_data четыре сценария.")
    for index, row in enumerate(rows, start=1):
        if not isinstance(row, dict):
            raise LearnerProblem(
                f"строка {index} — не словарь, а {type(row).__name__}.",
                "Каждая строка — словарь с ключами " + ", ".join(COLUMNS) + ".",
            )
        missing = [column for column in COLUMNS if column not in row]
        if missing:
            raise LearnerProblem(
                f"в строке {index} нет ключей: {', '.join(missing)}.",
                "Каждая строка — словарь с ключами " + ", ".join(COLUMNS) + ".",
            )
    return rows


#: Ошибка в таблице: текст для учащегося и код типичной ошибки (``None`` — неизвестная).
Problem = tuple[str, str | None]


def _scenario_problems(rows: list[dict[str, Any]]) -> list[Problem]:
    """Ошибки в названиях сценариев: нет, повторяется, неизвестно — или, похоже, переименовано.

    Неизвестное название, похожее на отсутствующее (одно содержит другое или
    :class:`difflib.SequenceMatcher` без учёта регистра, пробелов и знаков даёт не меньше 0,6), —
    одна ошибка «похоже, «X» — это «Y»: переименуйте», а не две («нет» и «неизвестный»).
    """
    import difflib

    names = [str(row["Scenario"]).strip() for row in rows]
    known = [name for name, _, _ in SCENARIOS]
    missing = [name for name in known if name not in names]
    unknown = [name for name in dict.fromkeys(names) if name not in known]

    def letters(name: str) -> str:
        return "".join(char for char in name.casefold() if char.isalnum())

    def likeness(written: str, expected: str) -> float:
        got, want = letters(written), letters(expected)
        if len(got) >= 2 and (got in want or want in got):
            return 1.0
        return difflib.SequenceMatcher(None, got, want).ratio()

    candidates = sorted(
        (
            (likeness(written, expected), written, expected)
            for written in unknown
            for expected in missing
        ),
        key=lambda candidate: -candidate[0],
    )
    renamed: dict[str, str] = {}  # название из задания → как его написали в таблице
    for score, written, expected in candidates:
        if score >= 0.6 and expected not in renamed and written not in renamed.values():
            renamed[expected] = written

    problems: list[Problem] = []
    for name in known:
        count = names.count(name)
        if name in renamed:
            problems.append(
                (
                    f"Похоже, «{renamed[name]}» — это «{name}»: переименуйте, названия сценариев "
                    "должны быть точно как в задании.",
                    "flops.table_renamed_scenario",
                )
            )
        elif count == 0:
            problems.append((f"Нет сценария «{name}».", "flops.table_missing_scenario"))
        elif count > 1:
            problems.append(
                (
                    f"Сценарий «{name}» встречается {plural(count, 'раз', 'раза', 'раз')}.",
                    "flops.table_duplicate_scenario",
                )
            )
    for name in unknown:
        if name not in renamed.values():
            problems.append(
                (
                    f"Неизвестный сценарий «{name}»: названия должны быть как в задании "
                    f"({', '.join(known)}).",
                    "flops.table_unknown_scenario",
                )
            )
    return problems


def _given_number(value: Any) -> float | None:
    """Число из данного столбца (Parameters, Tokens): число или числовая строка."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return parse_number(value)
    return None


def _cell_problem(name: str, value: Any) -> Problem | None:
    """Что не так с ячейкой FLOPs, если в ней не число; ``None`` — в ней число."""
    where = f"«{name}», FLOPs:"
    if value is Ellipsis:
        return f"«{name}»: вместо FLOPs осталось «…» — впишите число.", None
    if value is None:
        return f"{where} в ячейке None — впишите число.", None
    if isinstance(value, bool):
        return f"{where} в ячейке логическое значение {value}, а нужно число.", None
    if isinstance(value, str):
        text = f"{where} в ячейке строка {value[:40]!r}, а нужно число."
        if parse_number(value) is not None:
            text += " Уберите кавычки: форматировать будем при выводе таблицы."
            return text, "flops.table_number_as_string"
        return text, None
    if isinstance(value, list | tuple | dict | set):
        kind = {list: "список", tuple: "кортеж", dict: "словарь", set: "множество"}[type(value)]
        return f"{where} в ячейке {kind}, а нужно одно число.", None
    if not isinstance(value, int | float):
        kind = type(value).__name__
        text = f"{where} в ячейке объект типа {kind}, а нужно число."
        if kind == "function":
            text += " Похоже, функция не вызвана: нужен её результат, compute_num_flops(P, N)."
            return text, "flops.table_function_not_called"
        return text, None
    if math.isnan(value):
        return f"{where} в ячейке NaN («не число»).", None
    if math.isinf(value):
        return f"{where} в ячейке бесконечность.", None
    return None


def _row_problems(row: dict[str, Any], params: float, tokens: float) -> list[Problem]:
    """Ошибки строки: оценивается только FLOPs; Parameters и Tokens даны в задании.

    Данные столбцы могут быть числами или строками («110 млн» — так их мог
    отформатировать учащийся). Они упоминаются, только чтобы объяснить неверные FLOPs.
    """
    name = row["Scenario"]
    problem = _cell_problem(name, row["FLOPs"])
    if problem:
        return [problem]
    reference = answer("flops.FINAL_RESULTS")
    got = float(row["FLOPs"])
    expected = reference.formula(params, tokens)
    if is_close(got, expected, TABLE_REL_TOL):
        return []
    # Верное число не называем (issue 42): за эту графу ставят баллы.
    _, shown_got = format_pair(expected, got, format_flops)
    more = "больше" if got > expected else "меньше"
    text = f"«{name}», FLOPs: у вас {shown_got} — это {more}, чем 6·P·N для P и N этой строки."
    mistake = None
    for column, given in (("Parameters", params), ("Tokens", tokens)):
        value = _given_number(row[column])
        if value is not None and not is_close(value, given, 1e-3):
            text += (
                f" В столбце {column} у вас {format_number(value)}, а в задании "
                f"{format_number(given)} — проверьте, от чего посчитаны FLOPs."
            )
            mistake = mistake or "flops.table_wrong_inputs"
    for known in reference.mistakes:
        if is_close(got, known.formula(params, tokens), TABLE_REL_TOL):
            text += f" Подсказка: {known.hint}"
            mistake = known.id
            break
    return [(text, mistake)]


#: Случаи функции задания 1 для таблицы: P и N каждого сценария, по порядку.
SCENARIO_CASES = tuple((params, tokens) for _, params, tokens in SCENARIOS)


def _observe_final_results(rows: Any, fn: Any = None) -> dict[str, Any]:
    """Наблюдение: таблица и что функция учащегося из задания 1 даёт для её сценариев.

    Второе нужно только подсказке: если таблица посчитана неверной функцией, вердикт говорит
    об этом один раз и отправляет к заданию 1, а не повторяет подсказку в каждой строке.
    """
    own = None
    if callable(fn):
        own = COMPUTE_NUM_FLOPS.observe(fn, SCENARIO_CASES)["calls"]
    return {"rows": describe(rows), "own": own}


def _own_values(observation: dict[str, Any]) -> dict[str, float]:
    """Что функция учащегося вернула для каждого сценария (только числа)."""
    calls = observation.get("own")
    if not isinstance(calls, list) or len(calls) != len(SCENARIOS):
        return {}
    values = {}
    for (name, params, tokens), outcome in zip(SCENARIOS, calls, strict=True):
        case = {"param_count": params, "num_tokens": tokens}
        try:
            values[name] = as_number(learner_value(outcome, case), case)
        except LearnerProblem:
            continue
    return values


def _from_own_function(
    rows: dict[str, dict[str, Any]], own: dict[str, float]
) -> tuple[list[str], Problem | None]:
    """Сценарии, где в таблице то, что даёт неверная функция учащегося, и одна ошибка о них.

    Строка считается посчитанной функцией, если её FLOPs совпали с ответом функции на данных
    P и N, а этот ответ неверен. Подсказка к известной ошибке формулы (только прямой проход,
    нет множителя 6…) добавляется один раз, если она объясняет все такие строки.
    """
    reference = answer("flops.FINAL_RESULTS")
    names = []
    for name, params, tokens in SCENARIOS:
        row, value = rows.get(name), own.get(name)
        if row is None or value is None or _cell_problem(name, row["FLOPs"]):
            continue
        expected = reference.formula(params, tokens)
        got = float(row["FLOPs"])
        if not is_close(value, expected, TABLE_REL_TOL) and is_close(got, value, TABLE_REL_TOL):
            names.append(name)
    if not names:
        return [], None
    which = (
        "во всех четырёх строках"
        if len(names) == len(SCENARIOS) == 4
        else "в строках " + ", ".join(f"«{name}»" for name in names)
    )
    text = (
        f"FLOPs {which} — те же, что даёт ваша функция compute_num_flops, а она пока считает "
        "неверно. Исправьте её в задании 1 (проверка под ним подскажет, что не так) и "
        "выполните ячейку таблицы заново."
    )
    known = next(
        (
            mistake
            for mistake in answer("flops.COMPUTE_NUM_FLOPS").mistakes
            if all(
                is_close(own[name], mistake.formula(params, tokens), TABLE_REL_TOL)
                for name, params, tokens in SCENARIOS
                if name in names
            )
        ),
        None,
    )
    if known is None:
        return names, (text, None)
    return names, (f"{text} Подсказка: {known.hint}", known.id)


def _judge_final_results(observation: Any) -> CheckResult:
    if not isinstance(observation, dict) or "rows" not in observation:
        raise ValueError("в наблюдении нет таблицы")
    rows = _rows_as_dicts(revive(observation["rows"]))
    problems = _scenario_problems(rows)
    by_name = {str(row["Scenario"]).strip(): row for row in rows}
    computed, own_problem = _from_own_function(by_name, _own_values(observation))
    if own_problem:
        problems.append(own_problem)
    for name, params, tokens in SCENARIOS:
        if name in by_name and name not in computed:
            problems += _row_problems(by_name[name], params, tokens)
    if problems:
        # «в таблице 1 ошибка» читалось бы как «в таблице № 1».
        found = (
            "в таблице одна ошибка."
            if len(problems) == 1
            else f"ошибок в таблице: {format_number(len(problems))}."
        )
        # Код ошибки вердикта — той, к которой первая «Подсказка:» в тексте, иначе первой
        # известной.
        hinted = [known for text, known in problems if known and "Подсказка:" in text]
        mistake = next(iter(hinted), None) or next((k for _, k in problems if k), UNKNOWN)
        return failed(
            "final_results_data",
            found,
            *(text for text, _ in problems),
            mistake=mistake,
        )
    return passed("final_results_data", "все четыре сценария на месте, FLOPs верные.")


FINAL_RESULTS = GradedCheck(
    "flops.check_final_results",
    "final_results_data",
    observe=_observe_final_results,
    judge=_judge_final_results,
)


@graded_check(FINAL_RESULTS)
def check_final_results(rows: Any, fn: Any = OPTIONAL) -> CheckResult:
    """Проверяет таблицу задания 2: четыре сценария, каждый ровно один раз, верные FLOPs.

    ``fn`` — функция учащегося из задания 1 (``compute_num_flops``): если таблица посчитана
    ею, а она неверна, вердикт говорит это один раз и отправляет к заданию 1. На баллы она
    не влияет: оценивается только таблица.
    """

"""Ни одна проверка лабораторных 7.1, 7.2 и 7.4 не выдаёт оцениваемое значение (issue 42, п. 1).

Учащийся, запустив проверку на нетронутой заготовке или на типичном неверном ответе, не должен
получить верное число: ни FLOPs четырёх сценариев 7.2, ни ГиБ функций 7.4 (и ни одного верного
ответа на случаях проверки — по нему формула восстанавливается делением). Вердикт называет случай,
что получилось у учащегося, и подсказку к ошибке.

Таблица :data:`FUNCTION_CHECKS` — проверки «функция → число» (новая проверка — новая строка);
неверные функции берутся из эталона (все его типичные ошибки) и из списка заготовок. Тетрадки
учащихся 7.2 и 7.4 выполняются нетронутыми, и каждая оцениваемая ячейка проверяется так же.
Лабораторная 7.1 оценивает собственные генерации учащегося: верного числа у неё нет, и её проверка
здесь — в таблице заготовок (ни одна заготовка не даёт трассировки). 7.3, 7.5 и 7.6 —
в tests/answers/test_secrecy_gpu.py.
"""

from __future__ import annotations

import io
import json
import math
from collections.abc import Callable
from contextlib import redirect_stdout
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from secrecy_support import renderings, revealed, without_own

from feedback import flops, generation, memory
from feedback.engine.comparing import FunctionTask, answer
from feedback.engine.result import CheckResult
from feedback.formatting import parse_number

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class FunctionCheck:
    """Проверка функции: что вызвать, её задание и оцениваемые числа лабораторной."""

    lab: str
    check: Callable[..., CheckResult]
    task: FunctionTask
    gib: bool = False
    #: Числа, которые оцениваются в лабораторной помимо ответов на случаях проверки.
    graded: tuple[float, ...] = ()

    def secrets(self) -> list[float]:
        formula = answer(self.task.answer).formula
        return [formula(*case.values()) for case in self.task.cases] + list(self.graded)


TABLE_FLOPS = tuple(6 * params * tokens for _, params, tokens in flops.SCENARIOS)

FUNCTION_CHECKS = {
    "7.2 compute_num_flops": FunctionCheck(
        "7.2", flops.check_compute_num_flops, flops.COMPUTE_NUM_FLOPS, graded=TABLE_FLOPS
    ),
    "7.2 training_seconds": FunctionCheck(
        "7.2", flops.check_training_seconds, flops.TRAINING_SECONDS
    ),
    "7.4 calculate_param_memory": FunctionCheck(
        "7.4", memory.check_calculate_param_memory, memory.PARAM_MEMORY, gib=True
    ),
    "7.4 calculate_input_data_memory": FunctionCheck(
        "7.4", memory.check_calculate_input_data_memory, memory.INPUT_MEMORY, gib=True
    ),
    "7.4 calculate_gradient_memory": FunctionCheck(
        "7.4", memory.check_calculate_gradient_memory, memory.GRADIENT_MEMORY, gib=True
    ),
    "7.4 calculate_optimizer_memory": FunctionCheck(
        "7.4", memory.check_calculate_optimizer_memory, memory.OPTIMIZER_MEMORY, gib=True
    ),
    "7.4 calculate_activation_memory": FunctionCheck(
        "7.4", memory.check_calculate_activation_memory, memory.ACTIVATION_MEMORY, gib=True
    ),
}


def _not_implemented(*args: Any) -> float:
    raise NotImplementedError("Добавьте сюда свой код")


def _prints(*args: Any) -> None:
    print(math.prod(args))


#: Заготовки и ответы, с которыми учащийся запускает проверку до попытки или вслепую.
PLACEHOLDERS: dict[str, Any] = {
    "многоточие": ...,
    "None": None,
    "NotImplementedError": _not_implemented,
    "функция без return": lambda *args: None,
    "print вместо return": _prints,
    "возвращает …": lambda *args: ...,
    "ноль": lambda *args: 0,
    "единица": lambda *args: 1.0,
    "произведение аргументов": lambda *args: math.prod(args),
}


def _wrong_functions(entry: FunctionCheck) -> dict[str, Any]:
    wrong = dict(PLACEHOLDERS)
    for index, mistake in enumerate(answer(entry.task.answer).mistakes):
        wrong[f"{mistake.id} #{index}"] = mistake.formula
    return wrong


def _own_values(fn: Any, task: FunctionTask) -> list[float]:
    """Что функция учащегося сама возвращает или печатает на случаях проверки (это он знает)."""
    values = []
    for case in task.cases:
        printed = io.StringIO()
        try:
            with redirect_stdout(printed):
                value = fn(*case.values())
        except Exception:
            continue
        for own in (value, parse_number(printed.getvalue())):
            if isinstance(own, int | float):
                values.append(float(own))
    return values


FUNCTION_CASES = [
    pytest.param(name, label, id=f"{name}: {label}")
    for name, entry in FUNCTION_CHECKS.items()
    for label in _wrong_functions(entry)
]


@pytest.mark.parametrize(("name", "label"), FUNCTION_CASES)
def test_function_check_does_not_reveal_the_graded_value(name, label):
    entry = FUNCTION_CHECKS[name]
    fn = _wrong_functions(entry)[label]
    with redirect_stdout(io.StringIO()):
        result = entry.check(fn)
    if label in PLACEHOLDERS:
        assert not result.passed, f"{label}: заготовка прошла проверку"
    # Ошибка, которая остаётся в допуске 1 % (round(…, 2) для больших объёмов), проходит, и
    # тогда учащийся уже знает ответ; иначе вердикт не должен его назвать.
    own = _own_values(fn, entry.task) if callable(fn) else []
    secrets = without_own(entry.secrets(), own, entry.gib)
    assert not revealed(str(result), secrets, entry.gib), str(result)


def test_secret_finder_sees_every_form_of_a_number():
    """Сам поиск может ошибиться: проверим его на записях, которые встречались в вердиктах."""
    assert revealed("Ожидалось: 2,18·10¹⁸ FLOPs", [2.178e18])
    assert revealed("ожидалось 2.178e+18", [2.178e18])
    assert revealed("Ожидалось: 14,9 ГиБ", [4e9 * 4 / 1024**3], gib=True)
    assert revealed("(32\u202f768 байт)", [8 * 1024 * 4 / 1024**3], gib=True)
    assert revealed("learning_rate: ожидалось 8e-4", [8e-4])
    assert not revealed("EMBEDDING_DIM = 2560, 12,5 ГиБ", [2.5])
    assert "15" not in renderings(4e9 * 4 / 1024**3)  # «15» уже не выдаёт 14,9


# --------------------------------------------------------------------------- таблица 7.2


def _table(**flops_by_name: Any) -> list[dict[str, Any]]:
    rows = []
    for name, params, tokens in flops.SCENARIOS:
        value = flops_by_name.get(name, 6 * params * tokens)
        rows.append({"Scenario": name, "Parameters": params, "Tokens": tokens, "FLOPs": value})
    return rows


def _every_row(formula: Callable[[float, float], float]) -> list[dict[str, Any]]:
    return _table(**{name: formula(p, n) for name, p, n in flops.SCENARIOS})


def _table_variants() -> dict[str, tuple[Any, Any]]:
    untouched = _table(**{name: ... for name, _, _ in flops.SCENARIOS})
    variants: dict[str, tuple[Any, Any]] = {
        "нетронутая заготовка": (untouched, _not_implemented),
        "заготовка без функции": (untouched, None),
        "None вместо таблицы": (None, None),
        "пустой список": ([], None),
        "FLOPs строками": (_every_row(lambda p, n: f"{6 * p * n:.3e}"), None),
        "сама функция в ячейке": (_table(**{"PaLM": _not_implemented}), None),
        "нет сценария": (_table()[:3], None),
        "повтор сценария": (_table() + _table()[:1], None),
    }
    for index, mistake in enumerate(answer("flops.FINAL_RESULTS").mistakes):
        formula = mistake.formula
        variants[f"{mistake.id} #{index} во всех строках"] = (_every_row(formula), None)
        variants[f"{mistake.id} #{index} функцией задания 1"] = (_every_row(formula), formula)
        name, params, tokens = flops.SCENARIOS[1]
        variants[f"{mistake.id} #{index} в одной строке"] = (
            _table(**{name: formula(params, tokens)}),
            None,
        )
    return variants


TABLE_VARIANTS = _table_variants()


def _own_entries(rows: Any) -> list[float]:
    """Числа, которые учащийся сам вписал в таблицу (и строкой тоже)."""
    own = []
    for row in rows if isinstance(rows, list) else []:
        value = row.get("FLOPs") if isinstance(row, dict) else None
        if isinstance(value, str):
            value = parse_number(value)
        if isinstance(value, int | float):
            own.append(float(value))
    return own


@pytest.mark.parametrize("label", TABLE_VARIANTS)
def test_final_results_check_does_not_reveal_the_table(label):
    rows, fn = TABLE_VARIANTS[label]
    result = flops.check_final_results(rows, fn) if fn else flops.check_final_results(rows)
    assert not result.passed
    secrets = without_own(TABLE_FLOPS, _own_entries(rows))
    assert not revealed(str(result), secrets), str(result)


# --------------------------------------------------------------------------- 7.1


@pytest.mark.parametrize("label", ["многоточие", "None", "ноль", "функция без return"])
def test_generations_check_answers_every_placeholder_in_russian(label):
    result = generation.check_generations(PLACEHOLDERS[label])
    assert not result.passed and "Traceback" not in str(result)
    assert any("а" <= ch <= "я" for ch in result.headline)


# --------------------------------------------------------------------------- нетронутые тетрадки

#: Лабораторные, чьи тетрадки учащихся выполняются здесь нетронутыми, и их оцениваемые числа.
NOTEBOOK_SECRETS = {
    "lab_7_2_training_flops": ([*TABLE_FLOPS], False),
    "lab_7_4_gpu_memory": (
        [
            value
            for entry in FUNCTION_CHECKS.values()
            if entry.lab == "7.4"
            for value in entry.secrets()
        ],
        True,
    ),
}


def _graded_check_cells(lab: str) -> list[tuple[str, str]]:
    """Выполняет нетронутую тетрадку учащегося; (ячейка, вердикт) каждой оцениваемой ячейки."""
    path = ROOT / "notebooks" / lab / f"{lab}.ipynb"
    notebook = json.loads(path.read_text(encoding="utf-8"))
    namespace: dict[str, Any] = {"__name__": "__lab__"}
    verdicts = []
    for cell in notebook["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        meta = cell.get("metadata", {})
        if meta.get("course7") == "install" or "grading-skip" in meta.get("tags", []):
            continue
        with redirect_stdout(io.StringIO()):
            if meta.get("nbgrader", {}).get("grade"):
                result = eval(compile(source, lab, "eval"), namespace)
                verdicts.append((meta["nbgrader"]["grade_id"], str(result)))
            else:
                exec(compile(source, lab, "exec"), namespace)
    return verdicts


@pytest.mark.parametrize("lab", NOTEBOOK_SECRETS)
def test_untouched_notebook_checks_reveal_nothing(lab, monkeypatch):
    monkeypatch.setenv("FEEDBACK_STRICT", "0")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    secrets, gib = NOTEBOOK_SECRETS[lab]
    verdicts = _graded_check_cells(lab)
    assert verdicts, "в тетрадке не нашлось оцениваемых ячеек"
    for grade_id, verdict in verdicts:
        assert "❌" in verdict, f"{grade_id}: нетронутая заготовка прошла проверку"
        assert not revealed(verdict, secrets, gib), f"{grade_id}: {verdict}"

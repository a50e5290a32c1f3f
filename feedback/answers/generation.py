"""Эталон лабораторной 7.1: вердикт проверки списка генераций (задания 1 и 2).

Здесь то, что нужно только вердикту: что считается верным списком (по одной непустой
строке на запрос, в том же порядке, каждая начинается со своего запроса) и подсказки к
типичным ошибкам (None от append, список не очищался, отрезанный запрос). Наблюдение —
описание списка учащегося — снимает :mod:`feedback.generation.check`; в песочнице
оценивания этой папки нет.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from feedback.answers.mistakes import problem
from feedback.engine.calling import LearnerProblem
from feedback.engine.result import UNKNOWN, CheckResult, failed, passed
from feedback.engine.values import revive
from feedback.formatting import plural
from feedback.generation.check import CHECK_TITLE
from feedback.generation.prompts import PROMPTS
from feedback.generation.table import _printable, _shorten


def _quote(text: str, limit: int = 60) -> str:
    return f"«{_shorten(_printable(text), limit)}»"


def _starts_with_prompt(text: str, prompt: str) -> bool:
    """Начинается ли генерация с запроса (пробелы по краям запроса не важны)."""
    return text.lstrip().startswith(prompt.strip())


def _as_generation_list(generations: Any, expected: int) -> list[Any]:
    if generations is Ellipsis:
        raise LearnerProblem(
            "список генераций ещё не заполнен: вместо него «…».",
            "Начните с пустого списка и добавляйте в него каждую генерацию: "
            "generations.append(text).",
        )
    if generations is None:
        raise problem(
            "generation.append_result_assigned",
            "вместо списка генераций получено None.",
            "Частая причина — присваивание результата append: generations = generations."
            "append(text). Метод append ничего не возвращает — пишите просто "
            "generations.append(text).",
        )
    if isinstance(generations, str | bytes):
        raise problem(
            "generation.single_string",
            "получена одна строка, а нужен список из "
            f"{plural(expected, 'строки', 'строк', 'строк')} — по одной на запрос.",
            f"Начало строки: {_quote(str(generations))}.",
            "Добавляйте каждую генерацию в список: generations.append(text).",
        )
    if isinstance(generations, dict) or not isinstance(generations, list | tuple):
        raise LearnerProblem(
            f"нужен список строк, а получен объект типа {type(generations).__name__}.",
            "Сохраняйте генерации в список: generations = [] перед циклом и "
            "generations.append(text) внутри.",
        )
    return list(generations)


#: Сколько строк с одной и той же ошибкой показывать по отдельности.
SHOWN_PROBLEMS = 3


def _numbers(numbers: Sequence[int]) -> str:
    return "№ " + ", ".join(map(str, numbers))


#: Коды ошибок для генераций не того типа (остальные типы — неизвестная ошибка).
_TYPE_MISTAKES = {
    "bytes": "generation.bytes_not_decoded",
    "list": "generation.list_appended",
    "tuple": "generation.tuple_appended",
}


def _item_problems(items: list[Any], prompts: list[str]) -> tuple[list[str], list[int], str | None]:
    """Ошибки в отдельных генерациях (одинаковые сгруппированы), номера «голых» запросов и
    код первой известной ошибки (в порядке текста)."""
    not_strings: dict[str, list[int]] = {}
    empty: list[int] = []
    misplaced: list[str] = []
    unprompted: list[str] = []
    bare: list[int] = []
    for number, (text, prompt) in enumerate(zip(items, prompts, strict=True), start=1):
        if not isinstance(text, str):
            not_strings.setdefault(type(text).__name__, []).append(number)
        elif not text.strip():
            empty.append(number)
        elif not _starts_with_prompt(text, prompt):
            other = [
                j
                for j, candidate in enumerate(prompts, start=1)
                if j != number and _starts_with_prompt(text, candidate)
            ]
            if other:
                misplaced.append(
                    f"Генерация №{number} начинается с запроса №{other[0]}, а не со своего "
                    f"{_quote(prompt, 40)}: порядок перепутан или в цикле используется "
                    "не та переменная."
                )
            else:
                unprompted.append(
                    f"Генерация №{number} не начинается со своего запроса {_quote(prompt, 40)}; "
                    f"её начало: {_quote(text, 50)}."
                )
        elif text.strip() == prompt.strip():
            bare.append(number)
    problems = []
    mistakes = [_TYPE_MISTAKES.get(type_name) for type_name in not_strings]
    if misplaced:
        mistakes.append("generation.wrong_prompt")
    if unprompted:
        mistakes.append("generation.prompt_stripped")
    for type_name, numbers in not_strings.items():
        hint = {
            "bytes": " Раскодируйте: text.decode('utf-8').",
            "list": " Похоже, в список добавлен список — добавляйте саму строку.",
            "tuple": " Похоже, в список добавлен кортеж — добавляйте саму строку.",
        }.get(type_name, "")
        if len(numbers) == 1:
            problems.append(
                f"Генерация №{numbers[0]} — не строка, а объект типа {type_name}.{hint}"
            )
        else:
            problems.append(
                f"Генерации {_numbers(numbers)} — не строки, а объекты типа {type_name}.{hint}"
            )
    if len(empty) == 1:
        problems.append(f"Генерация №{empty[0]} — пустая строка.")
    elif empty:
        problems.append(f"Генерации {_numbers(empty)} — пустые строки.")
    for group in (misplaced, unprompted):
        problems += group[:SHOWN_PROBLEMS]
        if len(group) > SHOWN_PROBLEMS:
            rest = len(group) - SHOWN_PROBLEMS
            problems.append(
                f"…и ещё {plural(rest, 'генерация', 'генерации', 'генераций')} с той же ошибкой."
            )
    if unprompted:
        problems.append(
            "Нужен полный текст, как его возвращает generation.generate или model.generate: "
            "запрос и продолжение модели. Если вы отрезали запрос (strip_prompt=True), "
            "уберите это."
        )
    return problems, bare, next((known for known in mistakes if known), None)


def judge_generations(observation: Any, prompts: Sequence[str] = PROMPTS) -> CheckResult:
    """Вердикт по списку генераций (описанному :func:`feedback.engine.values.describe`)."""
    prompts = list(prompts)
    expected = len(prompts)
    items = _as_generation_list(revive(observation), expected)
    if not items:
        raise LearnerProblem(
            "список генераций пуст: задача ещё не реализована — цикл не написан или не выполнялся.",
            f"Нужно {plural(expected, 'строка', 'строки', 'строк')}: пройдите циклом по "
            "запросам и добавьте в список "
            "генерацию для каждого.",
        )
    if len(items) != expected:
        details = [
            f"Ожидалось {plural(expected, 'строка', 'строки', 'строк')} — по одной на запрос."
        ]
        mistake = None
        if len(items) > expected and len(items) % expected == 0:
            mistake = "generation.list_not_cleared"
            details.append(
                "Похоже, ячейку выполнили несколько раз, а список не очищался: создайте его "
                "заново (generations = []) в той же ячейке, перед циклом."
            )
        elif len(items) < expected:
            mistake = "generation.missing_generations"
            details.append(
                "Проверьте, что цикл проходит по всем запросам и append стоит внутри цикла."
            )
        raise problem(
            mistake or UNKNOWN,
            f"в списке {plural(len(items), 'генерация', 'генерации', 'генераций')}, "
            f"а запросов {expected}.",
            *details,
        )
    problems, bare, mistake = _item_problems(items, prompts)
    if problems:
        return failed(CHECK_TITLE, "в списке есть ошибки.", *problems, mistake=mistake or UNKNOWN)
    if len(bare) == expected:
        return failed(
            CHECK_TITLE,
            "в списке сами запросы без продолжений.",
            "Добавляйте в список результат генерации, а не сам запрос.",
            mistake="generation.prompts_only",
        )
    details = []
    if bare:
        details.append(
            "Без продолжения: "
            + _numbers(bare)
            + " — модель сразу выдала конец текста. Так бывает, но проверьте параметры."
        )
    return passed(
        CHECK_TITLE,
        f"{plural(expected, 'генерация', 'генерации', 'генераций')} на месте, каждая "
        "продолжает свой запрос.",
        *details,
    )

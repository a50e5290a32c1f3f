"""Значения выражений: что сканер помнит о выражении и как значения складываются.

Значение выражения — множество строк (словарь ниже). Здесь — сам этот словарь и действия
над множествами значений, которые не зависят от тетрадки: склейка строк и путей,
перебор и распаковка контейнера, отбор, что помнить, когда значений слишком много.
Отдельно от привязок (:mod:`~feedback.teacher.review.bindings`), потому что тем же
словарём пользуется и отчёт (:mod:`~feedback.teacher.review.reporter`): ему нужно
узнать модуль курса или опасный путь, а не вычислять значения.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from feedback.teacher.review.rules import CODE_FILE, COURSE, SENSITIVE, reason

MAX_VALUES = 48  # столько значений имени помним, не больше (важные — в первую очередь)
UNKNOWN = "*"  # неизвестная часть строки
EMPTY: frozenset[str] = frozenset()
MARKS = ("def:", "getter:", "class:")


# Значение выражения — множество строк:
#   "sys._getframe", "feedback.flops"  — модуль или атрибут по полному пути
#                                       ("()" в конце части — результат вызова);
#   "?"                                — модуль, имя которого неизвестно;
#   "'текст"                           — строка (неизвестные части — "*");
#   "%папка/файл"                      — путь pathlib;
#   "[]…"                              — контейнер с таким элементом;
#   "def:N"                            — своя функция учащегося;
#   "class:N"                          — свой класс учащегося или его экземпляр;
#   "getter:имя"                       — operator.attrgetter("имя").


def is_dotted(value: str) -> bool:
    return bool(value) and value[0] not in "'%[?*" and not value.startswith(MARKS)


def is_course(value: str) -> bool:
    return value == COURSE or value.startswith(COURSE + ".")


def top_module(value: str) -> str:
    return value.split(".", 1)[0]


@lru_cache(maxsize=4096)
def danger(value: str) -> str | None:
    """Причина, по которой обращение к этому значению — находка (:func:`rules.reason`)."""
    return reason(value) if is_dotted(value) else None


def is_sensitive(value: str) -> bool:
    return value == "?" or (is_dotted(value) and top_module(value) in SENSITIVE)


def join(*choices: Iterable[str], sep: str = "") -> set[str]:
    """Все сочетания частей (не больше нескольких десятков)."""
    result = {""}
    for choice in choices:
        parts = list(choice) or [UNKNOWN]
        result = {(a + sep + b if a else b)[:300] for a in result for b in parts[:6]}
        if len(result) > MAX_VALUES:
            result = set(sorted(result)[:MAX_VALUES])
    return result


def strings(values: Iterable[str]) -> list[str]:
    """Строки и пути среди значений (без пометки вида)."""
    return [value[1:] for value in values if value[:1] in ("'", "%")]


def element(values: Iterable[str]) -> set[str]:
    """Что даёт перебор значения."""
    result = set()
    for value in values:
        if value.startswith("[]"):
            result.add(value[2:])
        elif value == "sys.modules" or value[:1] == "'":
            result.add("'" + UNKNOWN)
        elif is_dotted(value) and not is_course(value) and danger(value):
            result.add(value + "[]")
    return result


def unpack(values: Iterable[str]) -> set[str]:
    """Что получает каждое имя при распаковке ``a, b = значение``."""
    return {value[2:] if value.startswith("[]") else value for value in values}


@lru_cache(maxsize=8192)
def rank(value: str) -> int:
    """Что важнее помнить, если значений слишком много: модули курса и опасные пути — всегда.

    Иначе имя можно было бы «забить» десятками безобидных строк, чтобы ``flops`` в нём
    потерялся.
    """
    core = value
    while core.startswith("[]"):
        core = core[2:]
    if core[:1] in ("'", "%"):
        return 0 if CODE_FILE.search(core[1:]) else 2
    if is_course(core) or core == "?" or danger(core):
        return 0
    return 1


def pack(values: Iterable[str]) -> set[str]:
    """Контейнер с такими элементами (вложенность — не глубже трёх уровней)."""
    return {"[]" + v for v in values if not v.startswith("[][][]")}


def limit(values: set[str]) -> frozenset[str]:
    if len(values) > MAX_VALUES:
        important = sorted(v for v in values if not rank(v))[: 2 * MAX_VALUES]
        rest = sorted(v for v in values if rank(v))[: max(0, MAX_VALUES - len(important))]
        values = set(important + rest)
    return frozenset(values)

"""Ответ учащегося как данные: описание в JSON и обратно.

Проверка курса делится на две части: *наблюдение* (что вернула функция учащегося,
какие веса у модели) и *вердикт* по наблюдению. В тетрадке обе части идут подряд, а
при оценивании наблюдение снимается в песочнице учащегося, а вердикт выносится вне
её — там, куда код учащегося не дотянется. Между ними ходит только JSON, и этот
модуль переводит в него любое значение Python и восстанавливает из него значение,
на котором вердикт даст тот же ответ: число остаётся числом, строка — строкой, а
объект неизвестного типа — объектом с тем же именем типа.
"""

from __future__ import annotations

import builtins
import math
import numbers
import re
from typing import Any

#: Сколько символов строки и элементов списка сохраняет описание.
MAX_TEXT = 4000
MAX_ITEMS = 200
MAX_DEPTH = 6


def describe(value: Any, depth: int = 0) -> dict[str, Any]:
    """JSON-описание значения: ``{"t": тип, ...}``.

    Смотрит на настоящий тип значения (``type``), а не на то, что объект о себе
    говорит; объект, который падает при чтении, описывается просто именем типа.
    """
    try:
        return _describe(value, depth)
    except Exception:
        return {"t": "object", "type": type(value).__name__}


def _describe(value: Any, depth: int) -> dict[str, Any]:
    kind = type(value)
    if value is Ellipsis:
        return {"t": "ellipsis"}
    if value is None:
        return {"t": "none"}
    if kind is bool or (kind.__name__ == "bool_" and _is_array_library(kind)):
        return {"t": "bool", "v": bool(value)}
    if issubclass(kind, str):
        return {"t": "str", "v": str.__str__(value)[:MAX_TEXT], "len": str.__len__(value)}
    if issubclass(kind, bytes):
        return {
            "t": "bytes",
            "v": bytes.__getitem__(value, slice(MAX_TEXT)).decode("utf-8", "replace"),
        }
    if _is_plain_number(kind):
        if issubclass(kind, numbers.Integral):
            return {"t": "int", "v": int(value)}
        return {"t": "float", "v": _float_to_json(float(value))}
    if issubclass(kind, numbers.Number):
        return {"t": "object", "type": kind.__name__, LOOKALIKE: "число"}
    if depth >= MAX_DEPTH:
        return {"t": "object", "type": kind.__name__}
    if issubclass(kind, list | tuple):
        base = tuple if issubclass(kind, tuple) else list
        length = base.__len__(value)
        items = [
            describe(base.__getitem__(value, i), depth + 1) for i in range(min(length, MAX_ITEMS))
        ]
        return {"t": base.__name__, "items": items, "len": length}
    if issubclass(kind, dict):
        pairs = list(dict.items(value))[:MAX_ITEMS]
        return {
            "t": "dict",
            "items": [[describe(k, depth + 1), describe(v, depth + 1)] for k, v in pairs],
            "len": dict.__len__(value),
        }
    if issubclass(kind, set | frozenset):
        return {"t": "set", "len": len(value)}
    if _is_dataframe(value):
        return {"t": "dataframe", "rows": describe(value.to_dict("records"), depth + 1)}
    if not _is_array_library(kind) and (
        kind.__name__ in ("DataFrame", "ndarray", "Array", "Tensor")
        or (hasattr(value, "item") and hasattr(value, "shape"))
    ):
        return {"t": "object", "type": kind.__name__, LOOKALIKE: "массив или таблица"}
    size = getattr(value, "size", None) if _is_array_library(kind) else None
    if type(size) is int and hasattr(value, "item") and hasattr(value, "shape"):
        if size == 1:
            return describe(value.item(), depth + 1)
        return {"t": "array", "type": kind.__name__, "size": size}
    return {"t": "object", "type": kind.__name__}


#: Пометка описания: объект учащегося выдаёт себя за число, массив или таблицу
#: (подкласс float, свой «DataFrame»). Вердикт не засчитает его, а оценивание покажет
#: работу преподавателю.
LOOKALIKE = "lookalike"


def lookalikes(description: Any, depth: int = 0) -> list[str]:
    """Имена типов-подделок в описании (или в наблюдении, где оно вложено)."""
    if depth > 2 * MAX_DEPTH + 4:
        return []
    if isinstance(description, dict):
        found = [str(description.get("type"))] if LOOKALIKE in description else []
        for item in description.values():
            found += lookalikes(item, depth + 1)
        return found
    if isinstance(description, list):
        return [name for item in description for name in lookalikes(item, depth + 1)]
    return []


#: Библиотеки, чьим числам, массивам и таблицам описание верит: их методы ``item``,
#: ``to_dict`` и ``__float__`` не написаны учащимся.
ARRAY_LIBRARIES = ("numpy", "pandas", "jax", "jaxlib", "tensorflow", "keras", "torch", "ml_dtypes")


def _is_array_library(kind: type) -> bool:
    module = getattr(kind, "__module__", "") or ""
    return module.split(".")[0] in ARRAY_LIBRARIES


def _is_plain_number(kind: type) -> bool:
    """Настоящее число: ``int`` и ``float`` сами по себе или число numpy.

    Подкласс ``float`` или ``int``, написанный учащимся, числом не считается: его
    ``__float__`` может вернуть что угодно, и описание называет его настоящий тип.
    """
    if kind in (int, float):
        return True
    return issubclass(kind, numbers.Real) and _is_array_library(kind)


def _is_dataframe(value: Any) -> bool:
    kind = type(value)
    return kind.__name__ == "DataFrame" and _is_array_library(kind) and hasattr(value, "to_dict")


def _float_to_json(number: float) -> float | str:
    if math.isnan(number):
        return "nan"
    if math.isinf(number):
        return "inf" if number > 0 else "-inf"
    return number


def _float_from_json(raw: Any) -> float:
    if isinstance(raw, str):
        return float(raw)  # "nan", "inf", "-inf"
    return float(raw)


class Opaque:
    """Заместитель объекта, который нельзя перенести: хранит только имя типа и размер."""

    def __init__(self, size: int | None = None) -> None:
        if size is not None:
            self.size = size
            self.shape = (size,)

    def __repr__(self) -> str:
        return f"<{type(self).__name__}>"


_IDENTIFIER = re.compile(r"[^0-9A-Za-z_]")


def _opaque(type_name: Any, size: int | None = None) -> Opaque:
    name = _IDENTIFIER.sub("_", str(type_name))[:60] or "object"
    if name[0].isdigit():
        name = "_" + name
    return type(name, (Opaque,), {})(size)


def revive(data: Any, depth: int = 0) -> Any:
    """Значение из описания :func:`describe` (для вердикта вне песочницы).

    Описание может прийти испорченным: всё, что не похоже на описание, становится
    заместителем объекта, а не исключением.
    """
    if not isinstance(data, dict) or depth > MAX_DEPTH + 1:
        return _opaque("object")
    kind = data.get("t")
    try:
        if kind == "ellipsis":
            return Ellipsis
        if kind == "none":
            return None
        if kind == "bool":
            return bool(data["v"])
        if kind == "str":
            return str(data["v"])
        if kind == "bytes":
            return str(data["v"]).encode("utf-8")
        if kind == "int":
            return int(data["v"])
        if kind == "float":
            return _float_from_json(data["v"])
        if kind in ("list", "tuple"):
            items = [revive(item, depth + 1) for item in data["items"]]
            return tuple(items) if kind == "tuple" else items
        if kind == "dict":
            return {_hashable(revive(k, depth + 1)): revive(v, depth + 1) for k, v in data["items"]}
        if kind == "set":
            return set()
        if kind == "dataframe":
            return revive(data["rows"], depth + 1)
        if kind == "array":
            return _opaque(data.get("type", "ndarray"), int(data.get("size", 0)))
        if kind == "object":
            return _opaque(data.get("type", "object"))
    except (KeyError, TypeError, ValueError):
        pass
    return _opaque("object")


def _hashable(key: Any) -> Any:
    try:
        hash(key)
    except TypeError:
        return repr(key)
    return key


# --------------------------------------------------------------------------- исключения


def describe_error(error: BaseException) -> dict[str, Any]:
    """Описание исключения, которым завершилась функция учащегося."""
    try:
        message = str(error)
    except Exception:
        message = ""
    return {"t": "raised", "type": type(error).__name__, "message": message[:500]}


def revive_error(data: dict[str, Any]) -> BaseException:
    """Исключение с тем же именем типа и тем же текстом, что описано в ``data``.

    Встроенные типы (``TypeError``, ``NotImplementedError``) восстанавливаются как
    их подклассы, чтобы вердикт узнал их так же, как в тетрадке.
    """
    name = _IDENTIFIER.sub("_", str(data.get("type", "Exception")))[:60] or "Exception"
    message = str(data.get("message", ""))
    base = getattr(builtins, name, None)
    if not (isinstance(base, type) and issubclass(base, Exception)):
        base = Exception
    revived = type(name, (base,), {"__str__": lambda self: message})
    return revived(message)

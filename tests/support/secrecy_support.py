"""Помощь тестам тайны проверок (issue 42): в каком виде верное число могло попасть в вердикт.

Проверка не должна называть учащемуся оцениваемое значение — ни до попытки, ни после. Число
может оказаться в тексте в любой записи: «2,18·10¹⁸», «2.178e+18», «2,178e18», «14,9 ГиБ»,
«14.90», «32 768 байт». :func:`renderings` перечисляет записи числа, округлённого до 2–6
значащих цифр (если округление отличается от числа не больше чем на 0,5 %: «15» вместо 14,9
уже не выдаёт ответ, а встречается в тексте по другим причинам), а :func:`revealed` ищет их
в тексте как отдельные числа — «2,5» не находится внутри «2560» или «12,5».
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable

from feedback.formatting import (
    BYTES_PER_GIB,
    format_flops,
    format_gib,
    format_number,
    format_plain,
    format_scientific,
    format_significant,
)

#: Насколько округлённая запись может отличаться от числа, чтобы ещё выдавать его.
CLOSE_ENOUGH = 5e-3
_SPACES = ("\u202f", "\u00a0", " ")


def _decimals(value: float, digits: int) -> int:
    if value == 0:
        return 0
    return max(digits - 1 - math.floor(math.log10(abs(value))), 0)


def renderings(value: float, gib: bool = False) -> set[str]:
    """Записи числа, по которым его можно узнать; ``gib`` — объём в ГиБ (ещё и в байтах)."""
    found: set[str] = set()
    for digits in range(2, 7):
        rounded = float(f"{value:.{digits}g}")
        if value == 0 or abs(rounded - value) > CLOSE_ENOUGH * abs(value):
            continue
        texts = {
            format_number(rounded, digits),
            format_scientific(rounded, digits),
            format_significant(rounded, digits),
            format_flops(rounded, digits).split(" FLOPs")[0],
            format_gib(rounded, digits).split(" ГиБ")[0],
            format_plain(rounded, _decimals(rounded, digits)),
            f"{rounded:.{digits}g}",
            f"{rounded:.{digits - 1}e}",
            f"{rounded:.{max(digits - 1, 0)}e}".replace("e+", "e"),
            f"{rounded:g}",
            repr(rounded),
        }
        mantissa, _, exponent = f"{rounded:.{digits - 1}e}".partition("e")
        if "." in mantissa:
            mantissa = mantissa.rstrip("0").rstrip(".")
        texts.add(f"{mantissa}e{int(exponent)}")  # «8e-4», «2.178e18»
        for text in texts:
            found |= {text, text.replace(",", "."), text.replace("e+", "e")}
    if gib:
        whole = round(value * BYTES_PER_GIB)
        found |= {str(whole), format_plain(whole, 0)}
    # Записи короче двух цифр («2», «·10¹») ничего не выдают и встречаются где угодно.
    return {text for text in found if sum(ch.isdigit() for ch in text) >= 2}


def _pattern(text: str) -> re.Pattern[str]:
    body = "".join("[\u202f\u00a0 ]" if ch in _SPACES else re.escape(ch) for ch in text)
    return re.compile(rf"(?<![\d.,⁰¹²³⁴⁵⁶⁷⁸⁹]){body}(?![\d⁰¹²³⁴⁵⁶⁷⁸⁹]|[.,]\d)")


def revealed(message: str, secrets: Iterable[float], gib: bool = False) -> list[str]:
    """Записи секретных чисел, найденные в тексте вердикта (пусто — ничего не выдано)."""
    hits = []
    for secret in secrets:
        for text in sorted(renderings(secret, gib)):
            if _pattern(text).search(message):
                hits.append(f"{secret!r} как «{text}»")
    return hits


def without_own(secrets: Iterable[float], own: Iterable[float], gib: bool = False) -> list[float]:
    """Секреты без тех, что учащийся получил сам: своё число вердикт может повторить.

    ``gib`` — секреты в ГиБ: своим считается и число, равное секрету в байтах (функция
    вернула байты, и вердикт называет их — это её собственный ответ).
    """
    own = [value for value in own if isinstance(value, int | float) and math.isfinite(value)]
    scales = (1, BYTES_PER_GIB) if gib else (1,)
    return [
        secret
        for secret in secrets
        if not any(
            math.isclose(secret * scale, value, rel_tol=CLOSE_ENOUGH)
            for value in own
            for scale in scales
        )
    ]

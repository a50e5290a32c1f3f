"""Числа по-русски: десятичная запятая, узкий пробел между тысячами, «млн/млрд/трлн».

Здесь же перевод байтов в гибибайты. В курсе «ГБ» из оригинала всегда считается как
байты / 1024³, то есть это ГиБ (гибибайт, 1 073 741 824 байта), а не ГБ (10⁹ байт):
разница около 7 %, и её легко не заметить.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping

THOUSANDS_SEP = "\u202f"  # узкий неразрывный пробел: «30 000»
BYTES_PER_GIB = 1024**3
_SUPERSCRIPTS = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")
_WORDS = ((1e12, "трлн"), (1e9, "млрд"), (1e6, "млн"))
#: Формы слова «параметр» для :func:`plural`: «1 параметр», «2 параметра», «5 параметров».
PARAMETERS = ("параметр", "параметра", "параметров")


def bytes_to_gb(num_bytes: float) -> float:
    """Переводит байты в ГиБ: делит на 1024³ (не на 10⁹)."""
    return num_bytes / BYTES_PER_GIB


def _group_thousands(integer_digits: str) -> str:
    if len(integer_digits) <= 4:  # по русским правилам «1024», но «30 000»
        return integer_digits
    groups = []
    while len(integer_digits) > 3:
        groups.insert(0, integer_digits[-3:])
        integer_digits = integer_digits[:-3]
    groups.insert(0, integer_digits)
    return THOUSANDS_SEP.join(groups)


def format_plain(value: float, decimals: int = 2) -> str:
    """Число с фиксированным числом знаков после запятой: ``12345.6 → "12 345,6"``.

    Незначащие нули в дробной части убираются.
    """
    text = f"{abs(value):.{decimals}f}"
    integer, _, fraction = text.partition(".")
    fraction = fraction.rstrip("0")
    sign = "−" if value < 0 and float(text) != 0 else ""
    result = sign + _group_thousands(integer)
    return f"{result},{fraction}" if fraction else result


def _whole(value: float) -> str:
    """Целое число с разделителем тысяч: ``16384 → "16 384"``."""
    return format_plain(value, 0)


def _significant_decimals(value: float, digits: int) -> int:
    if value == 0:
        return 0
    magnitude = math.floor(math.log10(abs(value)))
    return max(digits - 1 - magnitude, 0)


def format_significant(value: float, digits: int = 3) -> str:
    """Число с ``digits`` значащими цифрами: ``0.000030517 → "0,0000305"``.

    Целую часть не округляет: ``32768 → "32 768"``, а не «32 800».
    """
    if abs(value) >= 10 ** (digits - 1):
        return format_plain(value, _significant_decimals(value, digits))
    rounded = float(f"{value:.{digits}g}")
    return format_plain(rounded, _significant_decimals(rounded, digits))


def _not_a_number(value: object) -> str | None:
    """Текст для значения, которое нельзя показать как число (``…``, строка, None)."""
    if value is Ellipsis:
        return "…"
    if isinstance(value, bool):
        return str(value)
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(number):
        return "бесконечность" if math.isinf(number) else "NaN"
    return None


_FROM_SUPERSCRIPTS = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")
_SCALES = {"тыс": 1e3, "млн": 1e6, "млрд": 1e9, "трлн": 1e12}
_SPACES = (" ", "\u00a0", THOUSANDS_SEP, "\u2009", "_")


def parse_number(text: str) -> float | None:
    """Число из строки так, как его пишут люди и печатает этот модуль; иначе ``None``.

    Понимает ``"110e6"``, ``"3.3e9"``, ``"3,3 млрд"``, ``"30 000"`` (с любым пробелом
    между тысячами), ``"2,18·10¹⁸"``, ``"−1,5 млн"``. Нужна там, где число дано
    учащемуся готовым, а он мог записать его строкой, например отформатировав для
    таблицы. NaN и бесконечность числом не считаются.
    """
    cleaned = str(text).strip().replace("−", "-").replace(",", ".")
    for space in _SPACES:
        cleaned = cleaned.replace(space, "")
    scale = 1.0
    for word, factor in _SCALES.items():
        if cleaned.endswith(word):
            cleaned, scale = cleaned[: -len(word)], factor
            break
    for times in ("·10", "×10", "*10"):
        if times in cleaned:
            mantissa, _, power = cleaned.partition(times)
            power = power.lstrip("^").lstrip("*").translate(_FROM_SUPERSCRIPTS)
            cleaned = f"{mantissa or 1}e{power}"
            break
    try:
        number = float(cleaned) * scale
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def format_scientific(value: float, digits: int = 3) -> str:
    """Научная запись по-русски: ``2.178e18 → "2,18·10¹⁸"``."""
    if (text := _not_a_number(value)) is not None:
        return text
    value = float(value)
    if value == 0:
        return "0"
    mantissa, _, exponent = f"{value:.{digits - 1}e}".partition("e")
    mantissa = mantissa.rstrip("0").rstrip(".").replace(".", ",").replace("-", "−")
    power = str(int(exponent)).translate(_SUPERSCRIPTS)
    return f"{mantissa}·10{power}"


def format_number(value: float, digits: int = 3) -> str:
    """Большое или маленькое число в привычном виде.

    До миллиона — цифрами с разделителем тысяч («30 000»), от миллиона до
    квадриллиона — словами («3,3 млрд», «1 трлн»), дальше и совсем малые —
    научной записью («2,53·10²⁴»).
    """
    if (text := _not_a_number(value)) is not None:
        return text
    value = float(value)
    size = abs(value)
    if size == 0:
        return "0"
    if size >= 1e15 or size < 1e-4:
        return format_scientific(value, digits)
    # Округление может перейти в следующий разряд: 999 885 952 → «1 млрд», а не «1000 млн».
    shown_size = float(f"{size:.{digits}g}") if size >= 1e6 else size
    for scale, word in _WORDS:
        if shown_size >= scale:
            return f"{format_significant(value / scale, digits)} {word}"
    if value == int(value):
        return format_plain(value, 0)
    return format_significant(value, digits)


def plural_form(shown: str, one: str, few: str, many: str) -> str:
    """Форма слова, которая согласуется с числом так, как оно напечатано.

    Смотрит на текст числа, а не на само значение: «2,0» напечатано как «2» — значит,
    «2 раза». Целые — по последним цифрам: «1 случай», «2 случая», «5 случаев»,
    «11 случаев», «21 случай», «22 случая», «111 случаев». Дробное число требует
    родительного падежа единственного числа, который совпадает с формой ``few``:
    «1,5 раза», «0,5 балла», «2,5 токена». После «млн», «млрд», «трлн» и степени
    десяти слово всегда во множественном числе: «1 млрд параметров», «10¹⁸ операций».
    """
    text = shown.strip()
    if any(word in text for _, word in _WORDS) or "·10" in text:
        return many
    if "," in text or "." in text:
        return few
    digits = "".join(ch for ch in text if ch.isdigit())
    if not digits:
        return many
    count = int(digits[-3:])
    if count % 10 == 1 and count % 100 != 11:
        return one
    if 2 <= count % 10 <= 4 and not 12 <= count % 100 <= 14:
        return few
    return many


def plural(
    value: float,
    one: str,
    few: str,
    many: str,
    formatter: Callable[[float], str] = format_number,
) -> str:
    """Число со словом в нужной форме: «1 случай», «3 случая», «110 464 параметра».

    Число печатает ``formatter`` (по умолчанию :func:`format_number`), а форму слова
    выбирает :func:`plural_form` по напечатанному: «1,5 раза», «3,88 млрд параметров».
    Формы — в том падеже, который нужен во фразе: ``one`` для 1 и 21, ``few`` для 2–4
    и дробных, ``many`` для 5–20 и 0.
    """
    shown = formatter(value)
    return f"{shown} {plural_form(shown, one, few, many)}"


def format_flops(flops: float, digits: int = 3) -> str:
    """Число операций: ``1.8e14 → "1,8·10¹⁴ FLOPs (180 трлн)"``."""
    if (text := _not_a_number(flops)) is not None:
        return text
    text = f"{format_scientific(flops, digits)} FLOPs"
    if 1e6 <= abs(flops) < 1e15:
        text += f" ({format_number(flops, digits)})"
    return text


def format_gib(gib: float, digits: int = 3) -> str:
    """Объём памяти в ГиБ; для крошечных объёмов добавляет байты."""
    if (text := _not_a_number(gib)) is not None:
        return text
    shown = format_significant(gib, digits) if abs(gib) < 1e6 else format_number(gib, digits)
    text = f"{shown} ГиБ"
    if 0 < abs(gib) < 0.01:
        text += f" ({plural(gib * BYTES_PER_GIB, 'байт', 'байта', 'байт', _whole)})"
    return text


def format_pair(
    expected: float, got: float, formatter: Callable[..., str] = format_number
) -> tuple[str, str]:
    """Форматирует два числа с таким числом цифр, чтобы их различие было видно."""
    for digits in range(3, 13):
        pair = formatter(expected, digits=digits), formatter(got, digits=digits)
        if pair[0] != pair[1]:
            return pair
    return pair


def memory_table_html(breakdown: Mapping[str, float], title: str | None = None) -> str:
    """HTML-таблица «статья — ГиБ — доля» для разбивки памяти."""
    total = sum(breakdown.values())
    rows = "".join(
        f"<tr><td style='text-align:left'>{html.escape(name)}</td>"
        f"<td style='text-align:right'>{html.escape(format_gib(gib))}</td>"
        f"<td style='text-align:right'>{format_plain(100 * gib / total, 1) if total else 0} %</td>"
        "</tr>"
        for name, gib in breakdown.items()
    )
    caption = f"<caption>{html.escape(title)}</caption>" if title else ""
    return (
        f"<table>{caption}<thead><tr><th>Что хранится</th><th>Память</th><th>Доля</th></tr>"
        f"</thead><tbody>{rows}<tr><td style='text-align:left'><b>Итого</b></td>"
        f"<td style='text-align:right'><b>{html.escape(format_gib(total))}</b></td>"
        "<td style='text-align:right'>100 %</td></tr></tbody></table>"
    )


def display_memory(breakdown: Mapping[str, float], title: str | None = None) -> None:
    """Показывает разбивку памяти (значения в ГиБ) таблицей с итогом.

    В тетрадке — HTML-таблица, в терминале — выровненный текст.
    """
    from IPython.display import display

    class _Table:
        def _repr_html_(self) -> str:
            return memory_table_html(breakdown, title)

        def __repr__(self) -> str:
            width = max(len(name) for name in breakdown) if breakdown else 10
            lines = [title] if title else []
            lines += [f"{name:<{width}}  {format_gib(gib):>14}" for name, gib in breakdown.items()]
            lines.append(f"{'Итого':<{width}}  {format_gib(sum(breakdown.values())):>14}")
            return "\n".join(lines)

    display(_Table())

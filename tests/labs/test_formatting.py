"""Русское форматирование чисел и памяти."""

import pytest

from feedback import formatting
from feedback.formatting import (
    bytes_to_gb,
    format_flops,
    format_gib,
    format_number,
    format_pair,
    format_plain,
    format_scientific,
    parse_number,
    plural,
    plural_form,
)

NNBSP = "\u202f"


def test_bytes_to_gb_divides_by_gibibyte():
    assert bytes_to_gb(1024**3) == 1.0
    assert bytes_to_gb(16e9) == pytest.approx(14.901161, rel=1e-6)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (30_000, f"30{NNBSP}000"),
        (1024, "1024"),
        (3.3e9, "3,3 млрд"),
        (999_885_952, "1 млрд"),  # округление переходит в следующий разряд
        (999_999, f"999{NNBSP}999"),  # до миллиона — все цифры
        (999_999_999_999, "1 трлн"),
        (1e12, "1 трлн"),
        (1.5e6, "1,5 млн"),
        (14.901161, "14,9"),
        (2.527e24, "2,53·10²⁴"),
        (3.0517578125e-05, "3,05·10⁻⁵"),
        (0, "0"),
        (-1500000, "−1,5 млн"),
        (float("nan"), "NaN"),
    ],
)
def test_format_number_uses_russian_conventions(value, text):
    assert format_number(value) == text


def test_scientific_and_flops():
    assert format_scientific(2.178e18) == "2,18·10¹⁸"
    assert format_flops(1.8e14) == "1,8·10¹⁴ FLOPs (180 трлн)"
    assert format_flops(2.527e24) == "2,53·10²⁴ FLOPs"


def test_format_gib_shows_bytes_for_tiny_amounts():
    assert format_gib(14.901161) == "14,9 ГиБ"
    assert format_gib(32768 / 1024**3) == f"0,0000305 ГиБ (32{NNBSP}768 байт)"
    assert format_gib(32768) == f"32{NNBSP}768 ГиБ"


def test_format_pair_adds_digits_until_values_differ():
    expected, got = format_pair(14.901161, 14.9, formatting.format_gib)
    assert expected != got
    assert expected.startswith("14,901")


def test_display_memory_shows_table_with_total(capsys):
    formatting.display_memory({"Веса": 14.9, "Градиенты": 14.9}, title="fp32")
    text = capsys.readouterr().out
    assert "Итого" in text and "29,8 ГиБ" in text and "fp32" in text
    html = formatting.memory_table_html({"Веса": 1.0, "Adam": 3.0})
    assert "75 %" in html and "<caption>" not in html


@pytest.mark.parametrize("formatter", [format_number, format_scientific, format_flops, format_gib])
@pytest.mark.parametrize(
    ("value", "text"), [(..., "…"), (None, "None"), ("abc", "abc"), (float("inf"), "бесконечность")]
)
def test_formatters_never_fail_on_non_numbers(formatter, value, text):
    assert formatter(value) == text


@pytest.mark.parametrize(
    ("count", "text"),
    [
        (0, "0 случаев"),
        (1, "1 случай"),
        (2, "2 случая"),
        (3, "3 случая"),
        (5, "5 случаев"),
        (11, "11 случаев"),
        (12, "12 случаев"),
        (14, "14 случаев"),
        (21, "21 случай"),
        (22, "22 случая"),
        (25, "25 случаев"),
        (111, "111 случаев"),
        (112, "112 случаев"),
        (121, "121 случай"),
        (1024, "1024 случая"),
        (110_464, "110\u202f464 случая"),
        (1.5, "1,5 случая"),  # дробное — родительный падеж единственного числа
        (0.5, "0,5 случая"),
        (21.3, "21,3 случая"),
        (2.0, "2 случая"),  # напечатано как целое — и согласуется как целое
        (1e9, "1 млрд случаев"),  # после «млрд» — всегда множественное число
        (21e6, "21 млн случаев"),
        (3.88e9, "3,88 млрд случаев"),
    ],
)
def test_plural_agrees_with_the_number_as_printed(count, text):
    assert plural(count, "случай", "случая", "случаев") == text


@pytest.mark.parametrize(
    ("ratio", "text"),
    [
        (1.5, "в 1,5 раза"),
        (2, "в 2 раза"),
        (5, "в 5 раз"),
        (11, "в 11 раз"),
        (21, "в 21 раз"),
        (22, "в 22 раза"),
        (25, "в 25 раз"),
        (111, "в 111 раз"),
    ],
)
def test_plural_with_own_formatter(ratio, text):
    assert "в " + plural(ratio, "раз", "раза", "раз", lambda v: format_plain(v, 1)) == text


@pytest.mark.parametrize(
    ("shown", "form"),
    [
        ("1", "one"),
        ("21", "one"),
        ("2", "few"),
        ("2,5", "few"),
        ("16\u202f384", "few"),
        ("5", "many"),
        ("11", "many"),
        ("111", "many"),
        ("3,3 млрд", "many"),
        ("2·10¹⁸", "many"),
        ("…", "many"),
    ],
)
def test_plural_form_reads_the_printed_number(shown, form):
    assert plural_form(shown, "one", "few", "many") == form


@pytest.mark.parametrize(
    ("num_bytes", "text"),
    [(16_384, "16\u202f384 байта"), (32_768, "32\u202f768 байт"), (2401, "2401 байт")],
)
def test_format_gib_names_tiny_amounts_in_agreeing_bytes(num_bytes, text):
    assert f"({text})" in format_gib(num_bytes / 1024**3)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("110e6", 110e6),
        ("3,3 млрд", 3.3e9),
        (f"30{NNBSP}000", 30_000),
        ("30 000", 30_000),
        ("2,18·10¹⁸", 2.18e18),
        ("−1,5 млн", -1.5e6),
        ("1 трлн", 1e12),
        ("30k", None),
        ("nan", None),
        ("", None),
    ],
)
def test_parse_number_reads_what_people_and_format_number_write(text, value):
    assert parse_number(text) == (pytest.approx(value) if value is not None else None)


@pytest.mark.parametrize("value", [110e6, 3.3e9, 30_000, 2.527e24, 999_885_952, 0.5])
def test_parse_number_inverts_format_number(value):
    assert parse_number(format_number(value)) == pytest.approx(value, rel=5e-3)

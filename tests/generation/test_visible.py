"""Генерации крошечной модели: непечатаемое видно, учебный режим помечен (issue 42, п. 7)."""

from __future__ import annotations

from feedback import generation
from feedback.generation.prompts import PROMPTS
from feedback.generation.visible import visible, visible_html

GARBAGE = "abc\ufffd\x07\x1b[2J\u200bок\n\tконец"


def test_replacement_and_control_characters_become_visible_codes():
    shown = visible(GARBAGE)
    assert "\ufffd" not in shown and "\x07" not in shown and "\x1b" not in shown
    assert "⟨U+FFFD⟩" in shown and "⟨U+0007⟩" in shown and "⟨U+001B⟩" in shown
    assert "⟨U+200B⟩" in shown  # невидимый пробел нулевой ширины
    assert "ок\n\tконец" in shown  # перевод строки и табуляция остаются


def test_html_marks_hidden_characters_and_escapes_the_rest():
    page = visible_html("<b>\ufffd</b>")
    assert "<b>" not in page and "&lt;b&gt;" in page
    assert "course7-hidden-char" in page and "U+FFFD" in page and "\ufffd" not in page


def test_side_by_side_in_tiny_mode_is_labelled_and_shows_codes():
    gens = [f"{prompt}{GARBAGE}" for prompt in PROMPTS]
    page = generation.side_by_side_html(PROMPTS, gens, gens, tiny=True)
    assert "Учебный режим" in page and "\ufffd" not in page and "⟨U+FFFD⟩" in page
    real = generation.side_by_side_html(PROMPTS, gens, gens, tiny=False)
    assert "Учебный режим" not in real


def test_side_by_side_follows_the_course_tiny_setting(monkeypatch):
    monkeypatch.setenv("COURSE7_TINY", "1")
    assert "Учебный режим" in generation.side_by_side_html(PROMPTS, [], [])
    monkeypatch.setenv("COURSE7_TINY", "0")
    assert "Учебный режим" not in generation.side_by_side_html(PROMPTS, [], [])


def test_show_texts_prints_numbered_visible_texts(capsys):
    generation.show_texts(["первая\x07", 5], tiny=True)
    out = capsys.readouterr().out
    assert out.startswith("⚠ Учебный режим")
    assert "1. первая⟨U+0007⟩" in out and "2. 5" in out and "\x07" not in out
    generation.show_texts("одна строка", tiny=False)
    assert capsys.readouterr().out == "1. одна строка\n\n"


def test_check_verdict_quotes_generations_visibly():
    bad = [f"\x07{prompt}" for prompt in PROMPTS]
    result = generation.check_generations(bad)
    assert "\x07" not in result.message and "⟨U+0007⟩" in result.message


def test_timing_table_is_labelled_in_tiny_mode(monkeypatch):
    timer = generation.GenerationTimer(name="Gemma-1B")
    timer.record("запрос", "запрос ответ", 1.5, 10, compiled=True, steps=26)
    monkeypatch.setenv("COURSE7_TINY", "1")
    assert "Учебный режим" in timer._repr_html_()
    monkeypatch.setenv("COURSE7_TINY", "0")
    assert "Учебный режим" not in timer._repr_html_()

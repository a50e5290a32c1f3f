"""Лабораторная 7.1: проверка генераций, формат длительности, помощники и тетрадка учащегося.

Лёгкие тесты не импортируют keras. Тяжёлые (загрузка крошечной Gemma, генерация)
пропускаются без keras_hub и sentencepiece (extra ``gpu``). Решение целиком выполняет
nbval (``make nbval``, строгий режим), а полные баллы за него — оценивание класса
(tests/support/corpus.py, работа ``g71_correct``).
Бэкенд Keras — JAX: его надо выбрать до первого импорта keras.
"""

from __future__ import annotations

import contextlib
import io
import os

import pytest

from feedback import CheckFailed, generation
from feedback.generation import sampling
from feedback.settings import default_keras_backend

from notebook_runner import ROOT

default_keras_backend()  # Keras на JAX, как в тетрадках: до первого import keras

#: Один процесс xdist на модули с keras и крошечной Gemma в самом процессе тестов: импорт
#: TensorFlow стоит секунды процессора, а скомпилированные программы JAX остаются в процессе.
pytestmark = pytest.mark.xdist_group("keras_in_process")


LAB = "lab_7_1_compare_models"
HEAVY_REASON = "нужны keras_hub и sentencepiece (pip install -e '.[gpu]')"
PROMPTS = list(generation.PROMPTS)


def good_generations():
    return [f"{prompt} and then something else." for prompt in PROMPTS]


def shown(result) -> str:
    return str(result)


# --------------------------------------------------------------------------- запросы


def test_prompts_are_verbatim():
    assert len(PROMPTS) == 10
    assert PROMPTS[0] == "The tallest mountain in Africa is"
    assert PROMPTS[7] == "The Maasai ethnic group originate from "  # пробел в конце
    assert PROMPTS[8] == "The African proverb 'A roaring lion kills no game' means"
    assert PROMPTS[9] == "Braai is"
    assert generation.JIDE_PROMPT == "Jide was hungry so she went looking for"
    assert generation.MODEL_PRESETS == {"Gemma-1B": "gemma3_1b", "Gemma-4B": "gemma3_4b_text"}


# --------------------------------------------------------------------------- проверка


def test_right_generations_pass():
    result = generation.check_generations(good_generations(), generation.PROMPTS)
    assert result.passed, shown(result)
    assert "10 генераций" in result.headline


def test_tuple_and_trimmed_trailing_space_pass():
    items = good_generations()
    items[7] = "The Maasai ethnic group originate from Kenya and Tanzania."
    assert generation.check_generations(tuple(items)).passed


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        (..., "ещё не заполнен"),
        (None, "None"),
        ("The tallest mountain in Africa is Kilimanjaro.", "одна строка"),
        ({"a": "b"}, "dict"),
        (42, "int"),
        ([], "ещё не реализована"),
    ],
)
def test_not_a_list_gets_a_verdict(value, phrase):
    result = generation.check_generations(value, generation.PROMPTS)
    assert not result.passed
    assert phrase in result.message, shown(result)


@pytest.mark.parametrize(
    ("count", "list_of", "needed"),
    [
        (10, "из 10 строк", "Нужно 10 строк"),
        (21, "из 21 строки", "Нужно 21 строка"),
        (2, "из 2 строк", "Нужно 2 строки"),
    ],
)
def test_expected_count_agrees_with_its_noun(count, list_of, needed):
    prompts = [f"Prompt {i}" for i in range(count)]
    single = generation.check_generations("one string", prompts)
    assert f"нужен список {list_of} — по одной на запрос" in single.message
    assert needed in generation.check_generations([], prompts).message


def test_nine_items_name_the_count():
    result = generation.check_generations(good_generations()[:9])
    assert not result.passed
    assert "9 генераций" in result.headline and "запросов 10" in result.headline


def test_twenty_items_hint_at_rerun():
    result = generation.check_generations(good_generations() * 2)
    assert not result.passed
    assert "20 генераций" in result.headline
    assert "несколько раз" in result.message


def test_empty_string_is_named_by_number():
    items = good_generations()
    items[3] = "   "
    result = generation.check_generations(items)
    assert not result.passed
    assert "Генерация №4 — пустая строка." in result.details


def test_generation_not_continuing_its_prompt():
    items = good_generations()
    items[2] = "Ethiopia, in the highlands of Kaffa."  # запрос отрезан (strip_prompt=True)
    result = generation.check_generations(items)
    assert not result.passed
    message = result.message
    assert "Генерация №3 не начинается со своего запроса" in message
    assert "«Ethiopia, in the highlands of Kaffa.»" in message
    assert "strip_prompt" in message


def test_same_prompt_every_time_is_reported():
    items = [f"{PROMPTS[0]} Kilimanjaro."] * 10
    result = generation.check_generations(items)
    assert not result.passed
    assert "Генерация №2 начинается с запроса №1" in result.message
    # Девять одинаковых ошибок сгруппированы: три примера и одна строка о прочих.
    assert result.message.count("начинается с запроса №1") == 3
    assert "…и ещё 6 генераций с той же ошибкой." in result.message


@pytest.mark.parametrize(
    ("items", "phrase", "lines"),
    [
        (["x"] * 10, "…и ещё 7 генераций с той же ошибкой.", 3),
        ([3] * 10, "Генерации № 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 — не строки", 1),
        ([""] * 10, "Генерации № 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 — пустые строки.", 1),
    ],
)
def test_the_same_failure_everywhere_is_grouped(items, phrase, lines):
    result = generation.check_generations(items)
    assert phrase in result.message
    assert len([d for d in result.details if d.startswith("Генераци")]) == lines


def test_swapped_order_is_reported():
    items = good_generations()
    items[0], items[1] = items[1], items[0]
    result = generation.check_generations(items)
    assert not result.passed
    assert "Генерация №1 начинается с запроса №2" in result.message


def test_non_string_items():
    items = good_generations()
    items[4] = items[4].encode()
    items[5] = [items[5]]
    result = generation.check_generations(items)
    assert not result.passed
    assert "Генерация №5 — не строка, а объект типа bytes" in result.message
    assert "Генерация №6 — не строка, а объект типа list" in result.message


def test_bare_prompts_fail_but_one_bare_prompt_passes_with_a_note():
    assert not generation.check_generations(list(PROMPTS)).passed
    items = good_generations()
    items[9] = PROMPTS[9]
    result = generation.check_generations(items)
    assert result.passed
    assert any("№ 10" in line for line in result.details)


def test_strict_mode_raises(monkeypatch):
    monkeypatch.setenv("FEEDBACK_STRICT", "1")
    with pytest.raises(CheckFailed, match="пуст"):
        generation.check_generations([])
    assert generation.check_generations(good_generations()).passed


def test_check_never_raises_on_odd_input():
    class Weird(list):
        def __iter__(self):
            raise RuntimeError("boom")

    result = generation.check_generations(Weird(["x"] * 10))
    assert not result.passed
    assert "Traceback" not in result.message


# --------------------------------------------------------------------------- время


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (0, "Duration: 0.00 seconds"),
        (12_340_000_000, "Duration: 12.34 seconds"),
        (59_990_000_000, "Duration: 59.99 seconds"),
        (59_999_000_000, "Duration: 1 minute 0.00 seconds"),
        (60_000_000_000, "Duration: 1 minute 0.00 seconds"),
        (83_456_000_000, "Duration: 1 minute 23.46 seconds"),
        (120_000_000_000, "Duration: 2 minutes 0.00 seconds"),
        (725_500_000_000, "Duration: 12 minutes 5.50 seconds"),
    ],
)
def test_format_duration_is_verbatim(ns, text):
    assert generation.format_duration(ns) == text


def test_timer_separates_first_call():
    timer = generation.GenerationTimer(name="Gemma-1B")
    timer.record("a", "a b", 24.0, 10, compiled=True)
    timer.record("a", "a b", 0.5, 10)
    timer.record("a", "a b", 0.3, 8)
    assert timer.first_call_seconds == 24.0
    assert timer.rest_mean_seconds == pytest.approx(0.4)
    assert timer.tokens_per_second == pytest.approx([10 / 24, 20, 8 / 0.3])
    assert timer.warm_tokens_per_second == pytest.approx(18 / 0.8)
    summary = timer.summary()
    assert "первый вызов — 24 с" in summary and "компилировал" in summary
    assert "в 60 раз" in summary
    assert "В ответ из них" not in summary  # вычислено столько же, сколько в ответе
    assert "<table>" in timer._repr_html_()
    assert "вызовов ещё не было" in generation.GenerationTimer().summary()


@pytest.mark.parametrize(
    ("first", "rest", "tokens", "ratio", "speed"),
    [
        (5.0, 1.0, 21, "в 5 раз", "21 токен в секунду"),
        (2.5, 1.0, 22, "в 2,5 раза", "22 токена в секунду"),
        (8.0, 1.0, 25, "в 8 раз", "25 токенов в секунду"),
        (111.0, 1.0, 111, "в 111 раз", "111 токенов в секунду"),
        (44.0, 2.0, 3, "в 22 раза", "1,5 токена в секунду"),
    ],
)
def test_summary_agrees_numbers_with_words(first, rest, tokens, ratio, speed):
    timer = generation.GenerationTimer(name="Gemma-1B")
    timer.record("a", "a b", first, 10, compiled=True, steps=10)
    timer.record("a", "a b", rest, 10, steps=tokens)
    summary = timer.summary()
    assert f"первый медленнее примерно {ratio}." in summary
    assert f"Скорость без компиляции: {speed}" in summary


def test_speed_counts_the_tokens_the_model_computed():
    """Запрос дополнен до 16 токенов: модель вычисляет 16 − 5 + 10 = 21 токен, в ответ — 10."""
    timer = generation.GenerationTimer(name="Gemma-1B")
    timer.record("a", "a b", 2.0, 10, compiled=True, steps=21)
    timer.record("a", "a b", 0.5, 10, steps=21)
    assert timer.tokens_per_second == pytest.approx([10.5, 42])
    assert timer.answer_tokens_per_second == pytest.approx([5, 20])
    assert timer.warm_tokens_per_second == pytest.approx(42)
    assert timer.warm_answer_tokens_per_second == pytest.approx(20)
    summary = timer.summary()
    assert "42 токена в секунду" in summary
    assert "В ответ из них попадает 20 токенов в секунду" in summary
    assert "кратной 16" in summary
    assert "<th>Вычислено токенов</th>" in timer._repr_html_()


@pytest.mark.parametrize(
    ("generated", "expected"),
    [
        ([7, 7, 7, 7, 7, 7], 6),  # без стоп-токена — до конца max_length
        ([7, 7, 1, 0, 0, 0], 3),  # стоп-токен (eos = 1) на третьем шаге, сам он тоже вычислен
        ([7, 7, 7, 7, 7, 106], 6),
    ],
)
def test_computed_steps_stop_at_the_stop_token(generated, expected):
    import numpy as np

    prompt = [2, 5, 5, 5]  # <bos> и три токена запроса
    token_ids = np.array([prompt + generated])
    assert sampling._computed_steps(token_ids, len(prompt), token_ids.shape[1], (1, 106)) == (
        expected
    )


def test_loop_counts_take_the_last_full_loop(monkeypatch):
    calls = [
        generation.Generated("", 10, True, 21, generation.JIDE_PROMPT, 10),
        *(generation.Generated("", 50, False, 60, p, 50) for p in PROMPTS),
        *(generation.Generated("", 49, False, 55, p, 50) for p in PROMPTS),
        generation.Generated("", 5, False, 16, PROMPTS[0], 5),
    ]
    monkeypatch.setitem(sampling._LEDGER, "Gemma-1B", calls)
    assert generation.loop_counts("Gemma-1B") == (550, 490)
    assert generation.loop_counts("Gemma-4B") is None


def test_plot_durations(monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    monkeypatch.setattr(sampling, "_LEDGER", {})
    assert generation.plot_durations({"Gemma-1B": None, "Gemma-4B": ...}) is None
    assert "График появится" in capsys.readouterr().out
    figure = generation.plot_durations({"Gemma-1B": 40e9, "Gemma-4B": 100e9})
    left, right = figure.axes
    assert [bar.get_height() for bar in left.patches] == pytest.approx([40, 100])
    assert [bar.get_height() for bar in right.patches] == pytest.approx([12.5, 5])
    assert "токены ответа" in right.get_title()


def test_plot_durations_shows_computed_and_answer_speed(monkeypatch):
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    loop = [generation.Generated("", 50, False, 70, p, 50) for p in PROMPTS]
    monkeypatch.setattr(sampling, "_LEDGER", {"Gemma-1B": loop})
    figure = generation.plot_durations({"Gemma-1B": 35e9, "Gemma-4B": 100e9})
    _, right = figure.axes
    # Gemma-1B: 700 вычислено / 35 с = 20; в ответе 500 / 35. Gemma-4B без журнала: 500 / 100.
    heights = [bar.get_height() for bar in right.patches]
    assert heights == pytest.approx([20, 5, 500 / 35, 5])
    assert [text.get_text() for text in right.get_legend().get_texts()] == [
        "вычислено",
        "в ответе",
    ]


def test_side_by_side_escapes_and_tolerates_missing():
    gens_1b = [f"{prompt} <script>alert(1)</script>\x07" for prompt in PROMPTS]
    page = generation.side_by_side_html(PROMPTS, gens_1b, [])
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "\x07" not in page
    assert page.count("<tr>") == 11
    assert "Gemma-4B" in page and "Пока не хватает генераций" in page


def test_unknown_model_name():
    with pytest.raises(ValueError, match="Gemma-1B"):
        generation.load_model("Gemma-2B")


# --------------------------------------------------------------------------- модель


@pytest.fixture(scope="module")
def tiny_model():
    pytest.importorskip("sentencepiece", reason=HEAVY_REASON)
    pytest.importorskip("keras_hub", reason=HEAVY_REASON)
    import keras

    saved = os.environ.get("COURSE7_TINY")
    os.environ["COURSE7_TINY"] = "1"
    printed = io.StringIO()
    try:
        keras.utils.set_random_seed(812)
        with contextlib.redirect_stdout(printed):
            model = generation.load_model("Gemma-1B")
    finally:
        if saved is None:
            os.environ.pop("COURSE7_TINY", None)
        else:
            os.environ["COURSE7_TINY"] = saved
    model.printed = printed.getvalue()
    return model


def test_load_model_in_tiny_mode_says_bfloat16(tiny_model):
    assert tiny_model.backbone.dtype_policy.name == "bfloat16"
    printed = tiny_model.printed
    assert "Учебный режим" in printed and "gemma3_1b" in printed
    line = printed.strip().splitlines()[-1]
    assert line.startswith("Gemma-1B (") and "bfloat16" in line and "7.3" in line


def test_generate_returns_text_starting_with_prompt(tiny_model):
    prompt = PROMPTS[7]
    text = generation.generate(tiny_model, prompt, max_new_tokens=12)
    assert isinstance(text, str) and text.startswith(prompt)
    assert text == generation.generate(tiny_model, prompt, max_new_tokens=12)  # жадная


def test_new_tokens_are_limited_and_compilation_is_reused(tiny_model):
    first = sampling._generate(tiny_model, PROMPTS[0], 7, True)
    assert 0 < first.new_tokens <= 7
    assert not sampling._generate(tiny_model, PROMPTS[0], 7, True).compiled
    prompts = [PROMPTS[0], PROMPTS[2]]  # одна длина после округления — одна компиляция
    timer = generation.timed_generations(tiny_model, prompts, max_new_tokens=7, name="tiny")
    assert timer.texts[0] == first.text
    assert timer.compiled == [False, False]
    assert len(timer.seconds) == 2 and all(s > 0 for s in timer.seconds)
    assert generation.check_generations(timer.texts, prompts).passed


def test_steps_include_the_padding_the_sampler_fills(tiny_model):
    """Сэмплер генерирует от конца запроса до округлённой длины + max_new_tokens."""
    prompt = PROMPTS[1]
    length = generation.count_prompt_tokens(tiny_model, prompt)
    padded = -(-length // generation.LENGTH_STEP) * generation.LENGTH_STEP
    result = sampling._generate(tiny_model, prompt, 7, True)
    assert result.new_tokens <= 7 < padded - length + 7
    # Без стоп-токена вычислено всё до max_length; со стоп-токеном — меньше, но не меньше ответа.
    assert result.new_tokens <= result.steps <= padded - length + 7
    timer = generation.timed_generations(tiny_model, [prompt], max_new_tokens=7)
    assert timer.steps == [result.steps]


def test_sampled_generation_also_continues_the_prompt(tiny_model):
    text = generation.generate(tiny_model, PROMPTS[9], max_new_tokens=5, greedy=False)
    assert text.startswith(PROMPTS[9])


# --------------------------------------------------------------------------- тетрадки


@pytest.fixture(scope="module")
def student_notebook():
    """Тетрадка учащегося 7.1 (что она совпадает со свежим выпуском, проверяет test_release)."""
    return ROOT / "notebooks" / LAB / f"{LAB}.ipynb"


def test_student_notebook_has_stubs_and_no_hidden_tests(student_notebook):
    text = student_notebook.read_text(encoding="utf-8")
    assert "HIDDEN TESTS" not in text and "BEGIN SOLUTION" not in text
    assert "NotImplementedError" not in text
    assert "# Добавьте сюда свой код" in text
    assert "course7-feedback[gpu]" in text

"""Лабораторная 7.1 «Сравните модели разного размера»: Gemma-1B против Gemma-4B.

Здесь всё, что нужно тетрадке: загрузка модели по имени курса (в bfloat16, а без
видеокарты — крошечная учебная модель), генерация ровно ``max_new_tokens`` новых
токенов, строка длительности в формате оригинала, замер каждого вызова (первый
вызов включает компиляцию XLA), таблица «запрос — две генерации», график времени
и проверка списка генераций.

Скорость считается по токенам, которые модель на самом деле вычислила: запрос
дополняется до длины, кратной :data:`LENGTH_STEP`, и генерация идёт до этой длины
плюс ``max_new_tokens``, а в ответ попадают только ``max_new_tokens`` из них.

Модуль лёгкий: keras, keras_hub, jax и matplotlib импортируются только внутри
функций, поэтому ``from feedback import generation`` ничего тяжёлого не загружает.
"""

from __future__ import annotations

import html
import math
import os
import sys
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from feedback import runtime
from feedback.calling import LearnerProblem
from feedback.formatting import format_number, format_plain, plural
from feedback.graded import GradedCheck, graded_check
from feedback.result import CheckResult, failed, passed
from feedback.values import describe, revive

#: Имена моделей в курсе → пресеты Keras Hub 0.32 (предобученные, не инструктивные).
MODEL_PRESETS: dict[str, str] = {"Gemma-1B": "gemma3_1b", "Gemma-4B": "gemma3_4b_text"}

#: Первый запрос лабораторной: продолжение из 10 новых токенов.
JIDE_PROMPT = "Jide was hungry so she went looking for"

#: Десять запросов заданий 1 и 2 — дословно и в том же порядке, что в оригинале
#: (у восьмого в конце пробел).
PROMPTS: tuple[str, ...] = (
    "The tallest mountain in Africa is",
    "The key ingredients and preparation method for making traditional Nigerian Jollof rice are",
    "Wild coffee plants originated in",
    "The national flower of South Africa is",
    "The significance of the city of Marrakesh is",
    "The most populous African nation is",
    "The world's deepest river is",
    "The Maasai ethnic group originate from ",
    "The African proverb 'A roaring lion kills no game' means",
    "Braai is",
)

DEFAULT_NEW_TOKENS = 50

#: Длина запроса в токенах округляется вверх до кратной этому числу. XLA компилирует
#: генерацию заново для каждой новой длины; с округлением десяти запросам курса
#: хватает одной-двух компиляций. Модель генерирует и в добавленные позиции, и эти
#: токены отрезаются, но время на них уходит: их учитывает число вычисленных шагов.
LENGTH_STEP = 16

TOP_K = 10
SAMPLER_SEED = 812

CHECK_TITLE = "generations"


# --------------------------------------------------------------------------- загрузка


def _ensure_keras_backend() -> None:
    """JAX по умолчанию, если keras ещё не импортирован и бэкенд не задан."""
    if "keras" not in sys.modules:
        os.environ.setdefault("KERAS_BACKEND", "jax")


def load_model(name: str) -> Any:
    """Загружает модель курса по имени (``"Gemma-1B"`` или ``"Gemma-4B"``) в bfloat16.

    Пресет выбирает :func:`feedback.runtime.choose_preset`: настоящий на видеокарте,
    крошечный учебный без неё или при ``COURSE7_TINY=1`` (с заметным предупреждением).
    Зерно ``keras.utils.set_random_seed(812)`` задайте до вызова.
    """
    if name not in MODEL_PRESETS:
        known = ", ".join(f"«{key}»" for key in MODEL_PRESETS)
        raise ValueError(f"Неизвестная модель «{name}». Доступны: {known}.")
    _ensure_keras_backend()
    import keras_hub

    real_preset = MODEL_PRESETS[name]
    preset = runtime.choose_preset(real_preset)
    model = keras_hub.models.Gemma3CausalLM.from_preset(preset, dtype="bfloat16")
    _use_sampler(model, greedy=True)
    _state(model).name = name
    shown = real_preset if preset == real_preset else "крошечная учебная модель"
    print(
        f"{name} ({shown}, {format_number(model.count_params())} параметров) загружена в "
        "bfloat16 — по 2 байта на параметр вместо 4; почему Gemma-4B помещается в T4 "
        "только так, покажет лабораторная 7.3."
    )
    return model


def free_model(model: Any) -> None:
    """Освобождает память модели: удаляет её массивы, очищает сессию Keras и мусор.

    После вызова модель больше не работает. Удалите и саму переменную (``del
    gemma_1b``), чтобы на неё не осталось ссылок.
    """
    import gc

    freed = 0
    if model is not None:
        try:
            _STATE.pop(model, None)
        except TypeError:
            pass
        for variable in getattr(model, "variables", []):
            value = getattr(variable, "_value", None)
            delete = getattr(value, "delete", None)  # массивы jax можно удалить сразу
            if callable(delete):
                try:
                    delete()
                    freed += 1
                except Exception:
                    pass
    if "keras" in sys.modules:
        sys.modules["keras"].backend.clear_session()
    gc.collect()
    print(
        "Память модели освобождена: её веса удалены из памяти ускорителя, сессия Keras "
        "очищена"
        + (f" ({plural(freed, 'массив', 'массива', 'массивов')} весов)" if freed else "")
        + ". Модель больше не работает — удалите и переменную: del <имя модели>."
    )


# --------------------------------------------------------------------------- генерация

# Что мы знаем о каждой модели: выбранный сэмплер и длины, для которых XLA уже
# скомпилировал генерацию (model.compile сбрасывает скомпилированную функцию).
_STATE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass
class _ModelState:
    greedy: bool | None = None
    function: Any = None
    lengths: set[int] = field(default_factory=set)
    name: str | None = None  # имя модели в курсе, если её загрузил load_model


@dataclass(frozen=True)
class Generated:
    """Итог одного вызова генерации.

    ``new_tokens`` — сколько токенов попало в ответ; ``steps`` — сколько токенов модель
    вычислила: до конца округлённой длины запроса плюс ``max_new_tokens`` или до
    стоп-токена. Скорость модели — ``steps`` в секунду.
    """

    text: str
    new_tokens: int
    compiled: bool
    steps: int
    prompt: str = ""
    max_new_tokens: int = 0


# Журнал вызовов по имени модели в курсе: модель к графику уже удалена (free_model),
# а вычисленные шаги цикла нужны. Хранятся только числа, не тексты.
_LEDGER: dict[str, list[Generated]] = {}
_LEDGER_LIMIT = 200


def _state(model: Any) -> _ModelState:
    try:
        state = _STATE.get(model)
        if state is None:
            state = _STATE[model] = _ModelState()
        return state
    except TypeError:  # модель нельзя хранить по слабой ссылке — просто не запоминаем
        return _ModelState()


def _use_sampler(model: Any, greedy: bool) -> None:
    """Жадный сэмплер или top-k; перекомпилирует модель, только если сэмплер другой."""
    import keras_hub

    wanted = keras_hub.samplers.GreedySampler if greedy else keras_hub.samplers.TopKSampler
    state = _state(model)
    if isinstance(getattr(model, "sampler", None), wanted) and state.greedy in (None, greedy):
        state.greedy = greedy
        return
    sampler = "greedy" if greedy else keras_hub.samplers.TopKSampler(k=TOP_K, seed=SAMPLER_SEED)
    model.compile(sampler=sampler)
    state.greedy = greedy
    state.function = None
    state.lengths.clear()


def _to_numpy(value: Any) -> Any:
    import numpy as np

    if hasattr(value, "numpy"):
        value = value.numpy()
    return np.asarray(value)


def _first_text(value: Any) -> str:
    while isinstance(value, list | tuple):
        value = value[0]
    if hasattr(value, "numpy"):
        value = value.numpy()
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = value.tolist()
        while isinstance(value, list):
            value = value[0]
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    return str(value)


def _stop_token_ids(model: Any) -> tuple[int, ...]:
    """Те же стоп-токены, что у ``Gemma3CausalLM.generate``: конец текста и конец реплики."""
    tokenizer = model.preprocessor.tokenizer
    ids = [tokenizer.end_token_id]
    try:
        ids.append(int(tokenizer.token_to_id("<end_of_turn>")))
    except Exception:
        pass
    return tuple(int(i) for i in dict.fromkeys(ids) if i is not None)


def count_prompt_tokens(model: Any, prompt: str) -> int:
    """Сколько токенов займёт запрос на входе модели (вместе с начальным ``<bos>``)."""
    preprocessor = model.preprocessor
    tokens = _to_numpy(preprocessor.tokenizer.tokenize(prompt))
    return int(tokens.size) + (1 if getattr(preprocessor, "add_start_token", True) else 0)


def _computed_steps(token_ids: Any, prompt_length: int, max_length: int, stop_ids: Any) -> int:
    """Сколько токенов вычислил сэмплер Keras Hub.

    Он идёт от конца запроса до ``max_length`` и останавливается раньше, только если
    сгенерировал стоп-токен (сам стоп-токен тоже вычислен).
    """
    import numpy as np

    generated = np.asarray(token_ids)[0, prompt_length:max_length]
    stops = np.flatnonzero(np.isin(generated, stop_ids))
    return int(stops[0]) + 1 if stops.size else int(max_length - prompt_length)


def _generate(model: Any, prompt: str, max_new_tokens: int, greedy: bool) -> Generated:
    """Генерация одного запроса: текст, токены в ответе, вычисленные шаги, компиляция."""
    import numpy as np

    if not isinstance(prompt, str):
        raise TypeError(f"запрос должен быть строкой, а получен {type(prompt).__name__}")
    max_new_tokens = int(max_new_tokens)
    if max_new_tokens < 1:
        raise ValueError("max_new_tokens должно быть не меньше 1")
    _use_sampler(model, greedy)
    prompt_length = count_prompt_tokens(model, prompt)
    # max_length = длина запроса + новые токены; длина запроса округлена вверх до
    # LENGTH_STEP, чтобы запросы похожей длины не компилировались заново.
    padded = math.ceil(prompt_length / LENGTH_STEP) * LENGTH_STEP
    max_length = padded + max_new_tokens
    preprocessor = model.preprocessor
    inputs = preprocessor.generate_preprocess([prompt], sequence_length=max_length)
    function = model.make_generate_function()
    state = _state(model)
    if state.function is not function:
        state.function = function
        state.lengths.clear()
    compiled = max_length not in state.lengths
    stop_ids = _stop_token_ids(model)
    outputs = function(inputs, stop_token_ids=stop_ids)
    token_ids = _to_numpy(outputs["token_ids"])
    mask = _to_numpy(outputs["padding_mask"]).astype(bool).copy()
    state.lengths.add(max_length)
    steps = _computed_steps(token_ids, prompt_length, max_length, stop_ids)
    limit = prompt_length + max_new_tokens
    mask[:, limit:] = False  # лишнее от округления длины отрезаем
    stop = np.isin(token_ids, stop_ids)
    stop[:, :prompt_length] = False
    mask &= ~stop  # сам стоп-токен в текст не попадает
    special = {int(i) for i in getattr(preprocessor.tokenizer, "special_token_ids", [])}
    new_ids = token_ids[0, prompt_length:limit][mask[0, prompt_length:limit]]
    new_tokens = sum(1 for i in new_ids.tolist() if int(i) not in special)
    text = preprocessor.generate_postprocess({"token_ids": token_ids, "padding_mask": mask})
    result = Generated(_first_text(text), new_tokens, compiled, steps, prompt, max_new_tokens)
    if state.name:
        calls = _LEDGER.setdefault(state.name, [])
        calls.append(replace(result, text=""))
        del calls[:-_LEDGER_LIMIT]
    return result


def generate(
    model: Any, prompt: str, max_new_tokens: int = DEFAULT_NEW_TOKENS, greedy: bool = True
) -> str:
    """Продолжает ``prompt`` не более чем на ``max_new_tokens`` токенов и возвращает текст.

    Как и ``model.generate`` в Keras Hub, текст начинается с самого запроса.
    ``greedy=True`` — жадная генерация (всегда самый вероятный токен, результат
    повторяется); ``greedy=False`` — случайный выбор из 10 самых вероятных (top-k).
    """
    return _generate(model, prompt, max_new_tokens, greedy).text


# --------------------------------------------------------------------------- время


def format_duration(ns: float) -> str:
    """Длительность в формате оригинала: ``Duration: 1 minutes 23.46 seconds``.

    Меньше минуты — ``Duration: 12.34 seconds``. Аргумент — наносекунды, разность
    двух ``time.time_ns()``.
    """
    centiseconds = round(float(ns) / 1e7)
    if centiseconds >= 6000:
        minutes, rest = divmod(centiseconds, 6000)
        return f"Duration: {minutes} minutes {rest / 100:.2f} seconds"
    return f"Duration: {centiseconds / 100:.2f} seconds"


def _times_ru(ratio: float) -> str:
    """«в 2,5 раза», «в 3 раза», «в 215 раз»."""
    if ratio < 10:
        return f"в {format_plain(ratio, 1)} раза"
    return "в " + plural(round(ratio), "раз", "раза", "раз")


def _seconds_ru(seconds: float) -> str:
    decimals = 2 if seconds < 10 else 1
    return f"{format_plain(seconds, decimals) if seconds >= 0.005 else '< 0,01'} с"


@dataclass
class GenerationTimer:
    """Замеряет каждый вызов генерации отдельно.

    ``timer.generate(model, prompt)`` генерирует и записывает время, число токенов в
    ответе, число вычисленных токенов и признак «была компиляция XLA». В тетрадке
    таймер показывается таблицей, а :meth:`summary` по-русски объясняет, почему первый
    вызов медленный. Скорость модели считается по вычисленным токенам.
    """

    name: str = "модель"
    prompts: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    new_tokens: list[int] = field(default_factory=list)
    compiled: list[bool] = field(default_factory=list)
    steps: list[int] = field(default_factory=list)

    def generate(
        self,
        model: Any,
        prompt: str,
        max_new_tokens: int = DEFAULT_NEW_TOKENS,
        greedy: bool = True,
    ) -> str:
        start = time.perf_counter_ns()
        result = _generate(model, prompt, max_new_tokens, greedy)
        seconds = (time.perf_counter_ns() - start) / 1e9
        self.record(prompt, result.text, seconds, result.new_tokens, result.compiled, result.steps)
        return result.text

    def record(
        self,
        prompt: str,
        text: str,
        seconds: float,
        new_tokens: int,
        compiled: bool = False,
        steps: int | None = None,
    ) -> None:
        """Записывает вызов; ``steps`` — вычисленные токены (по умолчанию = ``new_tokens``)."""
        self.prompts.append(prompt)
        self.texts.append(text)
        self.seconds.append(float(seconds))
        self.new_tokens.append(int(new_tokens))
        self.compiled.append(bool(compiled))
        self.steps.append(int(new_tokens if steps is None else steps))

    @property
    def total_seconds(self) -> float:
        return sum(self.seconds)

    @property
    def total_new_tokens(self) -> int:
        return sum(self.new_tokens)

    @property
    def total_steps(self) -> int:
        return sum(self.steps)

    @property
    def tokens_per_second(self) -> list[float]:
        """Скорость модели в каждом вызове: вычисленные токены / секунды."""
        return [t / s if s > 0 else math.inf for t, s in zip(self.steps, self.seconds, strict=True)]

    @property
    def answer_tokens_per_second(self) -> list[float]:
        """Сколько токенов ответа получено в секунду в каждом вызове."""
        return [
            t / s if s > 0 else math.inf for t, s in zip(self.new_tokens, self.seconds, strict=True)
        ]

    @property
    def first_call_seconds(self) -> float | None:
        return self.seconds[0] if self.seconds else None

    @property
    def rest_mean_seconds(self) -> float | None:
        """Среднее время вызовов после первого (без первой компиляции)."""
        rest = self.seconds[1:]
        return sum(rest) / len(rest) if rest else None

    def _warm(self, counts: list[int]) -> float | None:
        pairs = [
            (t, s) for t, s, c in zip(counts, self.seconds, self.compiled, strict=True) if not c
        ]
        seconds = sum(s for _, s in pairs)
        return sum(t for t, _ in pairs) / seconds if pairs and seconds > 0 else None

    @property
    def warm_tokens_per_second(self) -> float | None:
        """Скорость модели без компиляции: вычисленные токены в вызовах без компиляции XLA."""
        return self._warm(self.steps)

    @property
    def warm_answer_tokens_per_second(self) -> float | None:
        """То же, но считая только токены, попавшие в ответ."""
        return self._warm(self.new_tokens)

    def summary(self) -> str:
        """Вывод по-русски: первый вызов против остальных и скорость без компиляции."""
        if not self.seconds:
            return f"{self.name}: вызовов ещё не было."
        first = self.seconds[0]
        lines = []
        if self.compiled[0]:
            lines.append(
                f"{self.name}: первый вызов — {_seconds_ru(first)}. В нём XLA сначала "
                "компилировал генерацию для этой длины и только потом генерировал."
            )
        else:
            lines.append(
                f"{self.name}: первый вызов — {_seconds_ru(first)}, без компиляции: XLA уже "
                "скомпилировал генерацию такой длины раньше."
            )
        rest = self.rest_mean_seconds
        if rest is not None:
            text = f"Остальные вызовы — в среднем {_seconds_ru(rest)}"
            if self.compiled[0] and rest > 0 and first / rest >= 1.5:
                text += f", первый медленнее примерно {_times_ru(first / rest)}"
            lines.append(text + ".")
        later = [i + 1 for i, c in enumerate(self.compiled) if c and i > 0]
        if later:
            lines.append(
                "Заново компилировались вызовы № "
                + ", ".join(map(str, later))
                + ": у запроса другая длина (в токенах, после округления)."
            )
        speed = self.warm_tokens_per_second
        if speed is not None and math.isfinite(speed):
            text = f"Скорость без компиляции: {format_number(speed, 3)} токенов в секунду"
            answer = self.warm_answer_tokens_per_second
            if self.steps != self.new_tokens and answer is not None:
                text += (
                    f" — столько модель вычисляет. В ответ из них попадает "
                    f"{format_number(answer, 3)} в секунду: запрос дополняется до длины, "
                    f"кратной {LENGTH_STEP}, модель генерирует и в эти позиции, а лишнее "
                    "отрезается"
                )
            lines.append(text + ".")
        return "\n".join(lines)

    def __str__(self) -> str:
        rows = [
            f"{i}. {_seconds_ru(s)}, {t} ток. в ответе, {n} вычислено, "
            f"{'компиляция' if c else 'без компиляции'}"
            for i, (s, t, n, c) in enumerate(
                zip(self.seconds, self.new_tokens, self.steps, self.compiled, strict=True),
                start=1,
            )
        ]
        return "\n".join([*rows, self.summary()])

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        rows = []
        for i, (prompt, s, t, n, c, speed) in enumerate(
            zip(
                self.prompts,
                self.seconds,
                self.new_tokens,
                self.steps,
                self.compiled,
                self.tokens_per_second,
                strict=True,
            ),
            start=1,
        ):
            shown_speed = format_number(speed, 3) if math.isfinite(speed) else "—"
            mark = "да" if c else "нет"
            rows.append(
                f"<tr><td>{i}</td><td style='text-align:left'>{_escape(_shorten(prompt, 60))}"
                f"</td><td>{_seconds_ru(s)}</td><td>{t}</td><td>{n}</td><td>{shown_speed}</td>"
                f"<td>{mark}</td></tr>"
            )
        summary = "<br>".join(html.escape(line) for line in self.summary().splitlines())
        return (
            "<div class='course7-timing'>"
            f"<table><thead><tr><th>№</th><th>Запрос</th><th>Время</th>"
            f"<th>Токенов в ответе</th><th>Вычислено токенов</th>"
            f"<th>Токенов в секунду</th><th>Компиляция XLA</th></tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>"
            f"<p style='margin:0.4em 0'>{summary}</p></div>"
        )


def timed_generations(
    model: Any,
    prompts: Sequence[str],
    max_new_tokens: int = DEFAULT_NEW_TOKENS,
    greedy: bool = True,
    name: str = "модель",
) -> GenerationTimer:
    """Генерирует продолжения запросов по одному, замеряя каждый вызов отдельно.

    Возвращает :class:`GenerationTimer`: тексты, секунды и токены в секунду по
    каждому запросу, время первого вызова отдельно от остальных.
    """
    timer = GenerationTimer(name=name)
    for prompt in prompts:
        timer.generate(model, prompt, max_new_tokens=max_new_tokens, greedy=greedy)
    return timer


def loop_counts(
    name: str, prompts: Sequence[str] = PROMPTS, max_new_tokens: int = DEFAULT_NEW_TOKENS
) -> tuple[int, int] | None:
    """(вычислено токенов, токенов в ответе) за последний цикл модели ``name`` по ``prompts``.

    Берётся последняя подряд идущая серия вызовов :func:`generate` с этими запросами в
    том же порядке и тем же ``max_new_tokens``; ``None`` — такой серии не было (например,
    модель загружена не через :func:`load_model`).
    """
    calls = _LEDGER.get(name, [])
    wanted = list(prompts)
    for end in range(len(calls), len(wanted) - 1, -1):
        run = calls[end - len(wanted) : end]
        if [c.prompt for c in run] == wanted and all(
            c.max_new_tokens == max_new_tokens for c in run
        ):
            return sum(c.steps for c in run), sum(c.new_tokens for c in run)
    return None


@dataclass(frozen=True)
class _Measured:
    seconds: float
    steps: int | None  # вычислено токенов; None — неизвестно
    answer: int  # токенов в ответе


def _measure(name: str, value: Any, new_tokens: int | Mapping[str, int] | None) -> _Measured | None:
    """Секунды и токены цикла из наносекунд или из :class:`GenerationTimer`."""
    if isinstance(value, GenerationTimer):
        if not value.seconds:
            return None
        return _Measured(value.total_seconds, value.total_steps, value.total_new_tokens)
    if isinstance(value, bool) or value is None or value is Ellipsis:
        return None
    try:
        seconds = float(value) / 1e9
    except (TypeError, ValueError):
        return None
    if not math.isfinite(seconds) or seconds <= 0:
        return None
    answer = new_tokens.get(name) if isinstance(new_tokens, Mapping) else new_tokens
    counted = loop_counts(name)
    if answer is None and counted is not None:
        return _Measured(seconds, counted[0], counted[1])
    if answer is None:
        answer = len(PROMPTS) * DEFAULT_NEW_TOKENS
    return _Measured(seconds, None, int(answer))


def plot_durations(
    durations: Mapping[str, Any], new_tokens: int | Mapping[str, int] | None = None
) -> Any:
    """Два графика столбцами: общее время и токены в секунду для каждой модели.

    ``durations`` — имя модели → длительность цикла в наносекундах (разность
    ``time.time_ns()``) или :class:`GenerationTimer`. Скорость считается по токенам,
    которые модель вычислила (их знает :func:`loop_counts` для циклов через
    :func:`generate`); если в ответ попало меньше, рядом показан и этот столбец.
    ``new_tokens`` — явное число токенов в ответе (по умолчанию 10 запросов × 50).
    Если длительностей ещё нет, печатает подсказку и возвращает None.
    """
    ready = {
        name: measured
        for name, value in durations.items()
        if (measured := _measure(name, value, new_tokens)) is not None
    }
    if not ready:
        print("График появится, когда будут замерены длительности обоих циклов.")
        return None

    import matplotlib.pyplot as plt

    names = list(ready)
    seconds = [ready[name].seconds for name in names]
    computed = [(ready[name].steps or ready[name].answer) / ready[name].seconds for name in names]
    answered = [ready[name].answer / ready[name].seconds for name in names]
    both = any(ready[name].steps not in (None, ready[name].answer) for name in names)
    unknown = all(ready[name].steps is None for name in names)
    colours = ["#4c72b0", "#dd8452", "#55a868", "#c44e52"][: len(names)]
    figure, (left, right) = plt.subplots(1, 2, figsize=(9.5, 3.8))
    positions = list(range(len(names)))
    width = 0.38 if both else 0.6
    panels = [(left, [(seconds, 0.0, 1.0, None)], "Время на все запросы", "с")]
    speed_bars = [(computed, -width / 2 if both else 0.0, 1.0, "вычислено")]
    if both:
        speed_bars.append((answered, width / 2, 0.45, "в ответе"))
    title = "Скорость: токены ответа / время" if unknown else "Скорость: токенов в секунду"
    panels.append((right, speed_bars, title, "ток./с"))
    for axes, series, panel_title, unit in panels:
        top = 0.0
        for values, shift, alpha, label in series:
            bars = axes.bar(
                [p + shift for p in positions],
                values,
                width=width if axes is right else 0.6,
                color=colours,
                alpha=alpha,
                label=label,
            )
            top = max(top, *values)
            for bar, value in zip(bars, values, strict=True):
                axes.annotate(
                    f"{format_number(value, 3)} {unit}",
                    (bar.get_x() + bar.get_width() / 2, value),
                    ha="center",
                    va="bottom",
                    fontsize=8,
                )
        axes.set_xticks(positions, names)
        axes.set_title(panel_title)
        axes.set_ylabel(unit)
        axes.set_ylim(0, top * 1.25)
    if both:
        right.legend(fontsize=8, loc="upper right")
    figure.tight_layout()
    return figure


# --------------------------------------------------------------------------- таблица


def _printable(text: str) -> str:
    """Управляющие символы (их выдаёт крошечная модель) заменяются точкой-маркером."""
    return "".join(ch if ch.isprintable() or ch in "\n\t" else "·" for ch in text)


def _escape(text: str) -> str:
    return html.escape(_printable(text))


def _shorten(text: str, limit: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


_TEXT_CELL = "text-align:left;vertical-align:top;white-space:pre-wrap;overflow-wrap:anywhere"


def _generation_cell(prompt: str, generations: Any, index: int) -> str:
    try:
        text = generations[index]
    except Exception:
        return "<td style='color:#888'>—</td>"
    if not isinstance(text, str):
        return f"<td style='color:#a12622'>не строка: {html.escape(type(text).__name__)}</td>"
    if text.startswith(prompt):
        head, tail = prompt, text[len(prompt) :]
    elif text.lstrip().startswith(prompt.strip()):
        head, tail = prompt.strip(), text.lstrip()[len(prompt.strip()) :]
    else:
        head, tail = "", text
    shown_head = f"<span style='color:#777'>{_escape(head)}</span>" if head else ""
    return f"<td style='{_TEXT_CELL}'>{shown_head}<b>{_escape(tail)}</b></td>"


def side_by_side_html(
    prompts: Sequence[str],
    gens_1b: Any,
    gens_4b: Any,
    names: tuple[str, str] = ("Gemma-1B", "Gemma-4B"),
) -> str:
    """HTML-таблица: запрос и продолжения двух моделей в одной строке."""
    rows = []
    for index, prompt in enumerate(prompts):
        rows.append(
            f"<tr><td style='vertical-align:top'>{index + 1}</td>"
            f"<td style='{_TEXT_CELL}'><i>{_escape(prompt)}</i></td>"
            f"{_generation_cell(prompt, gens_1b, index)}"
            f"{_generation_cell(prompt, gens_4b, index)}</tr>"
        )
    missing = [
        name
        for name, gens in zip(names, (gens_1b, gens_4b), strict=True)
        if not isinstance(gens, list | tuple) or len(gens) != len(prompts)
    ]
    note = (
        "<p style='color:#a12622'>Пока не хватает генераций: "
        + html.escape(", ".join(missing))
        + ". Вернитесь к заданиям 1 и 2.</p>"
        if missing
        else ""
    )
    return (
        "<div class='course7-side-by-side'>"
        f"<p style='margin:0.3em 0;color:#555'>Серым — запрос, жирным — продолжение модели.</p>"
        "<table style='table-layout:fixed;width:100%'>"
        "<colgroup><col style='width:3%'><col style='width:21%'><col style='width:38%'>"
        "<col style='width:38%'></colgroup>"
        f"<thead><tr><th>№</th><th>Запрос</th><th>{html.escape(names[0])}</th>"
        f"<th>{html.escape(names[1])}</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>{note}</div>"
    )


def show_side_by_side(prompts: Sequence[str], gens_1b: Any, gens_4b: Any) -> Any:
    """Показывает генерации двух моделей рядом, по строке на запрос (HTML)."""
    from IPython.display import HTML

    return HTML(side_by_side_html(prompts, gens_1b, gens_4b))


# --------------------------------------------------------------------------- проверка


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
        raise LearnerProblem(
            "вместо списка генераций получено None.",
            "Частая причина — присваивание результата append: generations = generations."
            "append(text). Метод append ничего не возвращает — пишите просто "
            "generations.append(text).",
        )
    if isinstance(generations, str | bytes):
        raise LearnerProblem(
            f"получена одна строка, а нужен список из {expected} строк — по одной на запрос.",
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


def _item_problems(items: list[Any], prompts: list[str]) -> tuple[list[str], list[int]]:
    """Ошибки в отдельных генерациях (одинаковые сгруппированы) и номера «голых» запросов."""
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
    return problems, bare


def judge_generations(observation: Any, prompts: Sequence[str] = PROMPTS) -> CheckResult:
    """Вердикт по списку генераций (описанному :func:`feedback.values.describe`)."""
    prompts = list(prompts)
    expected = len(prompts)
    items = _as_generation_list(revive(observation), expected)
    if not items:
        raise LearnerProblem(
            "список генераций пуст: задача ещё не реализована — цикл не написан или не выполнялся.",
            f"Нужно {expected} строк: пройдите циклом по запросам и добавьте в список "
            "генерацию для каждого.",
        )
    if len(items) != expected:
        details = [
            f"Ожидалось {plural(expected, 'строка', 'строки', 'строк')} — по одной на запрос."
        ]
        if len(items) > expected and len(items) % expected == 0:
            details.append(
                "Похоже, ячейку выполнили несколько раз, а список не очищался: создайте его "
                "заново (generations = []) в той же ячейке, перед циклом."
            )
        elif len(items) < expected:
            details.append(
                "Проверьте, что цикл проходит по всем запросам и append стоит внутри цикла."
            )
        raise LearnerProblem(
            f"в списке {plural(len(items), 'генерация', 'генерации', 'генераций')}, "
            f"а запросов {expected}.",
            *details,
        )
    problems, bare = _item_problems(items, prompts)
    if problems:
        return failed(CHECK_TITLE, "в списке есть ошибки.", *problems)
    if len(bare) == expected:
        return failed(
            CHECK_TITLE,
            "в списке сами запросы без продолжений.",
            "Добавляйте в список результат генерации, а не сам запрос.",
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


def _observe_generations(generations: Any, prompts: Sequence[str] = PROMPTS) -> dict[str, Any]:
    return describe(generations)


GENERATIONS = GradedCheck(
    "generation.check_generations", CHECK_TITLE, _observe_generations, judge_generations
)


@graded_check(GENERATIONS)
def check_generations(generations: Any, prompts: Sequence[str] = PROMPTS) -> CheckResult:
    """Проверяет список генераций: по одной непустой строке на запрос, в том же порядке,
    и каждая продолжает свой запрос (Keras Hub возвращает запрос вместе с продолжением).
    """

"""Время генерации: строка длительности как в оригинале, замер каждого вызова и график.

Первый вызов включает компиляцию XLA, поэтому он показывается отдельно от остальных;
скорость — по вычисленным токенам (:class:`~feedback.generation.sampling.Generated`).
"""

from __future__ import annotations

import html
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from feedback.formatting import format_number, format_plain, plural
from feedback.generation import sampling
from feedback.generation.prompts import DEFAULT_NEW_TOKENS, LENGTH_STEP, PROMPTS
from feedback.generation.table import _escape, _shorten
from feedback.generation.visible import TINY_TIMING_LABEL, tiny_label_html


def format_duration(ns: float) -> str:
    """Длительность в формате оригинала: ``Duration: 2 minutes 3.46 seconds``.

    Меньше минуты — ``Duration: 12.34 seconds``. Строка английская, как в оригинале
    курса, и согласована по-английски: ровно одна минута — ``1 minute`` (оригинал и
    тут писал «minutes»). Аргумент — наносекунды, разность двух ``time.time_ns()``.
    """
    centiseconds = round(float(ns) / 1e7)
    if centiseconds >= 6000:
        minutes, rest = divmod(centiseconds, 6000)
        unit = "minute" if minutes == 1 else "minutes"
        return f"Duration: {minutes} {unit} {rest / 100:.2f} seconds"
    return f"Duration: {centiseconds / 100:.2f} seconds"


def _times_ru(ratio: float) -> str:
    """«в 2,5 раза», «в 3 раза», «в 5 раз», «в 215 раз»: до 10 — с одним знаком."""
    decimals = 1 if ratio < 10 else 0
    return "в " + plural(ratio, "раз", "раза", "раз", lambda value: format_plain(value, decimals))


def _tokens_per_second(speed: float) -> str:
    """«21 токен в секунду», «2,5 токена в секунду», «160 токенов в секунду»."""
    return plural(speed, "токен", "токена", "токенов", lambda value: format_number(value, 3)) + (
        " в секунду"
    )


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
        result = sampling._generate(model, prompt, max_new_tokens, greedy)
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
            text = f"Скорость без компиляции: {_tokens_per_second(speed)}"
            answer = self.warm_answer_tokens_per_second
            if self.steps != self.new_tokens and answer is not None:
                text += (
                    f" — столько модель вычисляет. В ответ из них попадает "
                    f"{_tokens_per_second(answer)}: запрос дополняется до длины, "
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
            f"{tiny_label_html(label=TINY_TIMING_LABEL)}"
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
    calls = sampling._LEDGER.get(name, [])
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

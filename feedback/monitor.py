"""Лабораторные 7.5 и 7.6: генерации после каждой эпохи и графики потерь.

``GenerationMonitor`` — функция обратного вызова Keras (``keras.callbacks.Callback``):
после каждой эпохи она печатает ``--- Generations after epoch N ---`` и ответы
модели на несколько вопросов, чтобы было видно, как меняется модель по ходу
обучения::

    from feedback.monitor import GenerationMonitor, lab_prompts

    monitor = GenerationMonitor(lab_prompts(), max_length=150)
    model.fit(data, epochs=4, batch_size=1, callbacks=[monitor])

Модуль лёгкий: keras импортируется только при первом обращении к
``GenerationMonitor`` (класс строится тогда же и запоминается), matplotlib — внутри
функций рисования.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from feedback.qa_data import format_question
from feedback.settings import default_keras_backend

#: Вопросы лабораторных 7.5 и 7.6: выученное знание, обобщение и сохранение старого.
LAB_QUESTIONS = ("What is Kente cloth?", "What is Kilimanjaro?", "What is Tokyo?")

HEADER = "--- Generations after epoch {n} ---"

_ACCURACY_KEYS = ("accuracy", "sparse_categorical_accuracy", "acc")


def lab_prompts(questions: Sequence[str] = LAB_QUESTIONS) -> list[str]:
    """Вопросы лабораторной, обёрнутые в шаблон диалога Gemma (``format_question``)."""
    return [format_question(question) for question in questions]


def _import_keras() -> Any:
    default_keras_backend()
    import keras

    return keras


def _checked_prompts(prompts: Any) -> list[str]:
    if isinstance(prompts, str):
        prompts = [prompts]
    if prompts is None or prompts is Ellipsis or not isinstance(prompts, Sequence):
        raise TypeError(
            "GenerationMonitor ждёт список запросов (строк), например lab_prompts(), "
            f"а получил {type(prompts).__name__}."
        )
    prompts = list(prompts)
    if not prompts or not all(isinstance(prompt, str) for prompt in prompts):
        raise TypeError("GenerationMonitor ждёт непустой список запросов (строк).")
    return prompts


@functools.cache
def _generation_monitor_class() -> type:
    keras = _import_keras()

    class GenerationMonitor(keras.callbacks.Callback):
        """Печатает генерации модели для нескольких запросов после эпох обучения.

        ``prompts`` — строки, уже обёрнутые ``format_question`` (или одна строка);
        ``max_length`` — передаётся в ``model.generate``; ``every`` — печатать
        после каждой ``every``-й эпохи. Генерации сохраняются в
        ``monitor.generations``: словарь «номер эпохи (с 1) → список ответов».
        Ошибка генерации не останавливает обучение: она печатается и сохраняется
        вместо ответа.
        """

        def __init__(self, prompts: Any, max_length: int = 150, every: int = 1) -> None:
            super().__init__()
            self.prompts = _checked_prompts(prompts)
            self.max_length = int(max_length)
            self.every = max(int(every), 1)
            self.generations: dict[int, list[str]] = {}

        def on_epoch_end(self, epoch: int, logs: Mapping[str, Any] | None = None) -> None:
            number = epoch + 1
            if number % self.every == 0:
                self.show_generations(number)

        def show_generations(self, number: int, model: Any = None) -> list[str]:
            """Печатает заголовок эпохи ``number`` и генерации; возвращает их списком."""
            model = model if model is not None else self.model
            if model is None:
                print("Модели нет: передайте монитор в model.fit(..., callbacks=[monitor]).")
                return []
            print("\n" + HEADER.format(n=number), flush=True)
            outputs = []
            for prompt in self.prompts:
                try:
                    output = model.generate(prompt, max_length=self.max_length)
                except Exception as error:
                    output = f"[генерация не удалась: {type(error).__name__}: {error}]"
                outputs.append(str(output))
                print(output, end="\n\n", flush=True)
            self.generations[number] = outputs
            return outputs

    GenerationMonitor.__module__ = __name__
    GenerationMonitor.__qualname__ = "GenerationMonitor"
    return GenerationMonitor


def make_generation_monitor(prompts: Any, max_length: int = 150, every: int = 1) -> Any:
    """То же, что ``GenerationMonitor(prompts, max_length, every)``."""
    return _generation_monitor_class()(prompts, max_length=max_length, every=every)


def __getattr__(name: str) -> Any:
    # Класс наследует keras.callbacks.Callback, поэтому строится при первом обращении:
    # так ``import feedback.monitor`` не загружает keras.
    if name == "GenerationMonitor":
        return _generation_monitor_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "GenerationMonitor"])


# --------------------------------------------------------------------------- графики


def _history_dict(history: Any) -> dict[str, list[float]] | None:
    """``history.history`` из ``model.fit`` или словарь; ``None``, если это не история."""
    raw = getattr(history, "history", history)
    if not isinstance(raw, Mapping):
        return None
    result = {}
    for key, values in raw.items():
        try:
            result[str(key)] = [float(value) for value in values]
        except (TypeError, ValueError):
            continue
    return result


def _accuracy_key(metrics: Mapping[str, list[float]]) -> str | None:
    for key in _ACCURACY_KEYS:
        if metrics.get(key):
            return key
    for key, values in metrics.items():
        if key.endswith("accuracy") and not key.startswith("val_") and values:
            return key
    return None


def _usable(history: Any, label: str | None = None) -> dict[str, list[float]] | None:
    metrics = _history_dict(history)
    where = f" «{label}»" if label else ""
    if metrics is None:
        print(
            f"График{where} не построить: нужна история обучения — то, что вернул "
            "model.fit(...), например history = model.fit(...)."
        )
        return None
    if not metrics.get("loss"):
        print(f"График{where} не построить: в истории обучения нет значений loss.")
        return None
    return metrics


def _epochs(values: Sequence[float]) -> list[int]:
    return list(range(1, len(values) + 1))


def _style_epoch_axis(axes: Any, count: int) -> None:
    axes.set_xlabel("Эпоха")
    axes.set_xticks(range(1, count + 1))
    axes.grid(alpha=0.3)


#: Подпись графиков в учебном режиме: крошечная модель со случайными весами почти не учится, и
#: без подписи её ровная кривая выглядела бы ошибкой.
TINY_LABEL = "учебный режим: крошечная модель со случайными весами, кривая ничего не говорит"
#: Если потери меняются меньше чем на эту долю, ось не приближается к ним: иначе изменения в
#: четвёртом знаке выглядели бы крутым спадом.
FLAT_SHARE = 0.01


def _honest_scale(axes: Any, values: Sequence[float]) -> None:
    """Почти ровную кривую показывает ровной: ось от нуля, а не от минимума кривой."""
    numbers = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
    if not numbers:
        return
    top = max(numbers)
    if top > 0 and (top - min(numbers)) < FLAT_SHARE * top:
        axes.set_ylim(0, top * 1.15)


def _tiny(tiny: bool | None) -> bool:
    if tiny is not None:
        return tiny
    from feedback.gpu.tiny_mode import is_tiny_mode

    return is_tiny_mode()


def plot_loss(history: Any, title: str = "Обучение по эпохам", tiny: bool | None = None) -> Any:
    """Потери (и точность, если она есть) по эпохам из ``model.fit``.

    ``history`` — объект, который вернул ``model.fit``, или словарь
    ``history.history``. Возвращает фигуру matplotlib; если рисовать нечего,
    печатает подсказку и возвращает ``None``. В учебном режиме (``tiny``; по умолчанию —
    :func:`feedback.gpu.tiny_mode.is_tiny_mode`) заголовок говорит, что это учебный режим, а
    почти ровная кривая не растягивается на всю высоту графика.
    """
    import matplotlib.pyplot as plt

    metrics = _usable(history)
    if metrics is None:
        return None
    accuracy = _accuracy_key(metrics)
    columns = 2 if accuracy else 1
    figure, axes = plt.subplots(1, columns, figsize=(5 * columns + 1, 3.8), squeeze=False)
    loss_axes = axes[0][0]
    loss = metrics["loss"]
    loss_axes.plot(_epochs(loss), loss, marker="o", color="#4c72b0", label="обучение")
    if metrics.get("val_loss"):
        loss_axes.plot(
            _epochs(metrics["val_loss"]),
            metrics["val_loss"],
            marker="o",
            linestyle="--",
            color="#dd8452",
            label="проверка",
        )
        loss_axes.legend()
    loss_axes.set_ylabel("Потери (loss)")
    loss_axes.set_title("Потери")
    _style_epoch_axis(loss_axes, len(loss))
    _honest_scale(loss_axes, loss)
    if accuracy:
        accuracy_axes = axes[0][1]
        values = metrics[accuracy]
        accuracy_axes.plot(_epochs(values), values, marker="o", color="#55a868")
        accuracy_axes.set_ylabel("Доля верно предсказанных токенов")
        accuracy_axes.set_title(f"Точность ({accuracy})")
        _style_epoch_axis(accuracy_axes, len(values))
    figure.suptitle(f"{title}\n({TINY_LABEL})" if _tiny(tiny) else title)
    figure.tight_layout()
    return figure


def plot_loss_comparison(
    histories: Mapping[str, Any],
    title: str = "Сравнение обучения по эпохам",
    tiny: bool | None = None,
) -> Any:
    """Кривые потерь (и точности, если есть у всех) нескольких обучений на одном графике.

    ``histories`` — словарь «подпись → история», например
    ``{"7.5: батч 1": h1, "7.6: накопление ×8": h2}``. Непригодные истории
    пропускаются с сообщением; если рисовать нечего, возвращается ``None``.
    """
    import matplotlib.pyplot as plt

    if not isinstance(histories, Mapping):
        print(
            "Передайте словарь «подпись → история обучения», например "
            '{"7.5: батч 1": history_75, "7.6: накопление ×8": history_76}.'
        )
        return None
    ready = {}
    for label, history in histories.items():
        metrics = _usable(history, str(label))
        if metrics is not None:
            ready[str(label)] = metrics
    if not ready:
        return None
    keys = [_accuracy_key(metrics) for metrics in ready.values()]
    with_accuracy = all(keys)
    columns = 2 if with_accuracy else 1
    figure, axes = plt.subplots(1, columns, figsize=(5 * columns + 1, 3.8), squeeze=False)
    longest = max(len(metrics["loss"]) for metrics in ready.values())
    for index, (label, metrics) in enumerate(ready.items()):
        colour = f"C{index}"
        loss = metrics["loss"]
        axes[0][0].plot(_epochs(loss), loss, marker="o", color=colour, label=label)
        if with_accuracy:
            values = metrics[keys[index]]
            axes[0][1].plot(_epochs(values), values, marker="o", color=colour, label=label)
    axes[0][0].set_ylabel("Потери (loss)")
    axes[0][0].set_title("Потери")
    _style_epoch_axis(axes[0][0], longest)
    _honest_scale(axes[0][0], [v for metrics in ready.values() for v in metrics["loss"]])
    axes[0][0].legend()
    if with_accuracy:
        axes[0][1].set_ylabel("Доля верно предсказанных токенов")
        axes[0][1].set_title("Точность")
        _style_epoch_axis(axes[0][1], longest)
        axes[0][1].legend()
    figure.suptitle(f"{title}\n({TINY_LABEL})" if _tiny(tiny) else title)
    figure.tight_layout()
    return figure

"""Лабораторная 7.1 «Сравните модели разного размера»: Gemma-1B против Gemma-4B.

Всё, что нужно тетрадке, под одним именем ``generation``; внутри — по модулю на дело:

- :mod:`~feedback.generation.prompts` — модели курса и запросы (дословно как в оригинале);
- :mod:`~feedback.generation.sampling` — загрузка модели по имени курса (в bfloat16, а без
  видеокарты — крошечная учебная модель) и генерация ровно ``max_new_tokens`` токенов;
- :mod:`~feedback.generation.timing` — строка длительности, замер каждого вызова (первый
  включает компиляцию XLA), скорость по вычисленным токенам, график;
- :mod:`~feedback.generation.table` — генерации двух моделей рядом;
- :mod:`~feedback.generation.visible` — непечатаемые символы метками и пометка учебного режима;
- :mod:`~feedback.generation.check` — проверка списка генераций (наблюдение; вердикт — в
  :mod:`feedback.answers.generation`).

Модуль лёгкий: keras, keras_hub, jax и matplotlib импортируются только внутри функций,
поэтому ``from feedback import generation`` ничего тяжёлого не загружает.
"""

from feedback.generation.check import CHECK_TITLE, check_generations
from feedback.generation.prompts import (
    DEFAULT_NEW_TOKENS,
    JIDE_PROMPT,
    LENGTH_STEP,
    MODEL_PRESETS,
    PROMPTS,
)
from feedback.generation.sampling import (
    Generated,
    count_prompt_tokens,
    free_model,
    generate,
    load_model,
)
from feedback.generation.table import show_side_by_side, side_by_side_html
from feedback.generation.timing import (
    GenerationTimer,
    format_duration,
    loop_counts,
    plot_durations,
    timed_generations,
)
from feedback.generation.visible import show_texts, visible

__all__ = [
    "CHECK_TITLE",
    "DEFAULT_NEW_TOKENS",
    "JIDE_PROMPT",
    "LENGTH_STEP",
    "MODEL_PRESETS",
    "PROMPTS",
    "Generated",
    "GenerationTimer",
    "check_generations",
    "count_prompt_tokens",
    "format_duration",
    "free_model",
    "generate",
    "load_model",
    "loop_counts",
    "plot_durations",
    "show_side_by_side",
    "show_texts",
    "side_by_side_html",
    "timed_generations",
    "visible",
]

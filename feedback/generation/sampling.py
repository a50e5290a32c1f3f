"""Загрузка Gemma курса и генерация ровно ``max_new_tokens`` новых токенов.

Кроме текста генерация сообщает, сколько токенов модель на самом деле вычислила
(:class:`Generated`): запрос дополняется до длины, кратной ``LENGTH_STEP``, и модель
считает и эти позиции. Тяжёлые библиотеки импортируются только внутри функций.
"""

from __future__ import annotations

import math
import sys
import weakref
from dataclasses import dataclass, field, replace
from typing import Any

from feedback import runtime
from feedback.formatting import PARAMETERS, plural
from feedback.generation.prompts import (
    DEFAULT_NEW_TOKENS,
    LENGTH_STEP,
    MODEL_PRESETS,
    SAMPLER_SEED,
    TOP_K,
)
from feedback.settings import default_keras_backend

# --------------------------------------------------------------------------- загрузка


def load_model(name: str) -> Any:
    """Загружает модель курса по имени (``"Gemma-1B"`` или ``"Gemma-4B"``) в bfloat16.

    Пресет выбирает :func:`feedback.runtime.choose_preset`: настоящий на видеокарте,
    крошечный учебный без неё или при ``COURSE7_TINY=1`` (с заметным предупреждением).
    Зерно ``keras.utils.set_random_seed(812)`` задайте до вызова.
    """
    if name not in MODEL_PRESETS:
        known = ", ".join(f"«{key}»" for key in MODEL_PRESETS)
        raise ValueError(f"Неизвестная модель «{name}». Доступны: {known}.")
    default_keras_backend()
    import keras_hub

    real_preset = MODEL_PRESETS[name]
    preset = runtime.choose_preset(real_preset)
    model = keras_hub.models.Gemma3CausalLM.from_preset(preset, dtype="bfloat16")
    _use_sampler(model, greedy=True)
    _state(model).name = name
    shown = real_preset if preset == real_preset else "крошечная учебная модель"
    print(
        f"{name} ({shown}, {plural(model.count_params(), *PARAMETERS)}) загружена в "
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
        "Память модели освобождена: её веса удалены из памяти видеокарты, сессия Keras "
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

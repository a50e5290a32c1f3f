"""Лабораторная 7.3: оценка «влезут ли веса» до загрузки модели.

Прежде чем ждать загрузку и получить ``RESOURCE_EXHAUSTED``, можно всё посчитать:
веса занимают P · b байт. Здесь это сравнивается с памятью, которую модель реально
получит на найденной видеокарте, и, если карта большая, подсказывается, какая модель
упрётся в стену на ней.

Здесь же задание лабораторной: учащийся сам считает память под веса во float32
(:func:`check_weights_memory`), прежде чем увидеть сводку. В модуле — только наблюдение
этого задания; верный ответ, допуск и подсказки к ошибкам — в :mod:`feedback.answers.wall`
(в песочнице оценивания этой папки нет). Формула :func:`weights_gib` остаётся здесь: по ней
строятся сводка, диаграмма пресетов и :func:`feedback.precision.require_weights_dtype`.

Сколько памяти «реально получит» — решает только :mod:`feedback.gpu.xla_memory`: предел из
JAX уже включает долю ``XLA_PYTHON_CLIENT_MEM_FRACTION``, и здесь на неё больше ничего
не умножается.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from feedback.engine.graded import GradedCheck, graded_check
from feedback.engine.result import CheckResult
from feedback.engine.values import describe
from feedback.formatting import PARAMETERS, bytes_to_gb, format_gib, plural
from feedback.gpu.xla_memory import T4_TOTAL_BYTES, UsableMemory, usable_memory, xla_memory_settings


@dataclass(frozen=True)
class Preset:
    """Пресет keras-hub и число его параметров (для 12B и 27B — округлённо)."""

    name: str
    params: float


#: Текстовые Gemma 3 по возрастанию; числа для 1B и 4B — из keras-hub 0.32.
GEMMA3_PRESETS = (
    Preset("gemma3_1b", 999_885_952),
    Preset("gemma3_4b_text", 3_880_099_328),
    Preset("gemma3_12b_text", 12e9),
    Preset("gemma3_27b_text", 27e9),
)


def weights_gib(params: float, bytes_per_param: float) -> float:
    """Память под одни только веса, ГиБ."""
    return bytes_to_gb(params * bytes_per_param)


def t4_usable(env: Mapping[str, str] | None = None) -> UsableMemory:
    """Сколько памяти получила бы модель на T4 при текущих настройках XLA."""
    found = usable_memory(T4_TOTAL_BYTES, None, xla_memory_settings(env))
    assert found is not None  # вся память T4 известна
    return found


def usable_gib(accelerator: object | None = None, env: Mapping[str, str] | None = None) -> float:
    """Память для модели, ГиБ: на найденной видеокарте или, если её нет, на T4.

    ``accelerator`` — :class:`feedback.runtime.Accelerator` (или ``None``).
    """
    found = accelerator.usable(env) if accelerator is not None else None
    return (found or t4_usable(env)).gib


def preset_for_the_wall(usable: float, bytes_per_param: float = 4) -> Preset | None:
    """Самая маленькая Gemma 3, чьи веса не поместятся в ``usable`` ГиБ."""
    for preset in GEMMA3_PRESETS:
        if weights_gib(preset.params, bytes_per_param) > usable:
            return preset
    return None


def params_of(preset_name: str) -> float:
    """Число параметров пресета курса по имени."""
    for preset in GEMMA3_PRESETS:
        if preset.name == preset_name:
            return preset.params
    raise KeyError(f"неизвестный пресет {preset_name!r}")


def _in(dtype: str) -> str:
    """«во float32», но «в bfloat16»: «во» перед «ф»."""
    return f"во {dtype}" if dtype.startswith("f") else f"в {dtype}"


def wall_report_html(
    preset_name: str,
    accelerator: object | None,
    bytes_per_param: float = 4,
    env: Mapping[str, str] | None = None,
) -> str:
    """Сводка до загрузки: веса против памяти, которую модель получит, и вывод, что будет.

    ``accelerator`` — :class:`feedback.runtime.Accelerator` (или ``None``): нужны его
    ``describe()`` и ``usable(env)``.
    """
    need = weights_gib(params_of(preset_name), bytes_per_param)
    dtype = {4: "float32", 2: "bfloat16"}.get(bytes_per_param, f"{8 * bytes_per_param:g} бит")
    lines = [
        f"Модель <b>{html.escape(preset_name)}</b>: "
        f"{plural(params_of(preset_name), *PARAMETERS)} × "
        f"{plural(bytes_per_param, 'байт', 'байта', 'байт')} ({dtype}) = "
        f"<b>{html.escape(format_gib(need))}</b> только на веса."
    ]
    usable = accelerator.usable(env) if accelerator is not None else None
    if usable is None:
        t4 = t4_usable(env)
        verdict = "не поместятся" if need > t4.gib else "поместятся"
        lines.append(
            "Видеокарты нет, поэтому сравнивать не с чем. На T4 (15\u202f360 МиБ) модели "
            f"досталось бы <b>{html.escape(format_gib(t4.gib))}</b> — {html.escape(t4.how)}; "
            f"такие веса {verdict}."
        )
    else:
        lines.append(
            f"Видеокарта: {html.escape(accelerator.describe())}. Модели достанется "
            f"<b>{html.escape(format_gib(usable.gib))}</b> — {html.escape(usable.how)}."
        )
        if need > usable.gib:
            lines.append(
                "Вывод: <b>не поместится</b> — загрузка упадёт с ошибкой RESOURCE_EXHAUSTED."
            )
        else:
            lines.append("Вывод: на этой видеокарте веса <b>поместятся</b>, стены не будет.")
            wall = preset_for_the_wall(usable.gib, bytes_per_param)
            if wall is not None:
                lines.append(
                    f"Чтобы упереться в стену здесь, загрузите <b>{wall.name}</b> "
                    f"(≈ {html.escape(format_gib(weights_gib(wall.params, bytes_per_param)))} "
                    f"{_in(dtype)}). Осторожно: скачивание займёт много времени и места, "
                    "можно ограничиться расчётом."
                )
            else:
                lines.append(
                    "Даже самая большая Gemma 3 (27B) поместится: попробуйте полное обучение "
                    "— по лабораторной 7.4 ему нужно около 16 байт на параметр."
                )
    return "<div class='course7-wall'>" + "<br>".join(lines) + "</div>"


def show_wall_report(
    preset_name: str,
    accelerator: object | None,
    bytes_per_param: float = 4,
    env: Mapping[str, str] | None = None,
) -> None:
    """Показывает :func:`wall_report_html` в тетрадке."""
    from IPython.display import HTML, display

    display(HTML(wall_report_html(preset_name, accelerator, bytes_per_param, env)))


def presets_chart_data(bytes_per_param: float = 4) -> dict[str, dict[str, float]]:
    """Веса каждой Gemma 3 в ГиБ — для столбчатой диаграммы с линией видеокарты."""
    return {
        preset.name: {"Веса": weights_gib(preset.params, bytes_per_param)}
        for preset in GEMMA3_PRESETS
    }


def loaded_model_report(model: object | None, real_preset: str) -> str:
    """Что показала попытка загрузки во float32 (для ячейки после неё)."""
    if model is None:
        return (
            "Модель не загрузилась — как и предсказывал расчёт. Памяти видеокарты не хватило "
            "ещё до обучения: это и есть стена памяти. Веса при этом даже не скачивались: "
            "Keras Hub сначала строит модель в памяти видеокарты и только потом скачивает "
            "в неё веса, а построить её не удалось."
        )
    weights = getattr(model, "weights", [])
    counts = [math.prod(tuple(getattr(w, "shape", ()))) for w in weights]
    dtypes = [str(getattr(w, "dtype", "?")) for w in weights]
    params = sum(counts)
    size = sum(n * _bytes_of(dtype) for n, dtype in zip(counts, dtypes, strict=True))
    real = weights_gib(params_of(real_preset), 4)
    return (
        f"Модель загрузилась: {plural(params, *PARAMETERS)}, типы весов: "
        f"{', '.join(sorted(set(dtypes)))}, {format_gib(bytes_to_gb(size))}. "
        f"Настоящая {real_preset} во float32 заняла бы {format_gib(real)} — на T4 здесь "
        "была бы ошибка RESOURCE_EXHAUSTED."
    )


def _bytes_of(dtype: str) -> int:
    return {"float32": 4, "bfloat16": 2, "float16": 2, "int32": 4, "int8": 1}.get(dtype, 4)


# --------------------------------------------------------------------------- задание


#: Задание лабораторной 7.3: память под веса Gemma-4B во float32, ГиБ. Здесь — только
#: наблюдение и данные задания; верный ответ, допуск и подсказки —
#: в :mod:`feedback.answers.wall` (в песочнице оценивания этой папки нет).
GEMMA_4B_PARAMS = 3_880_099_328
WEIGHTS_TITLE = "weights_gib_float32"


def _observe_weights(
    value: Any, param_count: float = GEMMA_4B_PARAMS, bytes_per_param: float = 4
) -> Any:
    return describe(value)


WEIGHTS_MEMORY = GradedCheck(
    "wall.check_weights_memory", WEIGHTS_TITLE, _observe_weights, "wall.judge_weights_memory"
)


@graded_check(WEIGHTS_MEMORY)
def check_weights_memory(
    weights_gib_float32: Any, param_count: float = GEMMA_4B_PARAMS, bytes_per_param: float = 4
) -> CheckResult:
    """Проверяет задание 7.3: память под веса Gemma-4B во float32 в ГиБ.

    Ответ — число: ``param_count`` параметров по ``bytes_per_param`` байта, делённое на
    1024³. Ответ, округлённый до десятых, принимается; типичные ошибки (байты, ГБ вместо
    ГиБ, 2 байта вместо 4, круглые 4 млрд) получают свою подсказку.
    """

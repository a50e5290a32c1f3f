"""Лабораторная 7.3: оценка «влезут ли веса» до загрузки модели.

Прежде чем ждать загрузку и получить ``RESOURCE_EXHAUSTED``, можно всё посчитать:
веса занимают P · b байт. Здесь это сравнивается с памятью найденной видеокарты и,
если карта большая, подсказывается, какая модель упрётся в стену на ней.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from feedback.formatting import bytes_to_gb, format_gib, format_number

#: Доля памяти, которую JAX берёт себе при XLA_PYTHON_CLIENT_MEM_FRACTION=0.9.
MEM_FRACTION = 0.9


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


def usable_gib(memory_gib: float, fraction: float = MEM_FRACTION) -> float:
    """Сколько памяти видеокарты достанется модели при заданной доле JAX."""
    return memory_gib * fraction


def preset_for_the_wall(memory_gib: float, bytes_per_param: float = 4) -> Preset | None:
    """Самая маленькая Gemma 3, чьи веса не поместятся в эту видеокарту."""
    for preset in GEMMA3_PRESETS:
        if weights_gib(preset.params, bytes_per_param) > usable_gib(memory_gib):
            return preset
    return None


def params_of(preset_name: str) -> float:
    """Число параметров пресета курса по имени."""
    for preset in GEMMA3_PRESETS:
        if preset.name == preset_name:
            return preset.params
    raise KeyError(f"неизвестный пресет {preset_name!r}")


def wall_report_html(
    preset_name: str, memory_gib: float | None, device: str, bytes_per_param: float = 4
) -> str:
    """Сводка до загрузки: веса против памяти видеокарты и вывод, что будет."""
    need = weights_gib(params_of(preset_name), bytes_per_param)
    dtype = {4: "float32", 2: "bfloat16"}.get(bytes_per_param, f"{bytes_per_param} байт")
    lines = [
        f"Модель <b>{html.escape(preset_name)}</b>: "
        f"{format_number(params_of(preset_name))} параметров × {format_number(bytes_per_param)} "
        f"байта ({dtype}) = <b>{html.escape(format_gib(need))}</b> только на веса."
    ]
    if memory_gib is None:
        lines.append(
            "Видеокарты нет, поэтому сравнивать не с чем. На T4 (около 15 ГиБ, из них "
            f"JAX возьмёт {format_number(MEM_FRACTION * 100)} %) такие веса не поместятся."
        )
    else:
        usable = usable_gib(memory_gib)
        lines.append(
            f"Видеокарта: {html.escape(device)}, {html.escape(format_gib(memory_gib))}; "
            f"JAX возьмёт {format_number(MEM_FRACTION * 100)} % — "
            f"<b>{html.escape(format_gib(usable))}</b>."
        )
        if need > usable:
            lines.append(
                "Вывод: <b>не поместится</b> — загрузка упадёт с ошибкой RESOURCE_EXHAUSTED."
            )
        else:
            lines.append("Вывод: на этой видеокарте веса <b>поместятся</b>, стены не будет.")
            wall = preset_for_the_wall(memory_gib, bytes_per_param)
            if wall is not None:
                lines.append(
                    f"Чтобы упереться в стену здесь, загрузите <b>{wall.name}</b> "
                    f"(≈ {html.escape(format_gib(weights_gib(wall.params, bytes_per_param)))} "
                    "в float32). Осторожно: скачивание займёт много времени и места, "
                    "можно ограничиться расчётом."
                )
            else:
                lines.append(
                    "Даже самая большая Gemma 3 (27B) поместится: попробуйте полное обучение "
                    "— по лабораторной 7.4 ему нужно около 16 байт на параметр."
                )
    return "<div class='course7-wall'>" + "<br>".join(lines) + "</div>"


def show_wall_report(
    preset_name: str, memory_gib: float | None, device: str, bytes_per_param: float = 4
) -> None:
    """Показывает :func:`wall_report_html` в тетрадке."""
    from IPython.display import HTML, display

    display(HTML(wall_report_html(preset_name, memory_gib, device, bytes_per_param)))


def presets_chart_data(bytes_per_param: float = 4) -> dict[str, dict[str, float]]:
    """Веса каждой Gemma 3 в ГиБ — для столбчатой диаграммы с линией видеокарты."""
    return {
        preset.name: {"Веса": weights_gib(preset.params, bytes_per_param)}
        for preset in GEMMA3_PRESETS
    }


def loaded_model_report(model: object | None, real_preset: str) -> str:
    """Что показала попытка загрузки в float32 (для ячейки после неё)."""
    if model is None:
        return (
            "Модель не загрузилась — как и предсказывал расчёт. Памяти видеокарты не хватило "
            "ещё до обучения: это и есть стена памяти."
        )
    weights = getattr(model, "weights", [])
    counts = [math.prod(tuple(getattr(w, "shape", ()))) for w in weights]
    dtypes = [str(getattr(w, "dtype", "?")) for w in weights]
    params = sum(counts)
    size = sum(n * _bytes_of(dtype) for n, dtype in zip(counts, dtypes, strict=True))
    real = weights_gib(params_of(real_preset), 4)
    return (
        f"Модель загрузилась: {format_number(params)} параметров, типы весов: "
        f"{', '.join(sorted(set(dtypes)))}, {format_gib(bytes_to_gb(size))}. "
        f"Настоящая {real_preset} в float32 заняла бы {format_gib(real)} — на T4 здесь "
        "была бы ошибка RESOURCE_EXHAUSTED."
    )


def _bytes_of(dtype: str) -> int:
    return {"float32": 4, "bfloat16": 2, "float16": 2, "int32": 4, "int8": 1}.get(dtype, 4)

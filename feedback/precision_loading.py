"""Загрузка модели в лабораторной 7.5: тип весов до загрузки и заглушка незагруженной модели.

Ячейка загрузки 7.5 сначала спрашивает :func:`require_weights_dtype`, можно ли с выбранным в
задании 1 типом весов загружать и обучать модель, и только потом вызывает ``from_preset``.
Сверка идёт с памятью видеокарты не для одних весов, а для весов вместе с тем, что нужно
обучению сверх них (:func:`training_overhead_gib`, из записи измерений): иначе float32 на T4
прошёл бы сверку весов, а обучение потом упало бы с нехваткой памяти, и среду пришлось бы
перезапускать. Пока модели нет, на месте ``model`` лежит заглушка :data:`NOT_LOADED`: ячейки
ниже говорят одной русской строкой, что ждут задания 1, а не падают с ``NameError``.

Отдельно от :mod:`feedback.precision`, потому что это не проверки, а то, что нужно ячейке
загрузки до всякой проверки: разбор выбора учащегося (:func:`dtype_choice`), русские
исключения вместо трассировки и арифметика «веса + обучение ≤ память карты». Проверки
:mod:`feedback.precision` и вердикт :mod:`feedback.answers.precision` берут отсюда те же
таблицы типов и то же число сверх весов, так что ячейка загрузки и проверка задания 1 не
расходятся. Тетрадки берут эти имена по-прежнему из :mod:`feedback.precision`.

Модуль лёгкий: keras здесь не импортируется, :mod:`feedback.wall` и :mod:`feedback.measured`
импортируются только при вызове.
"""

from __future__ import annotations

from typing import Any

from feedback.engine.calling import LearnerProblem
from feedback.engine.waiting import WaitingForTask
from feedback.formatting import format_gib

#: Типы весов, которые принимает ``from_preset(..., dtype=…)``, и байты на параметр.
LOADABLE_DTYPES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
#: Политики смешанной точности: считают в 16 битах, но веса хранят во float32.
MIXED_POLICIES = {"mixed_float16", "mixed_bfloat16"}


def dtype_choice(value: Any) -> str:
    """Выбор учащегося как строка или :class:`LearnerProblem`, если выбора нет."""
    if value is Ellipsis:
        raise LearnerProblem(
            "тип весов ещё не выбран: вместо строки осталось «…».",
            "Впишите имя типа строкой в кавычках и выполните ячейку.",
        )
    if value is None:
        raise LearnerProblem(
            "тип весов ещё не выбран: в WEIGHTS_DTYPE пока None, а нужна строка с именем типа.",
            "Впишите имя типа строкой в кавычках и выполните ячейку.",
        )
    if not isinstance(value, str):
        raise LearnerProblem(
            f"тип нужен строкой, а получен объект типа {type(value).__name__}.",
            "Впишите имя типа строкой в кавычках.",
        )
    return value.strip()


class WeightsDtypeError(ValueError):
    """Модель не загружается: тип весов не годится. В Jupyter — только русский текст."""

    def _render_traceback_(self) -> list[str]:
        return ["Модель не загружена.", *str(self).splitlines()]


class WaitingForModel(WaitingForTask, WeightsDtypeError, AttributeError):
    """Ячейке курса нужна модель, а её не загрузили: в Jupyter — одна русская строка.

    Это и ``AttributeError``: ``getattr(model, имя, по умолчанию)`` и ``hasattr`` у заглушки
    не падают, и код, который перебирает переменные (инструменты, подсказки Jupyter), её
    спокойно обходит.
    """


class ModelNotLoaded:
    """Заглушка на месте ``model``, пока ячейка загрузки 7.5 не загрузила модель.

    Ячейка загрузки кладёт её в ``model`` до того, как отказаться работать без задания 1
    (:func:`require_weights_dtype`). Тогда ячейки ниже, которым нужна модель, не падают с
    английской ``NameError``: обращение к заглушке останавливает ячейку одной русской строкой
    (:class:`WaitingForModel`), а проверки отвечают красным вердиктом с тем же текстом. Ячейка
    по-прежнему падает, и в строгом режиме проверка тоже, — заглушка лишь говорит, чего она
    ждёт.
    """

    message = (
        "модель ещё не загружена, и эта ячейка ждёт её: выполните задание 1 (тип весов "
        "в WEIGHTS_DTYPE) и ячейку загрузки модели, а потом эту."
    )

    def _stop(self) -> WaitingForModel:
        return WaitingForModel(self.message[0].upper() + self.message[1:])

    def __getattr__(self, name: str) -> Any:
        raise self._stop()

    def __setattr__(self, name: str, value: Any) -> None:
        raise self._stop()

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise self._stop()

    def __repr__(self) -> str:
        return "<модель ещё не загружена: ячейка загрузки ждёт задания 1>"


#: Заглушка ``model`` для ячейки загрузки лабораторной 7.5 (:class:`ModelNotLoaded`).
NOT_LOADED = ModelNotLoaded()


def not_loaded() -> ModelNotLoaded:
    """Заглушка :data:`NOT_LOADED` для ячейки загрузки: ``model = precision.not_loaded()``.

    Вызов, а не имя: обзор кода при оценивании (:mod:`feedback.teacher.review`) считает
    переменную, связанную с объектом пакета проверок, ссылкой в пакет, и ответ задания 2
    ``model.backbone.enable_lora(rank=4)`` выглядел бы обращением к нему; результат вызова
    помощника курса — обычное значение.
    """
    return NOT_LOADED


#: Опыты записи измерений (:mod:`feedback.measured`), из которых 7.5 берёт память шага
#: обучения: шаг настоящей Gemma-4B в bfloat16 с LoRA ранга 4, AdamW, батч 1, длина 400, и одни
#: веса в bfloat16. Разница — всё, что обучению нужно сверх весов.
STEP_ROW = "b1_t4"
WEIGHTS_ROW = "w16_t4"
#: Пресет, для которого есть замер (на крошечной учебной модели сверять нечего).
MEASURED_PRESET = "gemma3_4b_text"


def measured_overhead_source() -> str:
    """Откуда число сверх весов: «замер на NVIDIA H200 …; T4 может понадобиться больше»."""
    from feedback import measured

    provenance = measured.load_record().provenance
    return (
        f"замер на {provenance.gpu}, jax {provenance.jax}, {provenance.date}; T4 (sm_75, без "
        "блоков bfloat16: XLA переводит умножения bfloat16 во float32) может понадобиться больше"
    )


def training_overhead_gib(preset: str) -> float:
    """Сколько памяти шагу обучения нужно сверх весов, ГиБ (0 — если замера для пресета нет).

    Это активации, логиты словаря, матрицы LoRA с их градиентами и моментами Adam и
    временные буферы XLA: пик шага с батчем 1 минус пик одних весов в bfloat16 — оба из
    записи измерений (:mod:`feedback.measured`). С весами во float32 и считать пришлось бы во
    float32, так что это нижняя граница.
    """
    if preset != MEASURED_PRESET:
        return 0.0
    from feedback import measured

    record = measured.load_record()
    return record.row(STEP_ROW).peak_gib - record.row(WEIGHTS_ROW).peak_gib


def require_weights_dtype(dtype: Any, preset: str, accelerator: Any = None) -> str:
    """Тип весов, если с ним можно загружать и обучать ``preset``; иначе :class:`WeightsDtypeError`.

    Вызывается перед ``from_preset``: незаполненное задание или тип, с которым настоящей
    Gemma не хватит памяти видеокарты — на веса или на веса вместе с обучением
    (:func:`training_overhead_gib`), — останавливают ячейку сразу: без загрузки, без
    нехватки памяти посреди обучения и без перезапуска среды. Из-за обучения отказывают
    только типу длиннее 16 бит: 16-битному уступить уже некому.
    """
    try:
        choice = dtype_choice(dtype)
    except LearnerProblem as problem:
        raise WeightsDtypeError("\n".join([problem.headline, *problem.details])) from None
    if choice not in LOADABLE_DTYPES and choice not in MIXED_POLICIES:
        raise WeightsDtypeError(
            f"Keras не знает тип весов {choice[:40]!r}. Подходят: {', '.join(LOADABLE_DTYPES)}."
        )
    from feedback import wall

    try:
        params = wall.params_of(preset)
    except KeyError:
        return choice  # крошечная учебная модель: поместится в любом типе
    bytes_per_param = LOADABLE_DTYPES.get(choice, 4)  # смешанная точность хранит float32
    weights = wall.weights_gib(params, bytes_per_param)
    usable = wall.usable_gib(accelerator)
    if weights > usable:
        raise WeightsDtypeError(
            f"С типом {choice} веса {preset} займут {format_gib(weights)}, а видеокарте доступно "
            f"{format_gib(usable)}: загрузка упала бы с нехваткой памяти, и среду пришлось бы "
            "перезапускать. Проверьте задание 1 и выполните ячейки заново."
        )
    overhead = training_overhead_gib(preset)
    # Оценка шага приближённая: отказываем, только если 16-битный тип оставил бы обучению
    # больше места. Если и с ним не хватает (малая доля памяти XLA), решит само обучение.
    shortest = min(LOADABLE_DTYPES.values())
    if bytes_per_param > shortest and weights + overhead > usable:
        left = usable - weights
        raise WeightsDtypeError(
            f"С типом {choice} веса {preset} займут {format_gib(weights)} из "
            f"{format_gib(usable)}, доступных видеокарте, и на обучение останется лишь "
            f"{format_gib(left, 2)}. А шагу обучения сверх весов нужно ещё около "
            f"{format_gib(overhead, 3)} ({measured_overhead_source()}): активации, логиты словаря, "
            "матрицы LoRA с градиентами и моментами Adam, временные буферы XLA. Даже если "
            "загрузка пройдёт, обучение упадёт с нехваткой памяти, и среду придётся "
            "перезапускать. Проверьте задание 1 и выполните ячейки заново."
        )
    return choice

"""Лабораторная 7.3: оценка «влезут ли веса» до загрузки модели.

Прежде чем ждать загрузку и получить ``RESOURCE_EXHAUSTED``, можно всё посчитать:
веса занимают P · b байт. Здесь это сравнивается с памятью, которую модель реально
получит на найденной видеокарте, и, если карта большая, подсказывается, какая модель
упрётся в стену на ней.

Здесь же задание лабораторной: учащийся сам считает память под веса во float32
(:func:`check_weights_memory`), прежде чем увидеть сводку. В модуле — только наблюдение
этого задания; верный ответ, допуск и подсказки к ошибкам — в :mod:`feedback.answers.wall`
(в песочнице оценивания этой папки нет). Формула :func:`weights_gib` остаётся здесь: по ней
строятся сводка, диаграмма пресетов и :func:`feedback.precision_loading.require_weights_dtype`.

Сколько памяти «реально получит» — решает только :mod:`feedback.gpu.xla_memory`: предел из
JAX уже включает долю памяти XLA, и здесь на неё больше ничего не умножается.

Стена может выглядеть и как бесконечная ячейка: на H200 с пулом размером 0,9 × T4 загрузка
во float32 не выдала ни ошибки, ни результата за 390 с — распределитель BFC ждёт до 10 с на
каждую неудавшуюся попытку, что память освободится. :class:`StallGuard` превращает такое
ожидание в ту же стену: если загрузка идёт дольше ``patience_s`` секунд, а память JAX занята
почти до предела, сторожевой поток прерывает главный (``_thread.interrupt_main``), и ячейка
кончается русским объяснением :class:`MemoryWallStall`, а не молчанием.
"""

from __future__ import annotations

import _thread
import html
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from feedback.engine.graded import GradedCheck, graded_check
from feedback.engine.result import CheckResult
from feedback.engine.values import describe
from feedback.formatting import PARAMETERS, bytes_to_gb, format_gib, format_plain, plural
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


#: Сколько секунд загрузка может стоять у предела памяти, прежде чем сторож её прервёт.
STALL_PATIENCE_S = 45.0
#: «У предела»: свободно меньше стольких байт из предела JAX (слой Gemma-4B во float32 —
#: до ≈ 0,1 ГиБ, и отказ приходит, когда места не хватает на очередной такой кусок).
STALL_HEADROOM_BYTES = 1024**3
#: Как часто сторож смотрит на память.
STALL_POLL_S = 1.0

MemoryProbe = Callable[[], "tuple[int, int] | None"]


def jax_memory_probe() -> tuple[int, int] | None:
    """(занято, предел) памяти первой видеокарты по ``memory_stats()`` или ``None``."""
    import sys

    jax = sys.modules.get("jax")
    if jax is None:
        return None
    try:
        device = jax.devices()[0]
        stats = device.memory_stats() or {}
    except Exception:  # сторож не должен ронять загрузку
        return None
    if device.platform != "gpu" or "bytes_limit" not in stats:
        return None
    return int(stats.get("bytes_in_use", 0)), int(stats["bytes_limit"])


class MemoryWallStall(RuntimeError):
    """Загрузку прервал сторож: она стояла у предела памяти — это та же стена.

    IPython показывает вместо трассировки русское объяснение (``_render_traceback_``).
    """

    def _render_traceback_(self) -> list[str]:
        return [str(self)]


def stall_message(waited_s: float, in_use: int, limit: int) -> str:
    """Русское объяснение прерванной загрузки: что случилось и что делать дальше."""
    return (
        f"Стена памяти: загрузка простояла {format_plain(waited_s, 0)} с, занято "
        f"{format_gib(bytes_to_gb(in_use))} из {format_gib(bytes_to_gb(limit))}, доступных JAX. "
        "Распределитель памяти XLA не нашёл места под очередные веса и ждал, не освободится ли "
        "память, — ошибки RESOURCE_EXHAUSTED от него можно ждать минутами, поэтому курс прервал "
        "загрузку сам. Модель не загрузилась: это та же нехватка памяти, что предсказал расчёт. "
        "Перед следующей лабораторной перезапустите среду — память видеокарты ещё занята."
    )


class StallGuard:
    """Сторож загрузки: ``with wall.StallGuard() as guard: model = ...from_preset(...)``.

    Если тело ``with`` идёт дольше ``patience_s`` секунд подряд, а память JAX занята почти до
    предела (``probe`` — (занято, предел); ``None`` — не известно, и тогда сторож молчит:
    долгая загрузка на большой карте — это скачивание, а не стена), сторож прерывает главный
    поток, и ``with`` кончается :class:`MemoryWallStall`. Настоящая ошибка нехватки памяти
    проходит как есть. ``guard.outcome`` после ``with``: ``"loaded"``, ``"error"`` (ошибка
    загрузки, например RESOURCE_EXHAUSTED), ``"stall"`` (прервал сторож) или ``"interrupted"``
    (остановили вручную).
    """

    def __init__(
        self,
        patience_s: float = STALL_PATIENCE_S,
        probe: MemoryProbe | None = None,
        headroom_bytes: int = STALL_HEADROOM_BYTES,
        poll_s: float = STALL_POLL_S,
    ) -> None:
        self.patience_s = patience_s
        self.probe = probe or jax_memory_probe
        self.headroom_bytes = headroom_bytes
        self.poll_s = poll_s
        self.outcome: str | None = None
        self.stall: tuple[float, int, int] | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._fired = False
        self._thread: threading.Thread | None = None

    def _at_limit(self) -> tuple[int, int] | None:
        try:
            found = self.probe()
        except Exception:  # сломанный замер памяти — «не известно»
            return None
        if found is None:
            return None
        in_use, limit = found
        return found if limit > 0 and limit - in_use < self.headroom_bytes else None

    def _watch(self) -> None:
        started = time.monotonic()
        stuck_since: float | None = None
        while not self._done.wait(self.poll_s):
            found = self._at_limit()
            now = time.monotonic()
            if found is None:
                stuck_since = None
                continue
            stuck_since = stuck_since if stuck_since is not None else now
            if now - started >= self.patience_s and now - stuck_since >= min(
                self.patience_s, 3 * self.poll_s
            ):
                with self._lock:
                    if self._done.is_set():
                        return
                    self._fired = True
                    self.stall = (now - started, *found)
                _thread.interrupt_main()
                return

    def __enter__(self) -> StallGuard:
        self._thread = threading.Thread(target=self._watch, name="course7-stall-guard", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, kind: Any, error: Any, traceback: Any) -> bool:
        try:
            with self._lock:
                self._done.set()
            if self._thread is not None:
                self._thread.join()
            if kind is None and self._fired:  # сторож выстрелил, когда загрузка уже кончилась
                self._swallow_late_interrupt()
        except KeyboardInterrupt:
            # Прерывание сторожа пришло уже здесь, после тела with (гонка в последний миг):
            # оно поглощено, а не вылетает сырой трассировкой. Ручную остановку — пропускаем.
            if not self._fired:
                raise
        fired = self._fired
        if kind is None:
            self.outcome = "loaded"
            return False
        if fired and issubclass(kind, KeyboardInterrupt) and self.stall is not None:
            self.outcome = "stall"
            raise MemoryWallStall(stall_message(*self.stall)) from None
        self.outcome = "interrupted" if issubclass(kind, KeyboardInterrupt) else "error"
        return False

    @staticmethod
    def _swallow_late_interrupt() -> None:
        """Сторож выстрелил в последний миг: ждём его KeyboardInterrupt здесь, а не в чужом коде."""
        try:
            time.sleep(0.2)
        except KeyboardInterrupt:
            pass


def loaded_model_report(
    model: object | None, real_preset: str, guard: StallGuard | None = None
) -> str:
    """Что показала попытка загрузки во float32 (для ячейки после неё).

    ``guard`` — :class:`StallGuard` загрузки, если он был: по нему видно, прервал ли её
    сторож или её остановили вручную.
    """
    outcome = getattr(guard, "outcome", None)
    if model is None and outcome == "interrupted":
        return (
            "Загрузку остановили вручную, и модель не загрузилась. Если ячейка долго шла без "
            "ошибки, это, скорее всего, та же стена: распределитель памяти XLA ждал, не "
            "освободится ли место. Перезапустите среду и выполните ячейки заново."
        )
    if model is None and outcome == "stall":
        return (
            "Модель не загрузилась: загрузка простояла у предела памяти, и курс прервал её. "
            "Это та же стена памяти, что предсказал расчёт, только XLA не успел сообщить о ней "
            "ошибкой RESOURCE_EXHAUSTED."
        )
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
        "была бы стена памяти."
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

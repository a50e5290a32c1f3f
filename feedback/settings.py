"""Все переменные окружения курса в одном месте: имя, значение по умолчанию, смысл, единица.

Реестр :data:`VARIABLES` — единственное место, где названы переменные ``COURSE7_*`` и
``FEEDBACK_*`` (и ``JOBS``, ``SCHEDULER``, ``ALLOW_INSECURE_DASK`` команды ``make grade``);
модули пакета читают их только через него. Модуль лёгкий (только стандартная библиотека) и
без секретов — одни имена и значения по умолчанию, — поэтому его читают и модули учащегося, и
ядро в песочнице оценивания, где :mod:`feedback.teacher` не виден. Настройки оценивания
целиком (пути, бюджеты) собирает :class:`feedback.teacher.core.settings.Settings`.

Таблица всех переменных: ``python -m feedback.settings``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Значения, которые включают и выключают переменную-флаг (без учёта регистра).
TRUE_VALUES = ("1", "true", "yes", "on")
FALSE_VALUES = ("0", "false", "no", "off")

#: Кто задаёт переменную (столбец «где» таблицы).
LEARNER = "учащийся"
GRADING = "оценивание"
KERNEL = "ядро оценивания"
TESTS = "тесты"

KIB = 1024
MIB = 1024**2
GIB = 1024**3


class SettingError(ValueError):
    """Значение переменной окружения не разобрать (текст — по-русски, с именем переменной)."""


def parse_size(text: str) -> int:
    """``"2G"``, ``"1536M"``, ``"2.5GiB"``, ``"800000000"`` → байты."""
    value = text.strip().lower().removesuffix("b").removesuffix("i")
    factor = 1
    for suffix, size in (("k", KIB), ("m", MIB), ("g", GIB), ("t", 1024 * GIB)):
        if value.endswith(suffix):
            value, factor = value[: -len(suffix)], size
            break
    return int(float(value.replace(",", ".")) * factor)


@dataclass(frozen=True)
class Variable:
    """Переменная окружения курса и её чтение.

    ``default`` — значение, как его записали бы в окружении (его и разбирает :meth:`read`,
    если переменная не задана или пуста); ``None`` — по умолчанию не задана, а что тогда,
    говорит ``default_note`` (например, бюджет зависит от лабораторной).
    """

    name: str
    kind: str  # flag, seconds, size, integer, path, text
    default: str | None
    meaning: str
    unit: str = ""
    where: str = LEARNER
    default_note: str = ""

    def raw(self, env: Mapping[str, str] | None = None) -> str | None:
        """Текст переменной без пробелов по краям; ``None`` — не задана или пуста."""
        env = os.environ if env is None else env
        value = str(env.get(self.name, "")).strip()
        return value or None

    def read(self, env: Mapping[str, str] | None = None) -> Any:
        """Значение нужного типа (или значение по умолчанию); неразборчивое — :class:`SettingError`.

        Флаг — ``True``, ``False`` или ``None`` (не задан или не похож на да/нет).
        """
        text = self.raw(env)
        if text is None:
            text = self.default
        if text is None:
            return None
        try:
            return _PARSERS[self.kind](text)
        except (ValueError, OverflowError):
            raise SettingError(
                f"{self.name}={text!r}: не разобрать значение ({self.unit or self.kind})"
            ) from None

    def read_or(self, fallback: Any, env: Mapping[str, str] | None = None) -> Any:
        """Как :meth:`read`, но неразборчивое или незаданное значение — ``fallback``."""
        try:
            value = self.read(env)
        except SettingError:
            return fallback
        return fallback if value is None else value

    @property
    def shown_default(self) -> str:
        """Значение по умолчанию для таблицы."""
        if self.default_note:
            return self.default_note
        return "не задана" if self.default is None else self.default


def _flag(text: str) -> bool | None:
    value = text.lower()
    if value in TRUE_VALUES:
        return True
    if value in FALSE_VALUES:
        return False
    return None


_PARSERS = {
    "flag": _flag,
    "seconds": lambda text: float(text.replace(",", ".")),
    "size": parse_size,
    "integer": int,
    "path": lambda text: Path(text).expanduser(),
    "text": lambda text: text,
}


# --------------------------------------------------------------------------- учащийся

STRICT = Variable(
    "FEEDBACK_STRICT",
    "flag",
    None,
    "строгий режим: непройденная проверка роняет ячейку (CI, nbval, nbgrader validate)",
    where=LEARNER,
)
TINY = Variable(
    "COURSE7_TINY",
    "flag",
    None,
    "GPU-лабораторные: 1 — только крошечная учебная модель, 0 — только настоящая; "
    "не задана — решает наличие видеокарты",
    default_note="не задана (решает видеокарта)",
)
CACHE_DIR = Variable(
    "COURSE7_CACHE_DIR",
    "path",
    "~/.cache/course7",
    "кэш курса: крошечная Gemma и скачанный набор вопросов",
    unit="папка",
)
OFFLINE = Variable(
    "COURSE7_OFFLINE",
    "flag",
    None,
    "1 — не ходить в сеть: набор вопросов из кэша или из пакета, без проверки доступа к Kaggle",
)
PREFLIGHT = Variable(
    "COURSE7_PREFLIGHT",
    "flag",
    "1",
    "0 — не проверять доступ к Kaggle до загрузки настоящей модели",
)
LIBRARY_LOGS = Variable(
    "COURSE7_LIBRARY_LOGS",
    "flag",
    None,
    "1 — показывать служебные сообщения TensorFlow, XLA и sentencepiece при загрузке",
)

# --------------------------------------------------------------------------- оценивание

GRADING_DIR = Variable(
    "COURSE7_GRADING_DIR",
    "path",
    None,
    "рабочая папка оценивания: база оценок, submitted/, autograded/, отчёты, таблицы "
    "(относительный путь — от текущей папки)",
    unit="папка",
    where=GRADING,
    default_note=".course-work в корне репозитория",
)
EXCHANGE_DIR = Variable(
    "COURSE7_EXCHANGE_DIR",
    "path",
    None,
    "exchange nbgrader курса на JupyterHub: выпуски, сданные работы и отчёты (на сервере — "
    "папка, открытая всем учащимся, например /srv/nbgrader/exchange)",
    unit="папка",
    where=GRADING,
    default_note="exchange/ в рабочей папке оценивания",
)
NOTEBOOK_TIMEOUT = Variable(
    "COURSE7_NOTEBOOK_TIMEOUT",
    "seconds",
    None,
    "бюджет времени всей тетрадки одной работы",
    unit="с",
    where=GRADING,
    default_note="180; GPU-лабораторные — 900",
)
CELL_TIMEOUT = Variable(
    "COURSE7_CELL_TIMEOUT",
    "seconds",
    None,
    "бюджет времени одной ячейки работы",
    unit="с",
    where=GRADING,
    default_note="60; GPU-лабораторные — 600",
)
CALL_TIMEOUT = Variable(
    "COURSE7_CALL_TIMEOUT",
    "seconds",
    "10",
    "бюджет одного вызова функции учащегося в проверке; задаёт преподаватель, а ядру "
    "оценивания программа оценивания передаёт его под тем же именем",
    unit="с",
    where=GRADING,
)
MEMORY_LIMIT = Variable(
    "COURSE7_MEMORY_LIMIT",
    "size",
    None,
    "бюджет памяти ядра одной работы (все его процессы вместе): 1536M, 2G, 2.5GiB",
    unit="байты",
    where=GRADING,
    default_note="1.5G; GPU-лабораторные — 3G",
)
SANDBOX = Variable(
    "COURSE7_SANDBOX",
    "text",
    "auto",
    "песочница ядер оценивания: auto — bubblewrap на Linux, bwrap — требовать его везде, "
    "none — без песочницы (только для своих тетрадок)",
    where=GRADING,
)
WARM_KERNELS = Variable(
    "COURSE7_WARM_KERNELS",
    "flag",
    "1",
    "ядра работ — копии прогретой заготовки, которая один раз за запуск импортировала "
    "keras, TensorFlow и IPython (0 — каждое ядро с нуля, как без заготовок: дольше, баллы те же)",
    where=GRADING,
)
UNITS_DIR = Variable(
    "COURSE7_UNITS_DIR",
    "path",
    None,
    "где создаются временные папки единиц оценивания (читается на машине, где они выполняются)",
    unit="папка",
    where=GRADING,
    default_note="системная временная папка",
)
GRADING_CACHE = Variable(
    "COURSE7_GRADING_CACHE",
    "path",
    "~/.cache/course7-grading",
    "кэши оценивания на машине, где выполняются единицы (рабочий Dask): крошечная Gemma, "
    "кэш компиляции JAX",
    unit="папка",
    where=GRADING,
)
JOBS = Variable(
    "JOBS",
    "integer",
    None,
    "сколько работ оценивать одновременно (make grade JOBS=4)",
    unit="работ",
    where=GRADING,
    default_note="число ядер процессора",
)
SCHEDULER = Variable(
    "SCHEDULER",
    "text",
    None,
    "адрес планировщика Dask (make grade SCHEDULER=tls://host:8786): работы выполняются "
    "на его рабочих",
    where=GRADING,
)
ALLOW_INSECURE_DASK = Variable(
    "ALLOW_INSECURE_DASK",
    "flag",
    None,
    "разрешить make grade планировщик Dask без TLS (tcp://): любой, кто достаёт до его порта, "
    "выполнит свой код на рабочих от имени оценивания — только если все машины и их "
    "пользователи ваши",
    where=GRADING,
    default_note="нельзя: только tls:// с сертификатами курса",
)
DASK_CERTS = Variable(
    "COURSE7_DASK_CERTS",
    "path",
    None,
    "папка сертификатов Dask курса (make dask-certs): центр курса, сертификаты планировщика "
    "и рабочих (node) и оценивания (client)",
    unit="папка",
    where=GRADING,
    default_note="dask-certs/ в рабочей папке",
)
RECORD_FD = Variable(
    "COURSE7_RECORD_FD",
    "integer",
    None,
    "дескриптор файла записи событий ядра (feedback.kernel_guard); задаёт песочница, "
    "ядро читает и убирает",
    unit="номер дескриптора",
    where=KERNEL,
)

# --------------------------------------------------------------------------- тесты

REQUIRE_SANDBOX = Variable(
    "COURSE7_REQUIRE_SANDBOX",
    "flag",
    None,
    "тесты: без bubblewrap не пропускать тесты оценивания, а падать (CI)",
    where=TESTS,
)
REQUIRE_BROWSER = Variable(
    "COURSE7_REQUIRE_BROWSER",
    "flag",
    None,
    "тесты: без Chromium не пропускать тесты в браузере, а падать (CI)",
    where=TESTS,
)
CHROMIUM = Variable(
    "COURSE7_CHROMIUM",
    "path",
    None,
    "тесты: путь к Chromium для тестов в браузере",
    unit="файл",
    where=TESTS,
    default_note="/usr/bin/chromium или Chromium Playwright",
)
RECORD_TABLES = Variable(
    "COURSE7_RECORD_TABLES",
    "path",
    None,
    "тесты: записать таблицы оценённого класса в эту папку как новый снимок "
    "(tests/teacher/records/test_class_tables_snapshot.py), а не сравнивать "
    "с tests/data/class-tables",
    unit="папка",
    where=TESTS,
)

#: Реестр: имя → переменная.
VARIABLES: dict[str, Variable] = {
    variable.name: variable
    for variable in (
        STRICT,
        TINY,
        CACHE_DIR,
        OFFLINE,
        PREFLIGHT,
        LIBRARY_LOGS,
        GRADING_DIR,
        EXCHANGE_DIR,
        NOTEBOOK_TIMEOUT,
        CELL_TIMEOUT,
        CALL_TIMEOUT,
        MEMORY_LIMIT,
        SANDBOX,
        WARM_KERNELS,
        UNITS_DIR,
        GRADING_CACHE,
        JOBS,
        SCHEDULER,
        ALLOW_INSECURE_DASK,
        DASK_CERTS,
        RECORD_FD,
        REQUIRE_SANDBOX,
        REQUIRE_BROWSER,
        CHROMIUM,
        RECORD_TABLES,
    )
}


# --------------------------------------------------------------------------- сторонние библиотеки
#
# Переменные окружения Keras, TensorFlow, JAX, XLA и CUDA, которые курс задаёт сам, с их
# значениями — только здесь: модули берут их отсюда (tests/labs/test_settings.py). Пути, которые
# зависят от запуска (кэш компиляции JAX, домашняя папка ядра), задаёт тот, кто создаёт папку;
# тетрадки задают свои переменные в тексте лабораторной.

#: Keras 3 считает на JAX, как в тетрадках GPU-лабораторных (действует до первого import keras).
KERAS_ON_JAX = {"KERAS_BACKEND": "jax"}
#: TensorFlow не печатает при импорте служебных сообщений C++ (CUDA, XLA).
QUIET_TENSORFLOW = {"TF_CPP_MIN_LOG_LEVEL": "3"}
#: JAX только на процессоре (ядра оценивания).
JAX_ON_CPU = {"JAX_PLATFORMS": "cpu"}
#: Видеокарты не видно вовсе (сборка крошечной Gemma не занимает её память).
CPU_ONLY = {**JAX_ON_CPU, "CUDA_VISIBLE_DEVICES": ""}
#: make gpu-check: без командных буферов XLA (как в тетрадках) и без предвыделения памяти —
#: тогда JAX честно показывает пиковую память.
GPU_CHECK_XLA = {
    "XLA_FLAGS": "--xla_gpu_enable_command_buffer=",
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
}
#: make gpu-check, опыт в пуле размером с T4: распределитель BFC занимает пул заранее, как по
#: умолчанию в тетрадках; долю пула (XLA_CLIENT_MEM_FRACTION и прежнее имя
#: XLA_PYTHON_CLIENT_MEM_FRACTION) проверка считает сама — по памяти карты.
GPU_CHECK_POOL = {"XLA_PYTHON_CLIENT_PREALLOCATE": "true"}
#: make gpu-check, остальная карта занята другим процессом: распределитель platform — память
#: по мере надобности, каждый массив прямо у CUDA, без пула и без ожидания освобождения.
#: (Вариант «BFC без предвыделения» — это GPU_CHECK_XLA.)
GPU_CHECK_PLATFORM = {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform"}
#: Лабораторная 7.3: без командных буферов XLA, ничего не занимать заранее и явный предел —
#: 90 % памяти карты, как в оригинале курса (на T4 — 13,5 ГиБ, меньше 14,45 ГиБ весов во
#: float32). Доля — под обоими именами: старые JAX читают только XLA_PYTHON_CLIENT_MEM_FRACTION,
#: у новых оно устарело в пользу XLA_CLIENT_MEM_FRACTION. Не platform: после JAX 0.10 он идёт
#: через тот же BFC (jax-ml/jax#39145), а до того не ограничивал память долей — на T4 веса во
#: float32 могли бы и поместиться.
LAB_WALL_XLA = {
    "XLA_FLAGS": "--xla_gpu_enable_command_buffer=",
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
    "XLA_CLIENT_MEM_FRACTION": "0.9",
    "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.9",
}
#: Лабораторные 7.5 и 7.6: то же, но с долей 0,95 — обучению нужна почти вся память T4, а без
#: явной доли BFC без предвыделения остановился бы на 75 %.
LAB_TRAINING_XLA = {
    "XLA_FLAGS": "--xla_gpu_enable_command_buffer=",
    "XLA_PYTHON_CLIENT_PREALLOCATE": "false",
    "XLA_CLIENT_MEM_FRACTION": "0.95",
    "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.95",
}
#: Кэш компиляции JAX у ядер оценивания и тестов: кэшировать любые компиляции XLA, даже короткие
#: и маленькие (у крошечной модели все такие), но без кэшей самого XLA — их путь входит в ключ,
#: и копия кэша в другой папке не совпала бы.
JAX_COMPILATION_CACHE_ENV = {
    "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
    "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "none",
}
#: Все переменные сторонних библиотек, которые задаёт курс.
LIBRARY_VARIABLES = {
    **KERAS_ON_JAX,
    **QUIET_TENSORFLOW,
    **CPU_ONLY,
    **GPU_CHECK_XLA,
    **GPU_CHECK_POOL,
    **GPU_CHECK_PLATFORM,
    **JAX_COMPILATION_CACHE_ENV,
}


def set_defaults(values: Mapping[str, str], env: MutableMapping[str, str] | None = None) -> None:
    """Задаёт переменные ``values``, которых ещё нет в ``env`` (по умолчанию — ``os.environ``)."""
    env = os.environ if env is None else env
    for name, value in values.items():
        env.setdefault(name, value)


def default_keras_backend(env: MutableMapping[str, str] | None = None) -> None:
    """Keras на JAX по умолчанию: ``KERAS_BACKEND=jax``, если keras ещё не импортирован и
    бэкенд не выбран явно (после импорта keras переменная уже ничего не меняет)."""
    if "keras" not in sys.modules:
        set_defaults(KERAS_ON_JAX, env)


def table() -> str:
    """Таблица переменных в Markdown: имя, по умолчанию, единица, где, смысл."""
    lines = [
        "| Переменная | По умолчанию | Единица | Где | Смысл |",
        "|---|---|---|---|---|",
    ]
    for variable in VARIABLES.values():
        lines.append(
            f"| `{variable.name}` | {variable.shown_default} | {variable.unit or '—'} "
            f"| {variable.where} | {variable.meaning} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())

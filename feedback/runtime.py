"""Где выполняется тетрадка, какая в ней видеокарта и какую модель загружать.

Модуль лёгкий: jax импортируется только если он уже загружен или если нет
``nvidia-smi``. Вызывайте :func:`detect_accelerator` и :func:`choose_preset`
после того, как заданы ``KERAS_BACKEND`` и переменные ``XLA_*``: первый вызов
``jax.devices()`` запускает бэкенд XLA, и поменять эти настройки потом нельзя.

Слои: :mod:`feedback.gpu.tiny_mode` (включён ли учебный режим) и :mod:`feedback.gpu.host`
(Colab, Kaggle или свой компьютер) ничего не импортируют из пакета;
:mod:`feedback.gpu.kaggle_access` ищет ключи Kaggle и проверяет доступ; этот модуль
собирает всё вместе в :func:`choose_preset`.

Все функции принимают необязательные ``env`` и подобные параметры, чтобы тесты
могли изобразить Colab, Kaggle или машину без видеокарты.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, replace

from feedback.gpu import tiny_mode
from feedback.gpu.host import detect_platform
from feedback.gpu.kaggle_access import AccessProblem, ensure_kaggle_access
from feedback.gpu.notice import show_notice
from feedback.gpu.tiny_mode import TINY_ENV_VAR, is_tiny_mode, tiny_setting
from feedback.gpu.xla_memory import UsableMemory, usable_memory, xla_memory_settings

__all__ = [
    "CPU_ONLY",
    "TINY_ENV_VAR",
    "Accelerator",
    "choose_preset",
    "detect_accelerator",
    "detect_platform",
    "is_tiny_mode",
    "parse_nvidia_smi",
    "show_runtime_status",
    "tiny_setting",
]


# --------------------------------------------------------------------------- видеокарта


@dataclass(frozen=True)
class Accelerator:
    """Что нашлось: ``kind`` — ``"gpu"``, ``"tpu"`` или ``"cpu"`` (видеокарты нет).

    Две цифры памяти на одно устройство, и они разные (см. :mod:`feedback.gpu.xla_memory`):
    ``memory_bytes`` — вся память карты (``nvidia-smi``), ``limit_bytes`` — предел,
    который сообщил JAX, с уже учтённой долей памяти XLA.
    """

    kind: str
    name: str = "CPU"
    count: int = 0
    memory_bytes: int | None = None
    source: str = "none"
    limit_bytes: int | None = None

    @property
    def is_accelerated(self) -> bool:
        return self.kind in ("gpu", "tpu") and self.count > 0

    @property
    def memory_gib(self) -> float | None:
        """Вся память одного устройства в ГиБ (или предел JAX, если всей не знаем)."""
        memory = self.memory_bytes if self.memory_bytes is not None else self.limit_bytes
        return None if memory is None else memory / 1024**3

    def usable(self, env: Mapping[str, str] | None = None) -> UsableMemory | None:
        """Сколько памяти получит модель при текущих настройках XLA (без двойного учёта доли)."""
        if not self.is_accelerated:
            return None
        return usable_memory(self.memory_bytes, self.limit_bytes, xla_memory_settings(env))

    def describe(self) -> str:
        """Короткое описание по-русски, например «1 × Tesla T4, 15,0 ГиБ»."""
        if not self.is_accelerated:
            return "видеокарты нет, только процессор"
        text = f"{self.count} × {self.name}"
        if self.memory_gib is not None:
            text += f", {self.memory_gib:.1f} ГиБ".replace(".", ",")
        return text


CPU_ONLY = Accelerator(kind="cpu")


def _from_jax() -> Accelerator | None:
    try:
        import jax

        devices = jax.devices()
    except Exception:
        return None
    for kind in ("gpu", "tpu"):
        found = [d for d in devices if d.platform == kind]
        if found:
            limit = None
            try:
                stats = found[0].memory_stats() or {}
                limit = stats.get("bytes_limit")
            except Exception:
                pass
            name = getattr(found[0], "device_kind", kind.upper())
            return Accelerator(kind, name, len(found), None, "jax", limit)
    return CPU_ONLY


def parse_nvidia_smi(output: str) -> Accelerator:
    """Разбирает ``nvidia-smi --query-gpu=name,memory.total --format=csv,noheader,nounits``."""
    rows = [line.rsplit(",", 1) for line in output.strip().splitlines() if "," in line]
    rows = [(name.strip(), memory.strip()) for name, memory in rows]
    if not rows:
        return CPU_ONLY
    name, memory_mib = rows[0]
    memory = int(float(memory_mib) * 1024**2) if memory_mib.replace(".", "").isdigit() else None
    return Accelerator("gpu", name, len(rows), memory, "nvidia-smi")


def _from_nvidia_smi(
    run: Callable[..., subprocess.CompletedProcess], which: Callable[[str], str | None]
) -> Accelerator | None:
    executable = which("nvidia-smi")
    if not executable:
        return None
    try:
        result = run(
            [executable, "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if result.returncode != 0:
        return None
    return parse_nvidia_smi(result.stdout)


def detect_accelerator(
    use_jax: bool | None = None,
    run: Callable[..., subprocess.CompletedProcess] = subprocess.run,
    which: Callable[[str], str | None] = shutil.which,
    modules: Mapping[str, object] | None = None,
    from_jax: Callable[[], Accelerator | None] = _from_jax,
) -> Accelerator:
    """Находит видеокарту (или TPU) и её память; без неё возвращает ``CPU_ONLY``.

    Порядок: jax, если он уже импортирован (он знает, что реально увидит Keras, и
    сообщает предел памяти XLA); иначе ``nvidia-smi``; иначе jax, если он установлен
    (так находится TPU). ``use_jax=False`` запрещает jax, ``use_jax=True`` спрашивает
    его первым. Видеокарту, найденную через jax, дополняет вся её память из
    ``nvidia-smi``: jax знает только предел.
    """
    modules = sys.modules if modules is None else modules
    found = None
    if use_jax or (use_jax is None and "jax" in modules):
        found = from_jax()
    if found is None:
        found = _from_nvidia_smi(run, which)
    if found is None and use_jax is None and "jax" not in modules:
        if importlib.util.find_spec("jax"):
            found = from_jax()
    if found is None:
        return CPU_ONLY
    if found.source == "jax" and found.kind == "gpu" and found.memory_bytes is None:
        smi = _from_nvidia_smi(run, which)
        if smi is not None and smi.memory_bytes is not None:
            found = replace(found, memory_bytes=smi.memory_bytes)
    return found


# --------------------------------------------------------------------------- выбор модели


def tiny_notice_body(real_preset: str, reason: str) -> str:
    return (
        f"Причина: {reason}.\n\n"
        f"Вместо {real_preset} загружена крошечная модель той же архитектуры Gemma 3: "
        "2 слоя, около 0,1 млн параметров, случайные веса и собственный маленький "
        "токенизатор. Весь код лабораторной выполнится: загрузка в bfloat16, LoRA, "
        "обучение с накоплением градиентов, генерация.\n\n"
        "Но генерации будут бессмысленным набором слов и символов, а время, память и "
        "потери ничего не говорят о настоящей модели. Ошибку нехватки памяти "
        "(RESOURCE_EXHAUSTED) здесь тоже не увидеть.\n\n"
        "Чтобы работать с настоящей Gemma, запустите тетрадку на GPU (Colab или Kaggle, "
        f"T4) и не задавайте {TINY_ENV_VAR}=1."
    )


def choose_preset(
    real_preset: str,
    env: MutableMapping[str, str] | None = None,
    accelerator: Accelerator | None = None,
    check_credentials: bool = True,
    notify: Callable[[str, str], None] = show_notice,
    check_access: Callable[[str], AccessProblem | None] | None = None,
    **credential_options,
) -> str:
    """Возвращает имя настоящего пресета (например ``"gemma3_4b_text"``) или путь
    к крошечному офлайн-пресету.

    Крошечная модель выбирается при ``COURSE7_TINY=1`` (так работает CI) или
    когда видеокарты нет; об этом выводится заметное предупреждение.
    ``COURSE7_TINY=0`` требует настоящую модель даже без видеокарты.

    Для настоящей модели до загрузки проверяется доступ к Kaggle
    (:func:`feedback.gpu.kaggle_access.ensure_kaggle_access`): есть ли ключ и отдаёт ли
    Kaggle файл ``config.json`` пресета. Ошибка — короткая русская инструкция без
    трассировки. ``check_credentials=False`` пропускает всю проверку,
    ``check_access`` подменяет сетевой запрос (в тестах); в учебном режиме в сеть
    не ходим никогда.
    """
    env = os.environ if env is None else env
    setting = tiny_setting(env)
    reason = None
    if setting is True:
        reason = f"задана переменная окружения {TINY_ENV_VAR}=1"
    elif setting is None:
        accelerator = accelerator or detect_accelerator()
        if not accelerator.is_accelerated:
            reason = "видеокарта не найдена, вычисления идут на процессоре"

    if reason is None:
        if check_credentials:
            ensure_kaggle_access(real_preset, env, check=check_access, **credential_options)
        tiny_mode.remember_choice(False)
        return real_preset

    from feedback.gpu.tiny_gemma import tiny_preset_path

    path = tiny_preset_path(env=env)
    tiny_mode.remember_choice(True)
    notify(
        f"⚠ Учебный режим: крошечная модель вместо {real_preset}",
        tiny_notice_body(real_preset, reason),
    )
    return path


# --------------------------------------------------------------------------- среда выполнения


def runtime_guidance(platform: str, accelerator: Accelerator) -> tuple[str, str, str]:
    """Заголовок, текст и уровень сообщения «где мы и есть ли видеокарта»."""
    if accelerator.is_accelerated:
        return (
            f"Видеокарта найдена: {accelerator.describe()}",
            "Можно работать с настоящей моделью Gemma.",
            "info",
        )
    how = {
        "colab": "В Colab: меню «Среда выполнения» → «Сменить среду выполнения» → "
        "аппаратный ускоритель «T4 GPU» → «Сохранить», затем выполните тетрадку заново.",
        "kaggle": "В Kaggle: справа панель «Session options» → «Accelerator» → "
        "«GPU T4 x2» (нужен подтверждённый телефон), затем выполните тетрадку заново.",
        "local": "Локально: нужна видеокарта NVIDIA с CUDA и jax с поддержкой CUDA "
        "(pip install -U 'jax[cuda12]').",
    }[platform]
    return (
        "Видеокарты нет: тетрадка работает на процессоре",
        f"{how}\n\nМожно и продолжить без видеокарты: лабораторная выполнится на "
        "крошечной учебной модели той же архитектуры — код тот же, но генерации будут "
        "бессмысленными.",
        "warning",
    )


def show_runtime_status(
    platform: str | None = None,
    accelerator: Accelerator | None = None,
    notify: Callable[..., None] = show_notice,
) -> Accelerator:
    """Показывает, где выполняется тетрадка и есть ли видеокарта (или TPU); возвращает её."""
    platform = platform or detect_platform()
    accelerator = accelerator or detect_accelerator()
    title, body, level = runtime_guidance(platform, accelerator)
    notify(title, body, level)
    return accelerator

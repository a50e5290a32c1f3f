"""Где выполняется блокнот, какая в нём видеокарта и откуда брать ключи Kaggle.

Модуль лёгкий: jax импортируется только если он уже загружен или если нет
``nvidia-smi``. Вызывайте :func:`detect_accelerator` и :func:`choose_preset`
после того, как заданы ``KERAS_BACKEND`` и переменные ``XLA_*``: первый вызов
``jax.devices()`` запускает бэкенд XLA, и поменять эти настройки потом нельзя.

Все функции принимают необязательные ``env``, ``home`` и подобные параметры,
чтобы тесты могли изобразить Colab, Kaggle или чужой домашний каталог.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path

from feedback.notice import show_notice

TINY_ENV_VAR = "COURSE7_TINY"
_TRUE_VALUES = ("1", "true", "yes", "on")
_FALSE_VALUES = ("0", "false", "no", "off")

KAGGLE_TOKEN_URL = "https://www.kaggle.com/settings"
GEMMA_LICENCE_URL = "https://www.kaggle.com/models/keras/gemma3"

# Решение последнего вызова choose_preset в этом процессе (None — ещё не вызывали).
_last_choice_tiny: bool | None = None


# --------------------------------------------------------------------------- платформа


def detect_platform(
    env: Mapping[str, str] | None = None, modules: Mapping[str, object] | None = None
) -> str:
    """Возвращает ``"colab"``, ``"kaggle"`` или ``"local"``."""
    env = os.environ if env is None else env
    modules = sys.modules if modules is None else modules
    if "google.colab" in modules or "COLAB_RELEASE_TAG" in env or "COLAB_GPU" in env:
        return "colab"
    if "KAGGLE_KERNEL_RUN_TYPE" in env or "KAGGLE_URL_BASE" in env:
        return "kaggle"
    return "local"


# --------------------------------------------------------------------------- ускоритель


@dataclass(frozen=True)
class Accelerator:
    """Что нашлось: ``kind`` — ``"gpu"``, ``"tpu"`` или ``"cpu"`` (ускорителя нет)."""

    kind: str
    name: str = "CPU"
    count: int = 0
    memory_bytes: int | None = None  # на одно устройство
    source: str = "none"

    @property
    def is_accelerated(self) -> bool:
        return self.kind in ("gpu", "tpu") and self.count > 0

    @property
    def memory_gib(self) -> float | None:
        return None if self.memory_bytes is None else self.memory_bytes / 1024**3

    def describe(self) -> str:
        """Короткое описание по-русски, например «1 × Tesla T4, 14,7 ГиБ»."""
        if not self.is_accelerated:
            return "ускорителя нет, только процессор"
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
            memory = None
            try:
                stats = found[0].memory_stats() or {}
                memory = stats.get("bytes_limit")
            except Exception:
                pass
            name = getattr(found[0], "device_kind", kind.upper())
            return Accelerator(kind, name, len(found), memory, "jax")
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
) -> Accelerator:
    """Находит ускоритель и его память; без ускорителя возвращает ``CPU_ONLY``.

    Порядок: jax, если он уже импортирован (он знает, что реально увидит Keras,
    и учитывает ``XLA_PYTHON_CLIENT_MEM_FRACTION``); иначе ``nvidia-smi``; иначе
    jax, если он установлен (так находится TPU). ``use_jax=False`` запрещает jax,
    ``use_jax=True`` спрашивает его первым.
    """
    modules = sys.modules if modules is None else modules
    if use_jax or (use_jax is None and "jax" in modules):
        found = _from_jax()
        if found is not None:
            return found
    found = _from_nvidia_smi(run, which)
    if found is not None:
        return found
    if use_jax is None and "jax" not in modules and importlib.util.find_spec("jax"):
        found = _from_jax()
        if found is not None:
            return found
    return CPU_ONLY


# --------------------------------------------------------------------------- Kaggle


@dataclass(frozen=True)
class KaggleCredentials:
    """Найденные учётные данные Kaggle и их источник.

    ``source``: ``"colab-secrets"``, ``"kaggle-notebook"`` (Kaggle сам даёт доступ,
    ``username``/``key`` пустые), ``"env"`` или ``"kaggle.json"``.
    """

    source: str
    username: str | None = None
    key: str | None = field(default=None, repr=False)
    path: str | None = None


class KaggleCredentialsError(RuntimeError):
    """Нет ключей Kaggle, а настоящие веса Gemma без них не скачать.

    В Jupyter показывается только русская инструкция, без трассировки: ячейка
    останавливается, но учащийся сразу видит, что делать.
    """

    def _render_traceback_(self) -> list[str]:
        return ["Не найдены ключи Kaggle.", "", *str(self).splitlines()]


def _colab_secret(name: str) -> str | None:
    try:
        from google.colab import userdata

        return userdata.get(name)
    except Exception:
        return None


def _kaggle_json_paths(env: Mapping[str, str], home: Path) -> list[Path]:
    if env.get("KAGGLE_CONFIG_DIR"):
        return [Path(env["KAGGLE_CONFIG_DIR"]).expanduser() / "kaggle.json"]
    return [home / ".kaggle" / "kaggle.json", home / ".config" / "kaggle" / "kaggle.json"]


def _read_kaggle_json(path: Path) -> tuple[str, str] | None:
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(content, dict) and content.get("username") and content.get("key"):
        return str(content["username"]), str(content["key"])
    return None


def find_kaggle_credentials(
    env: Mapping[str, str] | None = None,
    home: str | os.PathLike | None = None,
    colab_secret: Callable[[str], str | None] | None = None,
    platform: str | None = None,
) -> KaggleCredentials | None:
    """Ищет ключи Kaggle; побеждает первый найденный источник.

    Порядок: секреты Colab ``KAGGLE_USERNAME``/``KAGGLE_KEY`` → окружение самого
    Kaggle → переменные окружения ``KAGGLE_USERNAME``/``KAGGLE_KEY`` → файл
    ``kaggle.json`` (``$KAGGLE_CONFIG_DIR`` или ``~/.kaggle``, ``~/.config/kaggle``).
    """
    env = os.environ if env is None else env
    home = Path(home) if home is not None else Path.home()
    platform = platform or detect_platform(env)
    if colab_secret is None and platform == "colab":
        colab_secret = _colab_secret
    if colab_secret is not None:
        username, key = colab_secret("KAGGLE_USERNAME"), colab_secret("KAGGLE_KEY")
        if username and key:
            return KaggleCredentials("colab-secrets", username, key)
    if "KAGGLE_KERNEL_RUN_TYPE" in env:
        return KaggleCredentials("kaggle-notebook")
    if env.get("KAGGLE_USERNAME") and env.get("KAGGLE_KEY"):
        return KaggleCredentials("env", env["KAGGLE_USERNAME"], env["KAGGLE_KEY"])
    for path in _kaggle_json_paths(env, home):
        found = _read_kaggle_json(path)
        if found:
            return KaggleCredentials("kaggle.json", found[0], found[1], str(path))
    return None


def missing_credentials_message(platform: str) -> str:
    """Что сделать, чтобы скачать Gemma с Kaggle, — по шагам для данной платформы."""
    common = (
        "Настоящие веса Gemma 3 скачиваются с Kaggle, а ключи Kaggle не найдены.\n"
        f"1. Войдите на Kaggle, откройте {KAGGLE_TOKEN_URL}, раздел API, и нажмите "
        "«Create New Token»: скачается файл kaggle.json с полями username и key.\n"
        f"2. Откройте {GEMMA_LICENCE_URL} и примите лицензию Gemma тем же аккаунтом "
        "(без согласия скачивание завершится ошибкой 403).\n"
    )
    if platform == "colab":
        where = (
            "3. В Colab откройте панель «Секреты» (значок ключа слева) и добавьте два "
            "секрета: KAGGLE_USERNAME (значение username из kaggle.json) и KAGGLE_KEY "
            "(значение key). Включите им доступ к блокноту.\n"
            "4. Перезапустите эту ячейку."
        )
    elif platform == "kaggle":
        where = (
            "3. В блокноте Kaggle войдите в аккаунт и включите доступ в интернет "
            "(Settings → Internet), затем перезапустите ячейку."
        )
    else:
        where = (
            "3. Положите kaggle.json в ~/.kaggle/kaggle.json (chmod 600) или задайте "
            "переменные окружения KAGGLE_USERNAME и KAGGLE_KEY до запуска Jupyter.\n"
            "4. Перезапустите ячейку."
        )
    tail = (
        "\nБез видеокарты и ключей можно пройти лабораторную на крошечной учебной "
        f"модели: задайте {TINY_ENV_VAR}=1."
    )
    return common + where + tail


def ensure_kaggle_credentials(
    env: MutableMapping[str, str] | None = None,
    home: str | os.PathLike | None = None,
    colab_secret: Callable[[str], str | None] | None = None,
    platform: str | None = None,
) -> KaggleCredentials:
    """Находит ключи Kaggle или бросает :class:`KaggleCredentialsError` с инструкцией.

    Ключи из секретов Colab копируются в ``env`` (``KAGGLE_USERNAME``/``KAGGLE_KEY``),
    чтобы их увидел kagglehub, которым Keras Hub скачивает веса.
    """
    env = os.environ if env is None else env
    platform = platform or detect_platform(env)
    found = find_kaggle_credentials(env, home, colab_secret, platform)
    if found is None:
        raise KaggleCredentialsError(missing_credentials_message(platform))
    if found.source == "colab-secrets":
        env["KAGGLE_USERNAME"] = found.username or ""
        env["KAGGLE_KEY"] = found.key or ""
    return found


# --------------------------------------------------------------------------- выбор модели


def tiny_setting(env: Mapping[str, str] | None = None) -> bool | None:
    """``COURSE7_TINY``: ``True`` — только крошечная модель, ``False`` — только настоящая,
    ``None`` — решать по наличию видеокарты."""
    env = os.environ if env is None else env
    value = env.get(TINY_ENV_VAR, "").strip().lower()
    if value in _TRUE_VALUES:
        return True
    if value in _FALSE_VALUES:
        return False
    return None


def is_tiny_mode(env: Mapping[str, str] | None = None) -> bool:
    """Учебный режим: ``COURSE7_TINY=1`` или :func:`choose_preset` выбрал крошечную модель."""
    setting = tiny_setting(env)
    if setting is not None:
        return setting
    return bool(_last_choice_tiny)


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
        "Чтобы работать с настоящей Gemma, запустите блокнот на GPU (Colab или Kaggle, "
        f"T4) и не задавайте {TINY_ENV_VAR}=1."
    )


def choose_preset(
    real_preset: str,
    env: MutableMapping[str, str] | None = None,
    accelerator: Accelerator | None = None,
    check_credentials: bool = True,
    notify: Callable[[str, str], None] = show_notice,
    **credential_options,
) -> str:
    """Возвращает имя настоящего пресета (например ``"gemma3_4b_text"``) или путь
    к крошечному офлайн-пресету.

    Крошечная модель выбирается при ``COURSE7_TINY=1`` (так работает CI) или
    когда видеокарты нет; об этом выводится заметное предупреждение.
    ``COURSE7_TINY=0`` требует настоящую модель даже без видеокарты. Для настоящей
    модели проверяются ключи Kaggle (см. :func:`ensure_kaggle_credentials`).
    """
    global _last_choice_tiny
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
            ensure_kaggle_credentials(env, **credential_options)
        _last_choice_tiny = False
        return real_preset

    from feedback.tiny_gemma import tiny_preset_path

    path = tiny_preset_path(env=env)
    _last_choice_tiny = True
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
        "аппаратный ускоритель «T4 GPU» → «Сохранить», затем выполните блокнот заново.",
        "kaggle": "В Kaggle: справа панель «Session options» → «Accelerator» → "
        "«GPU T4 x2» (нужен подтверждённый телефон), затем выполните блокнот заново.",
        "local": "Локально: нужна видеокарта NVIDIA с CUDA и jax с поддержкой CUDA "
        "(pip install -U 'jax[cuda12]').",
    }[platform]
    return (
        "Видеокарты нет: блокнот работает на процессоре",
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
    """Показывает, где выполняется блокнот и есть ли ускоритель; возвращает ускоритель."""
    platform = platform or detect_platform()
    accelerator = accelerator or detect_accelerator()
    title, body, level = runtime_guidance(platform, accelerator)
    notify(title, body, level)
    return accelerator

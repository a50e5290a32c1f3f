"""Доступ к весам Gemma на Kaggle: ключи, проверка до загрузки и понятные ошибки.

Keras Hub скачивает пресет через kagglehub. Если что-то не так — ключа нет, ключ
неверный (401), лицензия Gemma не принята (403), нет интернета, — учащийся видит в
ячейке ``from_preset`` английскую трассировку или вовсе «Preset … has no
config.json». Поэтому до загрузки:

1. :func:`find_kaggle_credentials` ищет ключи там же и в том же порядке, что
   kagglehub 1.0 (``kagglehub.config.get_kaggle_credentials`` и
   ``kagglesdk.kaggle_env.get_access_token_from_env``); функция повторяет этот
   порядок, а не зовёт kagglehub, чтобы назвать учащемуся источник ключа и
   работать в лёгких CPU-лабораториях, где kagglehub нет. Что порядок совпадает,
   проверяет тест против самого kagglehub.
2. :func:`preflight` запрашивает у Kaggle файл ``config.json`` пресета (несколько
   килобайт) тем же вызовом, что и ``from_preset``, — ``kagglehub.model_download``,
   — и с ограничением по времени. Ошибка превращается в короткий русский
   текст с точным следующим шагом (:class:`KaggleAccessError`), без трассировки.

Модуль лёгкий: kagglehub и requests импортируются только внутри функций.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from feedback.gpu.host import detect_platform
from feedback.gpu.tiny_mode import TINY_ENV_VAR
from feedback.settings import OFFLINE, PREFLIGHT

KAGGLE_API_SETTINGS_URL = "https://www.kaggle.com/settings/api"
KAGGLE_SETTINGS_URL = "https://www.kaggle.com/settings"
GEMMA_LICENCE_URL = "https://www.kaggle.com/models/keras/gemma3"

#: Переменная, которая отключает проверку доступа до загрузки (``0``).
PREFLIGHT_ENV_VAR = PREFLIGHT.name
#: Та же, что в :mod:`feedback.qa_data`: ``1`` — в сеть не ходить.
OFFLINE_ENV_VAR = OFFLINE.name
#: Сколько секунд ждать ответа Kaggle на проверку доступа.
DEFAULT_PREFLIGHT_TIMEOUT_S = 20.0
#: Первый файл, который ``from_preset`` скачивает с Kaggle.
CONFIG_FILE = "config.json"

# Источники ключей, как их называет учащемуся сообщение об ошибке.
SOURCE_NAMES = {
    "kaggle-notebook": "тетрадка Kaggle (доступ от имени вашего аккаунта Kaggle)",
    "kaggle-notebook-token": "токен тетрадки Kaggle (файл из KAGGLE_API_V1_TOKEN)",
    "env-token": "переменная окружения KAGGLE_API_TOKEN",
    "access_token": "файл ~/.kaggle/access_token",
    "env": "переменные окружения KAGGLE_USERNAME и KAGGLE_KEY",
    "kaggle.json": "файл kaggle.json",
    "colab-secrets-token": "секрет Colab KAGGLE_API_TOKEN",
    "colab-secrets": "секреты Colab KAGGLE_USERNAME и KAGGLE_KEY",
}


# --------------------------------------------------------------------------- ключи


@dataclass(frozen=True)
class KaggleCredentials:
    """Найденный способ войти в Kaggle и его источник (ключ из :data:`SOURCE_NAMES`).

    ``token`` — новый API-токен Kaggle; ``username``/``key`` — старый ключ из
    kaggle.json; у ``"kaggle-notebook"`` все три пустые: тетрадка Kaggle сама
    подключает модель от имени своего владельца.
    """

    source: str
    username: str | None = None
    key: str | None = field(default=None, repr=False)
    token: str | None = field(default=None, repr=False)
    path: str | None = None

    def describe(self) -> str:
        """Источник по-русски, например «файл ~/.kaggle/access_token»."""
        text = SOURCE_NAMES.get(self.source, self.source)
        if self.source == "kaggle.json" and self.path:
            text = f"файл {self.path}"
        return text


def _colab_secret(name: str) -> str | None:
    try:
        from google.colab import userdata

        return userdata.get(name)
    except Exception:
        return None


def _clean(value: str | None) -> str:
    """Как kagglehub: переводы строк убираются, пробелы по краям тоже."""
    return (value or "").replace("\r", "").replace("\n", "").strip()


def _read_token_file(path: Path) -> str | None:
    try:
        text = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text or None


def _read_kaggle_json(path: Path) -> tuple[str, str] | None:
    try:
        content = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if isinstance(content, dict) and content.get("username") and content.get("key"):
        return str(content["username"]), str(content["key"])
    return None


def in_kaggle_notebook(env: Mapping[str, str] | None = None) -> bool:
    """Как ``kagglesdk.kaggle_env.is_in_kaggle_notebook``: тетрадка Kaggle со своим прокси."""
    env = os.environ if env is None else env
    return "KAGGLE_KERNEL_RUN_TYPE" in env and "KAGGLE_DATA_PROXY_URL" in env


def kaggle_attaches_models(env: Mapping[str, str] | None = None) -> bool:
    """Подключит ли kagglehub модель средствами тетрадки Kaggle, без ключа учащегося.

    Так kagglehub поступает в тетрадке Kaggle, если не задано ``DISABLE_KAGGLE_CACHE``.
    """
    env = os.environ if env is None else env
    disabled = env.get("DISABLE_KAGGLE_CACHE", "").lower() in ("true", "1", "t")
    return in_kaggle_notebook(env) and not disabled


def find_kaggle_credentials(
    env: Mapping[str, str] | None = None,
    home: str | os.PathLike | None = None,
    colab_secret: Callable[[str], str | None] | None = None,
    platform: str | None = None,
) -> KaggleCredentials | None:
    """Ищет, чем kagglehub войдёт в Kaggle; побеждает первый источник, как в kagglehub 1.0.

    Порядок: тетрадка Kaggle подключает модели сама → файл из ``KAGGLE_API_V1_TOKEN``
    (в тетрадке Kaggle) → ``KAGGLE_API_TOKEN`` (сам токен или путь к файлу с ним) →
    ``~/.kaggle/access_token`` (и ``access_token.txt``) → ``KAGGLE_USERNAME`` +
    ``KAGGLE_KEY`` → ``kaggle.json`` (``$KAGGLE_CONFIG_DIR`` или ``~/.kaggle``) →
    в Colab секреты ``KAGGLE_API_TOKEN``, затем ``KAGGLE_USERNAME`` + ``KAGGLE_KEY``.
    Половинки (имя без ключа, пустой файл, испорченный kaggle.json) пропускаются.
    """
    env = os.environ if env is None else env
    home = Path(home) if home is not None else Path.home()
    platform = platform or detect_platform(env)
    if colab_secret is None and platform == "colab":
        colab_secret = _colab_secret

    if kaggle_attaches_models(env):
        return KaggleCredentials("kaggle-notebook")
    if in_kaggle_notebook(env) and env.get("KAGGLE_API_V1_TOKEN"):
        path = Path(env["KAGGLE_API_V1_TOKEN"])
        token = _read_token_file(path)
        if token:
            return KaggleCredentials("kaggle-notebook-token", token=token, path=str(path))
    value = env.get("KAGGLE_API_TOKEN")
    if value and Path(value).exists():
        # Путь к файлу с токеном. Пустой файл kagglesdk не пропускает дальше к
        # ~/.kaggle/access_token, а сразу переходит к старым ключам — так и мы.
        token = _read_token_file(Path(value))
        if token:
            return KaggleCredentials("env-token", token=token, path=value)
    elif value:
        return KaggleCredentials("env-token", token=value)
    else:
        for name in ("access_token", "access_token.txt"):
            path = home / ".kaggle" / name
            token = _read_token_file(path)
            if token:
                return KaggleCredentials("access_token", token=token, path=str(path))
    if env.get("KAGGLE_USERNAME") and env.get("KAGGLE_KEY"):
        return KaggleCredentials("env", env["KAGGLE_USERNAME"], env["KAGGLE_KEY"])
    folder = Path(env["KAGGLE_CONFIG_DIR"]).expanduser() if env.get("KAGGLE_CONFIG_DIR") else None
    json_path = (folder or home / ".kaggle") / "kaggle.json"
    found = _read_kaggle_json(json_path)
    if found:
        return KaggleCredentials("kaggle.json", found[0], found[1], path=str(json_path))
    if colab_secret is not None:
        token = _clean(colab_secret("KAGGLE_API_TOKEN"))
        if token:
            return KaggleCredentials("colab-secrets-token", token=token)
        username, key = _clean(colab_secret("KAGGLE_USERNAME")), _clean(colab_secret("KAGGLE_KEY"))
        if username and key:
            return KaggleCredentials("colab-secrets", username, key)
    return None


# --------------------------------------------------------------------------- ошибки


class KaggleProblem(RuntimeError):
    """Настоящие веса Gemma не скачать; в Jupyter видна только русская инструкция.

    IPython показывает вместо трассировки то, что вернёт ``_render_traceback_``:
    заголовок и шаги. Ячейка останавливается, но учащийся сразу видит, что делать.
    """

    title = "Веса Gemma с Kaggle не скачать."

    def _render_traceback_(self) -> list[str]:
        return [self.title, "", *str(self).splitlines()]


class KaggleCredentialsError(KaggleProblem):
    """Ключ Kaggle не найден ни в одном месте, где его ищет kagglehub."""

    title = "Не найдены ключи Kaggle."


class KaggleAccessError(KaggleProblem):
    """Ключ найден, но Kaggle не отдал ``config.json`` пресета (401, 403, сеть, таймаут)."""

    def __init__(self, problem: AccessProblem, message: str) -> None:
        super().__init__(message)
        self.problem = problem
        self.title = ACCESS_TITLES.get(problem.kind, ACCESS_TITLES["unknown"])


# --------------------------------------------------------------------------- инструкции


def _where_to_put_token(platform: str) -> str:
    if platform == "colab":
        return (
            "В Colab откройте панель «Секреты» (значок ключа слева), добавьте секрет "
            "KAGGLE_API_TOKEN со значением токена и включите ему доступ к тетрадке."
        )
    if platform == "kaggle":
        return (
            "В тетрадке Kaggle ключ не нужен: войдите в свой аккаунт Kaggle, и тетрадка "
            "подключит модель от вашего имени."
        )
    return (
        "Сохраните токен одной строкой в файл ~/.kaggle/access_token (chmod 600) или "
        "задайте переменную окружения KAGGLE_API_TOKEN до запуска Jupyter."
    )


def _tiny_tail() -> str:
    return (
        "Можно пройти лабораторную и без Kaggle — на крошечной учебной модели: задайте "
        f'{TINY_ENV_VAR}=1 до запуска тетрадки (или os.environ["{TINY_ENV_VAR}"] = "1" '
        "в первой ячейке) и выполните его заново."
    )


def missing_credentials_message(platform: str) -> str:
    """Что сделать, чтобы скачать Gemma с Kaggle, — по шагам для данной платформы."""
    steps = [
        "Настоящие веса Gemma 3 скачиваются с Kaggle, а ключ Kaggle не найден.",
        f"1. Войдите на Kaggle, откройте {KAGGLE_API_SETTINGS_URL} и создайте API-токен "
        "(новый вид ключа — одна строка). Старый ключ kaggle.json с полями username и key "
        "тоже подойдёт.",
        f"2. Откройте {GEMMA_LICENCE_URL} и примите лицензию Gemma тем же аккаунтом "
        "(без согласия Kaggle ответит ошибкой 403).",
        f"3. {_where_to_put_token(platform)}",
    ]
    if platform == "colab":
        steps.append(
            "   Старый ключ кладите двумя секретами: KAGGLE_USERNAME (username из kaggle.json) "
            "и KAGGLE_KEY (key)."
        )
    elif platform == "local":
        steps.append(
            "   Старый ключ: файл ~/.kaggle/kaggle.json (chmod 600) или переменные "
            "KAGGLE_USERNAME и KAGGLE_KEY."
        )
    steps.append("4. Выполните эту ячейку ещё раз.")
    return "\n".join(steps) + "\n\n" + _tiny_tail()


@dataclass(frozen=True)
class AccessProblem:
    """Почему Kaggle не отдал файл: ``kind`` — одно из :data:`ACCESS_TITLES`.

    ``status`` — код HTTP, если он был; ``detail`` — исходное сообщение библиотеки
    одной строкой (для преподавателя; учащемуся показывается только в ``unknown``).
    """

    kind: str
    status: int | None = None
    detail: str = ""


ACCESS_TITLES = {
    "unauthorized": "Kaggle не принял ваш ключ (ошибка 401).",
    "forbidden": "Kaggle не даёт скачать Gemma: не принята лицензия (ошибка 403).",
    "offline": "Нет связи с Kaggle.",
    "timeout": "Kaggle не ответил вовремя.",
    "not_found": "Kaggle не нашёл этот пресет (ошибка 404).",
    "server": "На стороне Kaggle сбой.",
    "unknown": "Не удалось проверить доступ к весам Gemma на Kaggle.",
}


def _network_steps(platform: str) -> list[str]:
    if platform == "kaggle":
        return [
            "В тетрадке Kaggle включите интернет: справа панель «Session options» → "
            "«Internet» → On. Переключателя нет или он неактивен — подтвердите номер "
            f"телефона в настройках аккаунта ({KAGGLE_SETTINGS_URL}, «Phone verification»): "
            "без этого Kaggle не даёт ни интернет, ни видеокарту.",
            "Затем выполните эту ячейку ещё раз.",
        ]
    if platform == "colab":
        return [
            "Проверьте, что вкладка Colab подключена к среде выполнения (справа вверху), и "
            "выполните ячейку ещё раз. Не помогло — «Среда выполнения» → «Перезапустить "
            "сеанс» и снова все ячейки по порядку.",
        ]
    return [
        "Проверьте, что этот компьютер выходит в интернет и открывает https://www.kaggle.com. "
        "Если вы за прокси, задайте HTTPS_PROXY до запуска Jupyter.",
        "Затем выполните эту ячейку ещё раз.",
    ]


def access_message(
    problem: AccessProblem,
    platform: str,
    credentials: KaggleCredentials | None = None,
    timeout: float = DEFAULT_PREFLIGHT_TIMEOUT_S,
) -> str:
    """Русская инструкция к :class:`AccessProblem`: что случилось и что сделать дальше."""
    source = credentials.describe() if credentials else "ключ не найден"
    if problem.kind == "unauthorized":
        lines = [
            f"Ключ взят отсюда: {source}. Kaggle считает его неверным: ключ скопирован не "
            "целиком, отозван или устарел.",
            f"1. Откройте {KAGGLE_API_SETTINGS_URL} и создайте новый API-токен.",
            f"2. {_where_to_put_token(platform)} Старый ключ уберите или замените: kagglehub "
            "берёт первый найденный.",
            "3. Выполните эту ячейку ещё раз.",
        ]
    elif problem.kind == "forbidden":
        who = (
            "аккаунтом, в котором открыта эта тетрадка"
            if credentials is not None and credentials.source == "kaggle-notebook"
            else f"тем аккаунтом, чей ключ используется ({source})"
        )
        lines = [
            "Gemma — модель с лицензией: скачать её может только аккаунт, который принял "
            "условия Google.",
            f"1. Откройте {GEMMA_LICENCE_URL} и нажмите кнопку согласия с лицензией {who}.",
            "2. Подождите минуту и выполните эту ячейку ещё раз.",
        ]
    elif problem.kind in ("offline", "timeout"):
        first = (
            "Запрос к Kaggle не прошёл: нет подключения к интернету, Kaggle недоступен или "
            "соединение блокирует прокси."
            if problem.kind == "offline"
            else f"Kaggle не ответил за {timeout:.0f} с: медленная сеть, прокси или Kaggle "
            "перегружен."
        )
        lines = [first, *_network_steps(platform)]
    elif problem.kind == "not_found":
        lines = [
            "Такого пресета нет на Kaggle. Обычно это значит, что версия keras-hub не та, "
            "что нужна курсу: выполните первую ячейку тетрадки (установку пакета курса), "
            "перезапустите среду и попробуйте снова.",
        ]
    elif problem.kind == "server":
        lines = [
            "Kaggle ответил ошибкой сервера. Это не ваша ошибка: подождите несколько минут "
            "и выполните ячейку ещё раз.",
        ]
    else:
        lines = [
            "Проверка доступа закончилась неожиданной ошибкой. Выполните ячейку ещё раз; "
            "если ошибка повторится, покажите это сообщение преподавателю.",
            f"Ответ библиотеки: {problem.detail or 'нет подробностей'}",
        ]
    return "\n".join(lines) + "\n\n" + _tiny_tail()


# --------------------------------------------------------------------------- проверка


def kaggle_handle(preset: str) -> str:
    """Адрес пресета на Kaggle без ``kaggle://``, как его видит Keras Hub.

    ``"gemma3_4b_text"`` → ``"keras/gemma3/keras/gemma3_4b_text/2"`` (версия — та,
    что записана в установленном keras-hub).
    """
    if preset.startswith("kaggle://"):
        return preset.removeprefix("kaggle://")
    import keras_hub

    handle = keras_hub.models.Backbone.presets[preset]["kaggle_handle"]
    return handle.removeprefix("kaggle://")


def _one_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".strip()


def classify_error(error: BaseException) -> AccessProblem:
    """Сводит исключение kagglehub или requests к одному из видов :data:`ACCESS_TITLES`."""
    import requests

    detail = _one_line(error)
    response = getattr(error, "response", None)
    status = getattr(response, "status_code", None)
    if isinstance(error, requests.HTTPError) and status is not None:
        if status == 401:
            return AccessProblem("unauthorized", status, detail)
        if status == 403:
            return AccessProblem("forbidden", status, detail)
        if status == 404:
            return AccessProblem("not_found", status, detail)
        if status == 429 or status >= 500:
            return AccessProblem("server", status, detail)
        return AccessProblem("unknown", status, detail)
    # ConnectTimeout — наследник и Timeout, и ConnectionError: сначала таймаут.
    if isinstance(error, requests.Timeout | TimeoutError):
        return AccessProblem("timeout", None, detail)
    if isinstance(error, requests.ConnectionError | ConnectionError):
        return AccessProblem("offline", None, detail)
    name = type(error).__name__
    if name == "UnauthenticatedError":
        return AccessProblem("unauthorized", None, detail)
    lowered = str(error).lower()
    # Тетрадка Kaggle отвечает на подключение модели текстом, а не кодом HTTP.
    if name == "BackendError" and any(
        word in lowered for word in ("consent", "licen", "terms", "permission", "403")
    ):
        return AccessProblem("forbidden", None, detail)
    return AccessProblem("unknown", None, detail)


def _download_config(handle: str) -> str:
    """Скачивает ``config.json`` пресета тем же вызовом, что и Keras Hub."""
    import kagglehub

    return kagglehub.model_download(handle, path=CONFIG_FILE)


def preflight(
    handle: str,
    timeout: float = DEFAULT_PREFLIGHT_TIMEOUT_S,
    download: Callable[[str], object] = _download_config,
) -> AccessProblem | None:
    """Проверяет, что Kaggle отдаст пресет; ``None`` — всё в порядке.

    Запрос идёт через kagglehub, поэтому ключ, прокси и путь (скачивание по HTTP,
    подключение модели в тетрадке Kaggle или кэш Colab) те же, что у ``from_preset``,
    а скачанный ``config.json`` остаётся в кэше kagglehub. Ждём не дольше ``timeout``
    секунд: у HTTP-клиента Kaggle своего ограничения нет, поэтому запрос идёт в
    фоновом потоке, который по истечении срока просто оставляется доделывать своё.
    """
    outcome: dict[str, BaseException] = {}

    def run() -> None:
        try:
            download(handle)
        except BaseException as error:  # любую ошибку разбирает classify_error
            outcome["error"] = error

    library_logger = logging.getLogger("kagglehub")
    level = library_logger.level
    library_logger.setLevel(logging.WARNING)  # без «Downloading Model: …» при проверке
    try:
        worker = threading.Thread(target=run, name="course7-kaggle-preflight", daemon=True)
        worker.start()
        worker.join(timeout)
    finally:
        library_logger.setLevel(level)
    if worker.is_alive():
        return AccessProblem("timeout", None, f"нет ответа за {timeout:g} с")
    if "error" in outcome:
        return classify_error(outcome["error"])
    return None


def preflight_wanted(env: Mapping[str, str] | None = None) -> bool:
    """Можно ли ходить в сеть с проверкой: не при ``COURSE7_PREFLIGHT=0`` и не офлайн."""
    return PREFLIGHT.read(env) is not False and OFFLINE.read(env) is not True


def ensure_kaggle_access(
    preset: str,
    env: Mapping[str, str] | None = None,
    platform: str | None = None,
    check: Callable[[str], AccessProblem | None] | None = None,
    timeout: float = DEFAULT_PREFLIGHT_TIMEOUT_S,
    **credential_options,
) -> KaggleCredentials:
    """Ключ найден и Kaggle отдаёт пресет — или исключение с русской инструкцией.

    :class:`KaggleCredentialsError`, если ключа нет нигде; :class:`KaggleAccessError`,
    если проверка (:func:`preflight`, или ``check`` в тестах) нашла 401, 403, сеть,
    таймаут. Проверка пропускается при ``COURSE7_PREFLIGHT=0`` и ``COURSE7_OFFLINE=1``.
    """
    env = os.environ if env is None else env
    platform = platform or detect_platform(env)
    found = find_kaggle_credentials(env, platform=platform, **credential_options)
    if found is None:
        raise KaggleCredentialsError(missing_credentials_message(platform))
    if check is None:
        if not preflight_wanted(env):
            return found

        def check(name: str) -> AccessProblem | None:
            return preflight(kaggle_handle(name), timeout=timeout)

    problem = check(preset)
    if problem is not None:
        raise KaggleAccessError(problem, access_message(problem, platform, found, timeout))
    return found

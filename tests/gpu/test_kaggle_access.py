"""Доступ к Kaggle: ключи во всех местах kagglehub и проверка до загрузки без интернета.

Сетевые тесты идут через настоящий kagglehub к локальному HTTP-серверу на 127.0.0.1:
kagglesdk в режиме ``KAGGLE_API_ENVIRONMENT=LOCALHOST`` ходит на наш адрес, и сервер
отвечает 401, 403, 404, 500, молчит (таймаут) или не слушает порт (соединение
отклонено). «Нет интернета» изображает прокси на закрытом локальном порту.
"""

from __future__ import annotations

import http.server
import json
import socket
import sys
import threading
import types
from pathlib import Path

import pytest

from feedback import runtime
from feedback.gpu import kaggle_access, tiny_mode
from feedback.gpu.kaggle_access import (
    AccessProblem,
    KaggleAccessError,
    KaggleCredentialsError,
    access_message,
    ensure_kaggle_access,
    find_kaggle_credentials,
    missing_credentials_message,
    preflight,
)

#: Один процесс xdist на модули с keras и крошечной Gemma в самом процессе тестов: импорт
#: TensorFlow стоит секунды процессора, а скомпилированные программы JAX остаются в процессе.
pytestmark = pytest.mark.xdist_group("keras_in_process")


HANDLE = "keras/gemma3/keras/gemma3_4b_text/2"
T4 = runtime.Accelerator("gpu", "Tesla T4", 1, 15 * 1024**3, "nvidia-smi")
CREDENTIAL_VARS = (
    "KAGGLE_API_TOKEN",
    "KAGGLE_USERNAME",
    "KAGGLE_KEY",
    "KAGGLE_CONFIG_DIR",
    "KAGGLE_KERNEL_RUN_TYPE",
    "KAGGLE_DATA_PROXY_URL",
    "KAGGLE_API_V1_TOKEN",
    "KAGGLE_URL_BASE",
    "COLAB_RELEASE_TAG",
    "COLAB_GPU",
    "TBE_RUNTIME_ADDR",
    "COURSE7_TINY",
    "COURSE7_OFFLINE",
    "COURSE7_PREFLIGHT",
)


@pytest.fixture(autouse=True)
def _clean_machine(tmp_path, monkeypatch):
    """Ни ключей, ни прокси, ни прошлых решений: каждый тест сам кладёт, что нужно."""
    for name in CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path / "kagglehub-cache"))
    tiny_mode.forget_choice()
    yield
    tiny_mode.forget_choice()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def kaggle_json(directory: Path, username: str = "json-user", key: str = "json-key") -> Path:
    return write(directory / "kaggle.json", json.dumps({"username": username, "key": key}))


# --------------------------------------------------------------------------- ключи


@pytest.mark.parametrize(
    ("setup", "source", "secret"),
    [
        (lambda home, env: env.update(KAGGLE_API_TOKEN="KGAT_env"), "env-token", "KGAT_env"),
        (
            lambda home, env: env.update(
                KAGGLE_API_TOKEN=str(write(home / "token.txt", "KGAT_file\n"))
            ),
            "env-token",
            "KGAT_file",
        ),
        (
            lambda home, env: write(home / ".kaggle" / "access_token", "KGAT_home\n"),
            "access_token",
            "KGAT_home",
        ),
        (
            lambda home, env: write(home / ".kaggle" / "access_token.txt", "KGAT_txt"),
            "access_token",
            "KGAT_txt",
        ),
        (
            lambda home, env: env.update(KAGGLE_USERNAME="env-user", KAGGLE_KEY="env-key"),
            "env",
            "env-key",
        ),
        (lambda home, env: kaggle_json(home / ".kaggle"), "kaggle.json", "json-key"),
        (
            lambda home, env: env.update(
                KAGGLE_CONFIG_DIR=str(kaggle_json(home / "custom", key="custom-key").parent)
            ),
            "kaggle.json",
            "custom-key",
        ),
    ],
    ids=[
        "env-token",
        "env-token-file",
        "access_token",
        "access_token.txt",
        "env-legacy",
        "kaggle.json",
        "KAGGLE_CONFIG_DIR",
    ],
)
def test_each_location_is_found(tmp_path, setup, source, secret):
    home, env = tmp_path / "home", {}
    setup(home, env)
    found = find_kaggle_credentials(env, home, platform="local")
    assert found is not None and found.source == source
    assert secret in (found.token, found.key)
    assert secret not in repr(found)


def test_colab_secrets_token_before_legacy(tmp_path):
    secrets = {"KAGGLE_API_TOKEN": " KGAT_colab\n", "KAGGLE_USERNAME": "u", "KAGGLE_KEY": "k"}
    found = find_kaggle_credentials({}, tmp_path, colab_secret=secrets.get, platform="colab")
    assert (found.source, found.token) == ("colab-secrets-token", "KGAT_colab")
    del secrets["KAGGLE_API_TOKEN"]
    found = find_kaggle_credentials({}, tmp_path, colab_secret=secrets.get, platform="colab")
    assert (found.source, found.username, found.key) == ("colab-secrets", "u", "k")


def test_kaggle_notebook_attaches_models_itself(tmp_path):
    token_file = write(tmp_path / "v1token", "KGAT_kernel")
    env = {
        "KAGGLE_KERNEL_RUN_TYPE": "Interactive",
        "KAGGLE_DATA_PROXY_URL": "http://proxy",
        "KAGGLE_API_V1_TOKEN": str(token_file),
    }
    assert find_kaggle_credentials(env, tmp_path).source == "kaggle-notebook"
    env["DISABLE_KAGGLE_CACHE"] = "true"
    found = find_kaggle_credentials(env, tmp_path)
    assert (found.source, found.token) == ("kaggle-notebook-token", "KGAT_kernel")
    # Без прокси данных Kaggle kagglehub не считает это блокнотом Kaggle.
    assert find_kaggle_credentials({"KAGGLE_KERNEL_RUN_TYPE": "Interactive"}, tmp_path) is None


def test_half_filled_sources_are_skipped(tmp_path):
    home = tmp_path / "home"
    write(home / ".kaggle" / "access_token", "   \n")
    write(home / ".kaggle" / "kaggle.json", "{broken")
    env = {"KAGGLE_USERNAME": "only-name"}
    assert find_kaggle_credentials(env, home, colab_secret={"KAGGLE_KEY": "k"}.get) is None


def _all_sources(home: Path, env: dict) -> dict:
    """Каждый вид ключа сразу; возвращает функции, убирающие по одному."""
    env.update(KAGGLE_API_TOKEN="KGAT_env", KAGGLE_USERNAME="env-user", KAGGLE_KEY="env-key")
    write(home / ".kaggle" / "access_token", "KGAT_home")
    kaggle_json(home / ".kaggle")
    return {
        "env-token": lambda: env.pop("KAGGLE_API_TOKEN"),
        "access_token": lambda: (home / ".kaggle" / "access_token").unlink(),
        "env": lambda: env.pop("KAGGLE_KEY"),
        "kaggle.json": lambda: (home / ".kaggle" / "kaggle.json").unlink(),
        "colab-secrets-token": lambda: None,
    }


def test_order_is_that_of_kagglehub(tmp_path):
    """Всё сразу: побеждает источник, стоящий в kagglehub раньше; убираем по одному."""
    home, env = tmp_path / "home", {}
    removers = _all_sources(home, env)
    secrets = {"KAGGLE_API_TOKEN": "KGAT_colab"}
    order = []
    for _ in removers:
        found = find_kaggle_credentials(env, home, colab_secret=secrets.get, platform="colab")
        order.append(found.source)
        removers[found.source]()
    assert order == ["env-token", "access_token", "env", "kaggle.json", "colab-secrets-token"]


def test_same_choice_as_kagglehub_itself(tmp_path, monkeypatch):
    """Наш порядок сверяем с kagglehub.config.get_kaggle_credentials на тех же файлах."""
    config = pytest.importorskip("kagglehub.config")
    home = tmp_path / "home"
    monkeypatch.setattr(config, "DEFAULT_KAGGLE_CREDENTIALS_FOLDER", str(home / ".kaggle"))
    monkeypatch.setattr(config, "is_in_colab_notebook", lambda: True)
    colab = types.ModuleType("google.colab")
    colab.userdata = types.SimpleNamespace(get={"KAGGLE_API_TOKEN": "KGAT_colab"}.get)
    google = types.ModuleType("google")
    google.colab = colab
    monkeypatch.setitem(sys.modules, "google", google)
    monkeypatch.setitem(sys.modules, "google.colab", colab)

    env: dict = {}
    removers = _all_sources(home, env)
    for _ in removers:
        for name in ("KAGGLE_API_TOKEN", "KAGGLE_USERNAME", "KAGGLE_KEY"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        ours = find_kaggle_credentials(env, home, colab_secret=colab.userdata.get, platform="colab")
        theirs = config.get_kaggle_credentials()
        assert (ours.token, ours.username, ours.key) == (
            theirs.api_key,
            theirs.username,
            theirs.key,
        ), ours.source
        removers[ours.source]()


@pytest.mark.parametrize(
    ("platform", "phrases"),
    [
        ("colab", ["Секреты", "KAGGLE_API_TOKEN", "KAGGLE_USERNAME"]),
        ("local", ["~/.kaggle/access_token", "KAGGLE_API_TOKEN", "kaggle.json"]),
        ("kaggle", ["войдите в свой аккаунт Kaggle"]),
    ],
)
def test_missing_credentials_message_names_the_new_token(platform, phrases):
    message = missing_credentials_message(platform)
    assert kaggle_access.KAGGLE_API_SETTINGS_URL in message
    assert kaggle_access.GEMMA_LICENCE_URL in message and "COURSE7_TINY=1" in message
    for phrase in phrases:
        assert phrase in message


def test_no_credentials_raise_russian_instructions(tmp_path):
    with pytest.raises(KaggleCredentialsError) as error:
        ensure_kaggle_access("gemma3_4b_text", {}, "local", check=lambda preset: None)
    lines = error.value._render_traceback_()
    assert lines[0] == "Не найдены ключи Kaggle."
    assert not any("Traceback" in line for line in lines)


# --------------------------------------------------------------------------- локальный Kaggle


class FakeKaggle(http.server.ThreadingHTTPServer):
    """Локальный «Kaggle»: отвечает заданным кодом и запоминает заголовок Authorization."""

    daemon_threads = True

    def __init__(self, status: int = 200, hang: bool = False) -> None:
        self.status, self.hang = status, hang
        self.release = threading.Event()
        self.authorizations: list[str | None] = []
        super().__init__(("127.0.0.1", 0), FakeKaggleHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class FakeKaggleHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args) -> None:  # тише в выводе pytest
        pass

    def _answer(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:
        server: FakeKaggle = self.server  # type: ignore[assignment]
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        server.authorizations.append(self.headers.get("Authorization"))
        if server.hang:
            server.release.wait(5)  # не дольше 5 с: тест сам отпускает раньше
            return
        if server.status == 200:
            self.send_response(302)
            self.send_header("Location", f"{server.url}/files/config.json")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        message = json.dumps({"code": server.status, "message": "nope"}).encode()
        self._answer(server.status, message)

    def do_GET(self) -> None:
        self._answer(200, b'{"module": "keras_hub.src.models.gemma3"}')


@pytest.fixture
def fake_kaggle(monkeypatch):
    """Запускает локальный «Kaggle» и направляет на него kagglesdk; закрывает после теста."""
    kaggle_env = pytest.importorskip("kagglesdk.kaggle_env")
    servers = []

    def start(status: int = 200, hang: bool = False) -> FakeKaggle:
        server = FakeKaggle(status, hang)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        monkeypatch.setenv("KAGGLE_API_ENVIRONMENT", "LOCALHOST")
        monkeypatch.setitem(kaggle_env._env_to_endpoint, kaggle_env.KaggleEnv.LOCAL, server.url)
        return server

    yield start
    for server in servers:
        server.release.set()
        server.shutdown()
        server.server_close()


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("status", "kind"),
    [(401, "unauthorized"), (403, "forbidden"), (404, "not_found"), (500, "server")],
)
def test_http_errors_through_real_kagglehub(fake_kaggle, monkeypatch, status, kind):
    monkeypatch.setenv("KAGGLE_API_TOKEN", "KGAT_fake")
    server = fake_kaggle(status)
    problem = preflight(HANDLE, timeout=10)
    assert problem is not None and (problem.kind, problem.status) == (kind, status)
    assert server.authorizations == ["Bearer KGAT_fake"]  # ключ тот же, что у kagglehub


def test_success_downloads_only_the_config(fake_kaggle, monkeypatch, tmp_path):
    monkeypatch.setenv("KAGGLE_USERNAME", "legacy-user")
    monkeypatch.setenv("KAGGLE_KEY", "legacy-key")
    server = fake_kaggle(200)
    assert preflight(HANDLE, timeout=10) is None
    assert server.authorizations[0].startswith("Basic ")
    cached = list((tmp_path / "kagglehub-cache").rglob("config.json"))
    assert len(cached) == 1 and "gemma3" in cached[0].read_text()


def test_silent_server_is_a_timeout(fake_kaggle, monkeypatch):
    monkeypatch.setenv("KAGGLE_API_TOKEN", "KGAT_fake")
    fake_kaggle(hang=True)
    problem = preflight(HANDLE, timeout=0.5)
    assert problem.kind == "timeout"


def test_refused_connection_is_offline(fake_kaggle, monkeypatch):
    monkeypatch.setenv("KAGGLE_API_TOKEN", "KGAT_fake")
    server = fake_kaggle()
    port = closed_port()
    monkeypatch.setitem(
        sys.modules["kagglesdk.kaggle_env"]._env_to_endpoint,
        sys.modules["kagglesdk.kaggle_env"].KaggleEnv.LOCAL,
        f"http://127.0.0.1:{port}",
    )
    assert preflight(HANDLE, timeout=10).kind == "offline"
    assert server.authorizations == []


def test_dead_proxy_is_offline(monkeypatch):
    """Настоящий адрес api.kaggle.com, но прокси не отвечает: в интернет не выходим."""
    pytest.importorskip("kagglehub")
    monkeypatch.setenv("KAGGLE_API_TOKEN", "KGAT_fake")
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{closed_port()}")
    assert preflight(HANDLE, timeout=10).kind == "offline"


# --------------------------------------------------------------------------- сообщения


@pytest.mark.parametrize(
    ("kind", "platform", "phrases"),
    [
        ("unauthorized", "colab", ["401", "секрет Colab KAGGLE_API_TOKEN", "новый API-токен"]),
        ("forbidden", "local", ["403", kaggle_access.GEMMA_LICENCE_URL, "лицензией"]),
        ("offline", "kaggle", ["Нет связи", "Internet", "Phone verification"]),
        ("offline", "local", ["Нет связи", "HTTPS_PROXY"]),
        ("timeout", "kaggle", ["не ответил", "20 с", "Internet"]),
        ("not_found", "local", ["404", "keras-hub"]),
        ("server", "local", ["сбой", "подождите"]),
    ],
)
def test_each_problem_has_its_own_guidance(kind, platform, phrases):
    credentials = kaggle_access.KaggleCredentials("colab-secrets-token", token="KGAT_x")
    error = KaggleAccessError(
        AccessProblem(kind), access_message(AccessProblem(kind), platform, credentials)
    )
    text = "\n".join(error._render_traceback_())
    for phrase in phrases:
        assert phrase in text, phrase
    assert "COURSE7_TINY=1" in text and "Traceback" not in text and "KGAT_x" not in text


def test_guidance_differs_for_401_403_and_timeout():
    texts = {
        kind: access_message(AccessProblem(kind), "colab")
        for kind in ("unauthorized", "forbidden", "timeout", "offline")
    }
    assert len(set(texts.values())) == len(texts)


# --------------------------------------------------------------------------- choose_preset


@pytest.mark.slow  # импорт keras_hub в процессе тестов
def test_only_new_token_and_no_network_talks_about_the_network(monkeypatch):
    """Критерий задачи: только KAGGLE_API_TOKEN и нет сети — речь о сети, не о ключах."""
    pytest.importorskip("keras_hub")
    monkeypatch.setenv("KAGGLE_API_TOKEN", "KGAT_fake")
    monkeypatch.setenv("HTTPS_PROXY", f"http://127.0.0.1:{closed_port()}")
    with pytest.raises(KaggleAccessError) as error:
        runtime.choose_preset("gemma3_4b_text", accelerator=T4)
    text = "\n".join(error.value._render_traceback_())
    assert error.value.problem.kind == "offline"
    assert text.startswith("Нет связи с Kaggle.")
    assert "переменная окружения KAGGLE_API_TOKEN" not in text  # источник назван только в 401
    assert "не найден" not in text and "Traceback" not in text


def test_choose_preset_uses_the_check_and_names_the_source(monkeypatch):
    monkeypatch.setenv("KAGGLE_API_TOKEN", "KGAT_fake")
    asked = []

    def refuse(preset):
        asked.append(preset)
        return AccessProblem("unauthorized", 401)

    with pytest.raises(KaggleAccessError) as error:
        runtime.choose_preset("gemma3_1b", accelerator=T4, check_access=refuse)
    assert asked == ["gemma3_1b"]
    assert "переменная окружения KAGGLE_API_TOKEN" in str(error.value)
    assert runtime.choose_preset("gemma3_1b", accelerator=T4, check_access=lambda p: None) == (
        "gemma3_1b"
    )


@pytest.mark.parametrize("variable", ["COURSE7_OFFLINE=1", "COURSE7_PREFLIGHT=0"])
def test_preflight_can_be_switched_off(monkeypatch, variable):
    name, value = variable.split("=")
    monkeypatch.setenv(name, value)
    monkeypatch.setenv("KAGGLE_API_TOKEN", "KGAT_fake")

    def no_network(*args, **kwargs):
        raise AssertionError("проверка не должна была ходить в сеть")

    monkeypatch.setattr(kaggle_access, "preflight", no_network)
    assert runtime.choose_preset("gemma3_1b", accelerator=T4) == "gemma3_1b"


def test_tiny_mode_never_checks_kaggle(monkeypatch):
    import feedback.gpu.tiny_gemma

    monkeypatch.setattr(feedback.gpu.tiny_gemma, "tiny_preset_path", lambda **kw: "/tiny")
    monkeypatch.setenv("COURSE7_TINY", "1")

    def no_network(preset):
        raise AssertionError("в учебном режиме в Kaggle не ходим")

    preset = runtime.choose_preset("gemma3_1b", notify=lambda *a: None, check_access=no_network)
    assert preset == "/tiny"


def test_empty_token_file_skips_to_legacy_keys_like_kagglehub(tmp_path, monkeypatch):
    """KAGGLE_API_TOKEN указывает на пустой файл: kagglesdk сразу идёт к старым ключам."""
    config = pytest.importorskip("kagglehub.config")
    home = tmp_path / "home"
    empty = write(tmp_path / "empty-token", "")
    write(home / ".kaggle" / "access_token", "KGAT_home")
    env = {"KAGGLE_API_TOKEN": str(empty), "KAGGLE_USERNAME": "u", "KAGGLE_KEY": "k"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    ours = find_kaggle_credentials(env, home, platform="local")
    theirs = config.get_kaggle_credentials()
    assert (ours.source, ours.username, ours.key) == ("env", theirs.username, theirs.key)

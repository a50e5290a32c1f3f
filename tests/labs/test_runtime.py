"""Тесты среды выполнения: платформа, ускоритель, ключи Kaggle, выбор пресета."""

import subprocess

import pytest

from feedback.gpu import notice, tiny_mode
from feedback.gpu.kaggle_access import KaggleCredentialsError
from feedback.runtime import (
    CPU_ONLY,
    Accelerator,
    choose_preset,
    detect_accelerator,
    is_tiny_mode,
    parse_nvidia_smi,
)

T4 = Accelerator("gpu", "Tesla T4", 1, 15 * 1024**3, "nvidia-smi")


@pytest.fixture(autouse=True)
def _reset_choice(monkeypatch):
    for name in ("KAGGLE_API_TOKEN", "KAGGLE_USERNAME", "KAGGLE_KEY", "KAGGLE_CONFIG_DIR"):
        monkeypatch.delenv(name, raising=False)
    tiny_mode.forget_choice()
    yield
    tiny_mode.forget_choice()


@pytest.fixture
def fake_tiny(monkeypatch):
    """Не собираем настоящую крошечную модель: здесь проверяется только выбор."""
    import feedback.gpu.tiny_gemma

    calls = []

    def fake_path(cache_dir=None, env=None, isolated=True):
        calls.append(env)
        return "/cache/tiny_gemma3/abc"

    monkeypatch.setattr(feedback.gpu.tiny_gemma, "tiny_preset_path", fake_path)
    return calls


class Notices(list):
    def __call__(self, title, body):
        self.append((title, body))


# --------------------------------------------------------------------------- ускоритель


def test_parse_nvidia_smi():
    t4 = parse_nvidia_smi("Tesla T4, 15360\n")
    assert (t4.kind, t4.name, t4.count, t4.source) == ("gpu", "Tesla T4", 1, "nvidia-smi")
    assert t4.memory_gib == pytest.approx(15.0)
    assert t4.describe() == "1 × Tesla T4, 15,0 ГиБ"
    four = parse_nvidia_smi("NVIDIA GeForce RTX 4080, 16376\n" * 4)
    assert four.count == 4 and four.is_accelerated
    assert parse_nvidia_smi("") == CPU_ONLY


def test_cpu_only_description():
    assert not CPU_ONLY.is_accelerated
    assert CPU_ONLY.memory_gib is None
    assert "процессор" in CPU_ONLY.describe()


def _fake_run(stdout, returncode=0):
    calls = []

    def run(args, **kwargs):
        calls.append(args)
        return subprocess.CompletedProcess(args, returncode, stdout=stdout, stderr="")

    return run, calls


def test_detect_accelerator_via_nvidia_smi():
    run, calls = _fake_run("Tesla T4, 15360\n")
    found = detect_accelerator(use_jax=False, run=run, which=lambda name: "/usr/bin/" + name)
    assert found.name == "Tesla T4" and found.source == "nvidia-smi"
    assert calls and calls[0][0] == "/usr/bin/nvidia-smi"


def test_jax_limit_and_nvidia_smi_total_are_kept_apart():
    """Предел из JAX (с долей) и вся память из nvidia-smi — разные поля, а не одно."""
    run, _ = _fake_run("Tesla T4, 15360\n")
    limit = 13_824 * 1024**2

    def from_jax():
        return Accelerator("gpu", "Tesla T4", 1, None, "jax", limit)

    found = detect_accelerator(
        use_jax=True, run=run, which=lambda name: "/usr/bin/" + name, from_jax=from_jax
    )
    assert found.limit_bytes == limit and found.memory_bytes == 15_360 * 1024**2
    assert found.describe() == "1 × Tesla T4, 15,0 ГиБ"
    env = {"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.9"}
    assert found.usable(env).bytes == limit  # без второго умножения на 0,9
    assert CPU_ONLY.usable(env) is None


def test_detect_accelerator_without_gpu():
    run, calls = _fake_run("", returncode=9)
    assert detect_accelerator(use_jax=False, run=run, which=lambda name: None) == CPU_ONLY
    assert calls == []
    failing = detect_accelerator(use_jax=False, run=run, which=lambda name: "/bin/nvidia-smi")
    assert failing == CPU_ONLY


# --------------------------------------------------------------------------- выбор пресета


def test_real_preset_on_gpu(fake_tiny, tmp_path):
    env = {"KAGGLE_USERNAME": "u", "KAGGLE_KEY": "k"}
    notices, checked = Notices(), []
    preset = choose_preset(
        "gemma3_4b_text", env, T4, notify=notices, home=tmp_path, check_access=checked.append
    )
    assert preset == "gemma3_4b_text" and checked == ["gemma3_4b_text"]
    assert notices == [] and fake_tiny == []
    assert not is_tiny_mode({})


def test_real_preset_needs_credentials(fake_tiny, tmp_path):
    with pytest.raises(KaggleCredentialsError):
        choose_preset("gemma3_4b_text", {}, T4, home=tmp_path, colab_secret=lambda n: None)
    assert choose_preset("gemma3_1b", {}, T4, check_credentials=False) == "gemma3_1b"


@pytest.mark.parametrize(
    ("env", "accelerator", "reason"),
    [
        ({"COURSE7_TINY": "1"}, T4, "COURSE7_TINY=1"),
        ({}, CPU_ONLY, "видеокарта не найдена"),
    ],
)
def test_tiny_preset(fake_tiny, env, accelerator, reason):
    notices = Notices()
    preset = choose_preset("gemma3_4b_text", env, accelerator, notify=notices)
    assert preset == "/cache/tiny_gemma3/abc"
    assert fake_tiny == [env]
    ((title, body),) = notices
    assert "Учебный режим" in title and "gemma3_4b_text" in title
    assert reason in body and "бессмысленн" in body
    assert is_tiny_mode({})


def test_tiny_zero_forces_real_preset(fake_tiny):
    env = {"COURSE7_TINY": "0"}
    assert choose_preset("gemma3_1b", env, CPU_ONLY, check_credentials=False) == "gemma3_1b"
    assert not is_tiny_mode(env)


# --------------------------------------------------------------------------- предупреждения


def test_show_notice_prints_plain_text_outside_notebook(capsys):
    notice.show_notice("Заголовок", "Первый абзац.\n\nВторой.")
    out = capsys.readouterr().out
    assert "Заголовок" in out and "Второй." in out and "=" * 20 in out


def test_notice_html_escapes():
    html = notice.notice_html("<b>", "a & b\n\nc")
    assert "&lt;b&gt;" in html and "a &amp; b" in html and html.count("<p") == 3


def test_credentials_error_renders_only_the_russian_instructions():
    from feedback.gpu.kaggle_access import missing_credentials_message

    error = KaggleCredentialsError(missing_credentials_message("colab"))
    lines = error._render_traceback_()
    assert lines[0] == "Не найдены ключи Kaggle."
    assert any("KAGGLE_USERNAME" in line for line in lines)
    assert not any("Traceback" in line for line in lines)


@pytest.mark.parametrize(
    ("platform", "phrase"),
    [("colab", "Сменить среду выполнения"), ("kaggle", "Accelerator"), ("local", "CUDA")],
)
def test_cpu_runtime_guidance_says_how_to_switch(platform, phrase):
    from feedback.runtime import CPU_ONLY, runtime_guidance, show_runtime_status

    title, body, level = runtime_guidance(platform, CPU_ONLY)
    assert "Видеокарты нет" in title and phrase in body and level == "warning"
    shown = []
    assert show_runtime_status(platform, CPU_ONLY, lambda *a: shown.append(a)) is CPU_ONLY
    assert shown[0][0] == title


def test_gpu_runtime_guidance_names_the_card():
    from feedback.runtime import Accelerator, runtime_guidance

    t4 = Accelerator("gpu", "Tesla T4", 1, 15 * 1024**3, "nvidia-smi")
    title, _, level = runtime_guidance("colab", t4)
    assert "Tesla T4" in title and level == "info"

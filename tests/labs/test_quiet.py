"""Служебные сообщения библиотек не доходят до учащегося, а настоящие ошибки доходят."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from feedback import quiet

from notebook_runner import ROOT

#: Строки, которые печатали TensorFlow 2.21, tensorflow-text и CUDA при загрузке
#: крошечной модели на этой машине, и строки, которые TensorFlow печатает в Colab на T4.
CHATTER_LINES = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795967857.755552    4919 port.cc:153] oneDNN custom operations are on.",
    "I0000 00:00:1795967857.756863    4919 cudart_stub.cc:31] Could not find cuda drivers on "
    "your machine, GPU will not be used.",
    "E0000 00:00:1795967876.058514    4919 cuda_platform.cc:52] failed call to cuInit: "
    "INTERNAL: CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
    "I0000 00:00:1795967939.471270    5459 cpu_feature_guard.cc:227] This TensorFlow binary "
    "is optimized to use available CPU instructions in performance-critical operations.",
    "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow "
    "with the appropriate compiler flags.",
    "normalizer.cc(51) LOG(INFO) precompiled_charsmap is empty. use identity normalization.",
    "E0000 00:00:1735000000.000000    1234 cuda_fft.cc:485] Unable to register cuFFT factory: "
    "Attempting to register factory for plugin cuFFT when one has already been registered",
    "W0000 00:00:1735000000.000000    1234 computation_placer.cc:177] computation placer "
    "already registered. Please check linkage and avoid linking the same target more than once.",
]

REAL_LINES = [
    "E0000 00:00:1.0  1 bfc_allocator.cc:485] Out of memory while trying to allocate 52428800",
    "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory",
    "Traceback (most recent call last):",
    "W0000 00:00:1.0  1 cuda_dnn.cc:8310] Could not load cuDNN: version mismatch",
    "100%|██████████| 1.2k/1.2k [00:00<00:00, 3.1MB/s]",
]


@pytest.mark.parametrize("line", CHATTER_LINES)
def test_known_chatter_is_recognised(line):
    assert quiet.is_chatter(line) and quiet.is_chatter(line.encode() + b"\n")


@pytest.mark.parametrize("line", REAL_LINES)
def test_real_messages_are_not_chatter(line):
    assert not quiet.is_chatter(line)


def _read_all(fd: int, deadline_s: float = 5.0) -> bytes:
    os.set_blocking(fd, False)
    data, end = b"", time.monotonic() + deadline_s
    while time.monotonic() < end:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            time.sleep(0.05)
            continue
        if not chunk:
            break
        data += chunk
    return data


def test_filter_drops_chatter_and_passes_everything_else():
    read, write = os.pipe()  # «поток ошибок» — конец write, читаем из read
    stream = quiet.StderrFilter(write)
    stream.start()
    try:
        os.write(write, ("\n".join(CHATTER_LINES[:3] + REAL_LINES[:2]) + "\n").encode())
        os.write(write, b"\rDownloading 42%")  # полоса загрузки без перевода строки
        time.sleep(0.6)  # дольше срока ожидания неполной строки
        os.write(write, ("\n".join(CHATTER_LINES[3:]) + "\nlast line").encode())
    finally:
        stream.stop()
    os.close(write)
    shown = _read_all(read).decode()
    os.close(read)
    assert all(line in shown for line in REAL_LINES[:2])
    assert "Downloading 42%" in shown and shown.endswith("last line")
    assert not any(line in shown for line in CHATTER_LINES)
    assert stream.dropped == len(CHATTER_LINES)


def test_chatter_written_in_slow_pieces_is_still_dropped():
    """SentencePiece пишет строку по кускам; на занятой машине между ними бывает пауза."""
    read, write = os.pipe()
    stream = quiet.StderrFilter(write)
    stream.start()
    try:
        for piece in (b"normalizer.cc(51) ", b"LOG(INFO) ", b"precompiled_charsmap is empty.\n"):
            os.write(write, piece)
            time.sleep(0.5)  # дольше, чем ждёт неполная строка без признаков болтовни
        os.write(write, b"\rDownloading 42%")
        time.sleep(0.8)
        shown_before_the_line_ends = _read_all(read, deadline_s=0.3)
    finally:
        stream.stop()
    os.close(write)
    os.close(read)
    assert shown_before_the_line_ends == b"\rDownloading 42%"  # полоса загрузки видна сразу
    assert stream.dropped == 1


def test_a_broken_filter_gives_the_stream_back_instead_of_blocking_writers(monkeypatch):
    read, write = os.pipe()
    stream = quiet.StderrFilter(write)
    monkeypatch.setattr(quiet, "is_chatter", lambda line: 1 / 0)
    stream.start()
    try:
        os.write(write, b"first\n")  # насос падает на этой строке
        time.sleep(0.3)
        os.set_blocking(write, False)
        os.write(write, b"x" * 200_000)  # больше буфера канала: без возврата запись бы встала
    finally:
        stream.stop()
    os.close(write)
    assert b"x" * 1000 in _read_all(read)
    os.close(read)


LOAD = """
import os, sys
from feedback import quiet, runtime
quiet.hide_library_chatter()
import keras_hub
preset = runtime.choose_preset("gemma3_4b_text", notify=lambda *a: None)
keras_hub.models.Gemma3CausalLM.from_preset(preset, dtype="bfloat16")
os.write(2, b"real error stays visible\\n")
quiet.show_library_chatter()  # дописывает, что ещё в канале, и снимает фильтр
print("hidden:", quiet.hidden_lines())
"""


@pytest.mark.slow
def test_tiny_model_load_prints_no_library_chatter():
    pytest.importorskip("keras_hub")
    env = dict(os.environ)
    env.update(
        KERAS_BACKEND="jax",
        COURSE7_TINY="1",
        COURSE7_CACHE_DIR=str(ROOT / ".course-work" / "cache"),
        PYTHONPATH=str(ROOT),
    )
    env.pop("TF_CPP_MIN_LOG_LEVEL", None)

    done = subprocess.run(
        [sys.executable, "-c", LOAD], env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    shown = done.stderr
    assert "real error stays visible" in shown
    assert not any(quiet.is_chatter(line) for line in shown.splitlines()), shown
    # Контроль: библиотеки здесь действительно печатали служебные строки, и фильтр их убрал.
    assert int(done.stdout.split("hidden:")[-1]) > 0, done.stdout


def test_library_logs_switch_leaves_the_stream_unfiltered():
    env = {quiet.SHOW_ENV_VAR: "1"}
    assert quiet.hide_library_chatter(env) is False
    assert env["TF_CPP_MIN_LOG_LEVEL"] == "3"

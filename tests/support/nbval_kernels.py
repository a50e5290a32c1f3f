"""Плагин pytest для ``make nbval``: ядро, которое не поднялось из-за занятого порта, — ещё раз.

jupyter_client выбирает порты ядра в процессе pytest (занимает свободный порт и тут же
отпускает), а ядро занимает их позже. Когда четыре процесса nbval запускают ядра в одну и ту
же секунду, порт, отпущенный одним, успевает взять другой, и ядро падает с «Address already
in use» — nbval видит только «Kernel died before replying to kernel_info» и роняет все ячейки
тетрадки. Здесь вывод ядра в stderr не выбрасывается, как у nbval, а читается: при занятом
порте ядро запускается заново (с новыми портами), при любой другой причине она попадает
в текст ошибки.

Папка ``tests/support`` нужна в ``PYTHONPATH`` только самому pytest (чтобы найти плагин): ядру она
не передаётся — у него то же окружение, что было бы без плагина.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import nbval.kernel

#: Сколько раз запускать ядро, если порт оказался занят.
ATTEMPTS = 3
PORT_TAKEN = "Address already in use"
TESTS = str(Path(__file__).resolve().parent)

_start_new_kernel = nbval.kernel.start_new_kernel


def kernel_env(environ: dict[str, str]) -> dict[str, str]:
    """Окружение ядра: как у pytest, но без папки тестов в ``PYTHONPATH``."""
    env = dict(environ)
    kept = [
        part
        for part in env.get("PYTHONPATH", "").split(os.pathsep)
        if part and os.path.abspath(part) != TESTS
    ]
    if kept:
        env["PYTHONPATH"] = os.pathsep.join(kept)
    else:
        env.pop("PYTHONPATH", None)
    return env


def start_new_kernel(startup_timeout=60, kernel_name="python", **kwargs):
    """``nbval.kernel.start_new_kernel``, который видит stderr ядра и переживает занятый порт."""
    kwargs.setdefault("env", kernel_env(dict(os.environ)))
    for attempt in range(1, ATTEMPTS + 1):
        log = tempfile.TemporaryFile()
        kwargs["stderr"] = log
        try:
            return _start_new_kernel(startup_timeout, kernel_name, **kwargs)
        except RuntimeError as error:
            log.seek(0)
            said = log.read().decode("utf-8", "replace")
            log.close()
            if PORT_TAKEN in said and attempt < ATTEMPTS:
                continue
            raise RuntimeError(f"{error}; stderr ядра:\n{said[-3000:]}") from error


def pytest_configure(config):
    nbval.kernel.start_new_kernel = start_new_kernel

"""Плагин make nbval: ядро с занятым портом запускается заново, иная причина видна в ошибке."""

from __future__ import annotations

import os

import nbval_kernels
import pytest


@pytest.fixture
def fake_start(monkeypatch):
    """Подменный запуск ядра: пишет в stderr ядра заданные строки и падает, как nbval."""
    calls = []

    def start(startup_timeout, kernel_name, **kwargs):
        said = script[len(calls)]
        calls.append(kwargs)
        if said is None:
            return "km", "kc"
        kwargs["stderr"].write(said.encode())
        raise RuntimeError("Kernel died before replying to kernel_info")

    script: list[str | None] = []
    monkeypatch.setattr(nbval_kernels, "_start_new_kernel", start)
    return script, calls


def test_a_taken_port_means_another_start(fake_start):
    script, calls = fake_start
    script += ["zmq.error.ZMQError: Address already in use (addr='tcp://127.0.0.1:39979')", None]
    assert nbval_kernels.start_new_kernel(60, "python3") == ("km", "kc")
    assert len(calls) == 2


def test_other_deaths_are_not_retried_and_say_why(fake_start):
    script, calls = fake_start
    script += ["ModuleNotFoundError: No module named 'ipykernel'", None]
    with pytest.raises(RuntimeError, match="No module named 'ipykernel'"):
        nbval_kernels.start_new_kernel(60, "python3")
    assert len(calls) == 1


def test_a_port_taken_every_time_gives_up(fake_start):
    script, calls = fake_start
    script += ["Address already in use"] * nbval_kernels.ATTEMPTS
    with pytest.raises(RuntimeError, match="Address already in use"):
        nbval_kernels.start_new_kernel(60, "python3")
    assert len(calls) == nbval_kernels.ATTEMPTS


def test_the_kernel_does_not_get_the_tests_folder_on_its_path():
    here = os.path.dirname(os.path.abspath(nbval_kernels.__file__))
    env = nbval_kernels.kernel_env({"PYTHONPATH": os.pathsep.join([here, "/opt/x"]), "A": "1"})
    assert env == {"PYTHONPATH": "/opt/x", "A": "1"}
    assert "PYTHONPATH" not in nbval_kernels.kernel_env({"PYTHONPATH": here})

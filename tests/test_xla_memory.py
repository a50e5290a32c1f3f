"""Какую память видеокарты получит JAX: предел XLA, доля памяти и распределитель platform."""

import pytest

from feedback.gpu.xla_memory import (
    CUDA_CONTEXT_BYTES,
    DEFAULT_MEM_FRACTION,
    T4_TOTAL_BYTES,
    XlaMemorySettings,
    usable_memory,
    xla_memory_settings,
)


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, XlaMemorySettings("bfc", DEFAULT_MEM_FRACTION, True)),
        ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.9"}, XlaMemorySettings("bfc", 0.9, True)),
        ({"XLA_CLIENT_MEM_FRACTION": ".5"}, XlaMemorySettings("bfc", 0.5, True)),
        ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "lots"}, XlaMemorySettings("bfc", 0.75, True)),
        (
            {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform", "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.9"},
            XlaMemorySettings("platform", 0.9, False),
        ),
        ({"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, XlaMemorySettings("bfc", 0.75, False)),
    ],
)
def test_settings_from_environment(env, expected):
    assert xla_memory_settings(env) == expected


def test_limit_from_jax_is_taken_as_is():
    limit = 13_824 * 1024**2  # 0,9 × 15 360 МиБ — так JAX сообщает на T4 при доле 0,9
    found = usable_memory(T4_TOTAL_BYTES, limit, XlaMemorySettings("bfc", 0.9))
    assert found.bytes == limit and "уже учтена" in found.how


def test_fraction_of_the_total_when_jax_did_not_say():
    found = usable_memory(T4_TOTAL_BYTES, None, XlaMemorySettings("bfc", 0.9))
    assert found.gib == pytest.approx(13.5)
    assert "90\u00a0%" in found.how


def test_fraction_never_eats_the_cuda_context():
    found = usable_memory(T4_TOTAL_BYTES, None, XlaMemorySettings("bfc", 1.0))
    assert found.bytes == T4_TOTAL_BYTES - CUDA_CONTEXT_BYTES


def test_platform_allocator_gets_the_whole_card_minus_context():
    found = usable_memory(T4_TOTAL_BYTES, None, XlaMemorySettings("platform", 0.9, False))
    assert found.bytes == T4_TOTAL_BYTES - CUDA_CONTEXT_BYTES
    assert "доля не действует" in found.how


def test_unknown_memory_stays_unknown():
    assert usable_memory(None, None) is None

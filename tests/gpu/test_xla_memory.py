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
        ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "0.9"}, XlaMemorySettings("bfc", 0.9, True, True)),
        ({"XLA_CLIENT_MEM_FRACTION": ".5"}, XlaMemorySettings("bfc", 0.5, True, True)),
        ({"XLA_PYTHON_CLIENT_MEM_FRACTION": "lots"}, XlaMemorySettings("bfc", 0.75, True)),
        (
            {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform", "XLA_PYTHON_CLIENT_MEM_FRACTION": "0.9"},
            XlaMemorySettings("platform", 0.9, True, True, False),
        ),
        ({"XLA_PYTHON_CLIENT_PREALLOCATE": "false"}, XlaMemorySettings("bfc", 0.75, False)),
    ],
)
def test_settings_from_environment(env, expected):
    assert xla_memory_settings(env, jax_version="0.11.2") == expected


def test_platform_is_on_demand_only_before_jax_0_10():
    """jax-ml/jax#39145: с openxla/xla#41761 platform идёт через BFC с долей."""
    env = {"XLA_PYTHON_CLIENT_ALLOCATOR": "platform", "XLA_CLIENT_MEM_FRACTION": "0.9"}
    old = xla_memory_settings(env, jax_version="0.4.30")
    new = xla_memory_settings(env, jax_version="0.10.2")
    assert old.on_demand and not new.on_demand
    assert usable_memory(T4_TOTAL_BYTES, None, new).gib == pytest.approx(13.5)


def test_no_fraction_means_a_lower_bound_on_new_jax():
    found = usable_memory(T4_TOTAL_BYTES, None, xla_memory_settings({}, jax_version="0.11.2"))
    assert found.gib == pytest.approx(11.25) and "нижняя граница" in found.how


@pytest.mark.parametrize("name", ["LAB_WALL_XLA", "LAB_TRAINING_XLA"])
def test_lab_settings_set_both_fraction_names_and_no_platform(name):
    from feedback import settings

    env = getattr(settings, name)
    assert env["XLA_CLIENT_MEM_FRACTION"] == env["XLA_PYTHON_CLIENT_MEM_FRACTION"]
    assert "XLA_PYTHON_CLIENT_ALLOCATOR" not in env
    found = xla_memory_settings(env, jax_version="0.11.2")
    assert found.fraction_set and not found.preallocate


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
    found = usable_memory(
        T4_TOTAL_BYTES, None, XlaMemorySettings("platform", 0.9, False, True, True)
    )
    assert found.bytes == T4_TOTAL_BYTES - CUDA_CONTEXT_BYTES
    assert "доля не действует" in found.how


def test_unknown_memory_stays_unknown():
    assert usable_memory(None, None) is None

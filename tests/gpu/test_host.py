"""Где выполняется блокнот: Colab, Kaggle или свой компьютер."""

import pytest

from feedback.gpu.host import detect_platform


@pytest.mark.parametrize(
    ("env", "modules", "expected"),
    [
        ({"COLAB_RELEASE_TAG": "release-colab_20250101"}, {}, "colab"),
        ({}, {"google.colab": object()}, "colab"),
        ({"KAGGLE_KERNEL_RUN_TYPE": "Interactive"}, {}, "kaggle"),
        ({"KAGGLE_URL_BASE": "https://www.kaggle.com"}, {}, "kaggle"),
        ({"HOME": "/home/me"}, {}, "local"),
    ],
)
def test_detect_platform(env, modules, expected):
    assert detect_platform(env, modules) == expected

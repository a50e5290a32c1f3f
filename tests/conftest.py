"""Общие настройки тестов: по умолчанию проверки работают в мягком режиме."""

import pytest


@pytest.fixture(autouse=True)
def lenient_checks(monkeypatch):
    """Тесты сами решают, включать ли строгий режим."""
    monkeypatch.delenv("FEEDBACK_STRICT", raising=False)

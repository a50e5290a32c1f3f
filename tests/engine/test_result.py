"""Вердикт: истинность, текст, HTML и строгий режим."""

import pytest

from feedback import CheckFailed, CheckResult, strict_mode
from feedback.engine.result import failed, passed, settle


def test_result_is_truthy_exactly_when_passed():
    assert passed("f", "верно.")
    assert not failed("f", "неверно.")
    assert passed("f", "верно.").passed is True


def test_message_joins_headline_and_details():
    result = failed("f", "ответ неверный.", "Случай: a = 1", "Ожидалось: 2")
    assert result.message == "ответ неверный.\nСлучай: a = 1\nОжидалось: 2"
    assert "❌ f: ответ неверный." in str(result)


def test_html_escapes_and_marks_status():
    html = failed("f", "<b>", "x < y").__repr__(), failed("f", "<b>", "x < y")._repr_html_()
    assert "&lt;b&gt;" in html[1] and "x &lt; y" in html[1]
    assert "data-passed='false'" in html[1]
    assert "data-passed='true'" in passed("f", "ok")._repr_html_()


@pytest.mark.parametrize("value", ["1", "true", "YES"])
def test_strict_mode_raises_check_failed_with_same_message(monkeypatch, value):
    monkeypatch.setenv("FEEDBACK_STRICT", value)
    assert strict_mode()
    with pytest.raises(CheckFailed, match="ответ неверный") as error:
        settle(failed("f", "ответ неверный.", "подробность"))
    assert isinstance(error.value, AssertionError)
    assert "подробность" in str(error.value)


def test_strict_mode_lets_passing_checks_through(monkeypatch):
    monkeypatch.setenv("FEEDBACK_STRICT", "1")
    assert isinstance(settle(passed("f", "верно.")), CheckResult)


def test_lenient_mode_only_reports(monkeypatch):
    monkeypatch.setenv("FEEDBACK_STRICT", "0")
    assert not strict_mode()
    assert not settle(failed("f", "неверно."))


def test_mistake_code_unknown_on_failure_none_on_pass_and_never_shown():
    assert failed("f", "неверно.").mistake == "unknown"
    assert failed("f", "неверно.", mistake="flops.forward_only").mistake == "flops.forward_only"
    assert passed("f", "верно.").mistake is None
    assert CheckResult("f", True, "верно.", (), "flops.forward_only").mistake is None
    result = failed("f", "неверно.", "Подсказка: x", mistake="flops.forward_only")
    assert "flops.forward_only" not in str(result) + result._repr_html_() + result.message

"""Сданный вывод учащегося: только безопасное, не больше предела и с пометкой."""

from feedback.teacher.core.settings import CPU_LIMITS
from feedback.teacher.unit.learner_outputs import submitted


def test_submitted_outputs_are_marked_filtered_and_cleaned():
    raw = [
        {"output_type": "stream", "name": "stdout", "text": ["Generations after epoch 1\n"]},
        {"output_type": "display_data", "data": {"image/png": "AAAA", "text/plain": "<Figure>"}},
        {"output_type": "display_data", "data": {"application/javascript": "steal()"}},
        {"output_type": "execute_result", "data": {"text/html": "<b onclick=x>ok</b>"}},
        {"output_type": "error", "ename": "X", "evalue": "y", "traceback": ["a", 5]},
        "не вывод",
        {"output_type": "weird"},
    ]
    shown = submitted(raw, "Так было у учащегося")
    assert shown[0].data["text/plain"] == "Так было у учащегося"
    kinds = [output.output_type for output in shown[1:]]
    assert kinds == ["stream", "display_data", "display_data", "error"]
    assert shown[3].data == {"text/html": "<b>ok</b>"}
    assert shown[4].traceback == ["a"]


def test_nothing_to_show_gives_no_marker_and_huge_output_is_cut():
    assert submitted(None, "x") == [] and submitted([{"output_type": "weird"}], "x") == []
    limit = CPU_LIMITS.submitted_output_chars
    huge = [{"output_type": "stream", "name": "stdout", "text": "я" * (limit + 10)}]
    shown = submitted(huge, "x")
    assert "обрезано" in shown[-1].text and len(shown) == 2
    # Предел — бюджет работы (Limits.submitted_output_chars): с большим вывод целиком.
    assert submitted(huge, "x", limit=2 * limit)[1].text == huge[0]["text"]


def test_a_submitted_image_cannot_break_out_of_its_attribute():
    raw = [{"output_type": "display_data", "data": {"image/png": '"><script>x()</script>'}}]
    assert submitted(raw, "сдано") == []

"""Числа о памяти и времени GPU-лабораторных — из записи замеров (issue 40).

Каждое «N ГиБ», «N МиБ» и время шага «0,0N с» в текстах GPU-лабораторных 7.3, 7.5 и 7.6, в README
и в разделе «Перед занятием» руководства преподавателя должно получаться из записи
:mod:`feedback.measured` (пики, веса, прирост на пример, оценка для батча 8 или 16, время шага)
или быть арифметикой, а не замером, — такие числа перечислены в ``ARITHMETIC`` с объяснением.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from feedback import measured

ROOT = Path(__file__).resolve().parents[2]
LABS = ("lab_7_3_memory_wall", "lab_7_5_bfloat16_lora", "lab_7_6_gradient_accumulation")
GIB = 1024**3

#: Числа, которые не замер, а расчёт: формула P · b, доля памяти, словарь, LoRA.
ARITHMETIC = {
    14.45: "веса Gemma-4B во float32: 3 880 099 328 × 4 Б",
    14.5: "то же, округлённо",
    14.9: "круглые 4 млрд × 4 Б",
    7.23: "веса Gemma-4B в bfloat16 по формуле",
    7.2: "то же, округлённо",
    7.5: "формула 7.4: веса и активации батча 4 — «меньше 7,5 ГиБ»",
    0.065: "активации на пример по формуле 7.4",
    0.39: "логиты: 400 × 262 144 × 4 Б",
    13.5: "0,9 × 15 ГиБ T4",
    14.25: "0,95 × 15 ГиБ T4",
    15: "T4: 15 360 МиБ",
    0.3: "контекст CUDA",
    7: "14,25 − 7,23, округлённо",
    44.7: "12 млрд × 4 Б",
    45: "то же, округлённо",
    22.35: "12 млрд × 2 Б",
    22: "то же, округлённо",
    21.6: "0,9 × 24 ГиБ",
    24: "видеокарта коллеги в вопросе 7.3",
    15060: "пул размером с T4 в замерах (МиБ)",
    15360: "T4 с ECC (МиБ)",
    16: "LoRA во float32: 4 247 552 × 4 Б (МиБ)",
    81: "LoRA с градиентами, моментами Adam и буфером накопления (МиБ)",
}


def install_sizes() -> dict[float, str]:
    """Размер установки на диске (README, «Как начать») — не память GPU: его единственное место —
    строки ``LAB_SIZE_…`` Makefile, где записано, как он измерен."""
    makefile = (ROOT / "Makefile").read_text("utf-8")
    return {
        float(size.replace(",", ".")): f"установка {key} на диске (Makefile)"
        for key, size in re.findall(r"^LAB_SIZE_(\S+) := около (\d+(?:,\d+)?) ГиБ", makefile, re.M)
    }


def measured_values() -> set[float]:
    record = measured.load_record()
    values: set[float] = set()
    for row in record.rows:
        for gib in (row.peak_gib, row.weights_gib):
            if gib is not None:
                values.add(gib)
        for seconds in (row.step_s, row.first_step_s, row.wall_after_s):
            if seconds is not None:
                values.add(seconds)
    values.add(record.row("b1_t4").peak_gib - record.row("w16_t4").peak_gib)
    values.add(record.activation_gib_per_example())
    values.update(record.extrapolated_peak_gib(batch) for batch in (8, 16))
    values.add(8 * record.row("acc8_t4").step_s)  # шаг оптимизатора ×8
    values.add(record.row("b4_free").step_s / 4)  # на пример при батче 4
    return values


def shown_as(value: float, text: str) -> bool:
    """Совпадает ли ``value``, округлённое до знаков ``text``, с самим ``text``."""
    decimals = len(text.split(",")[1]) if "," in text else 0
    return f"{value:.{decimals}f}".replace(".", ",") == text


NUMBER = r"(\d+(?:[\u202f ]\d{3})*(?:,\d+)?)"
PATTERNS = (
    re.compile(rf"{NUMBER}[\u00a0 ](?:ГиБ|МиБ)"),
    re.compile(r"(0,0\d+)[\u00a0 ]с\b"),
)


def texts() -> list[tuple[str, str]]:
    found = []
    for lab in LABS:
        path = ROOT / "solutions" / lab / f"{lab}.ipynb"
        for index, cell in enumerate(json.loads(path.read_text("utf-8"))["cells"]):
            if cell["cell_type"] == "markdown":
                found.append((f"{lab}[{index}]", "".join(cell["source"])))
    found.append(("README.md", (ROOT / "README.md").read_text("utf-8")))
    guide = (ROOT / "docs" / "teaching.md").read_text("utf-8")
    section = guide[guide.index("## Перед занятием") :]
    found.append(("docs/teaching.md", section[: section.index("\n## ", 5)]))
    return found


def unexplained(text: str, values: set[float]) -> list[str]:
    bad = []
    for pattern in PATTERNS:
        for match in pattern.finditer(text):
            shown = re.sub(r"[\u202f ]", "", match[1])
            if any(shown_as(v, shown) for v in values | set(ARITHMETIC) | set(install_sizes())):
                continue
            bad.append(match[0])
    return bad


def test_the_detector_catches_a_stale_estimate():
    assert set(install_sizes()) == {3.3, 0.5}  # размеры установки make lab — из Makefile
    values = measured_values()
    assert unexplained("батч 1 занимает ≈ 11,5\u00a0ГиБ, батч 4 — 26\u00a0ГиБ", values) == [
        "11,5\u00a0ГиБ",
        "26\u00a0ГиБ",
    ]
    assert unexplained("батч 4 — 14,83\u00a0ГиБ, микрошаг 0,046 с", values) == []


@pytest.mark.parametrize(("where", "text"), texts(), ids=[where for where, _ in texts()])
def test_every_gpu_figure_comes_from_the_record_or_arithmetic(where, text):
    assert not unexplained(text, measured_values()), where


def test_the_texts_that_state_measurements_name_the_gpu_and_the_t4_caveat():
    record = measured.load_record()
    for where, text in texts():
        flat = re.sub(r"\s+", " ", text)
        if re.search(r"9,55|14,83|21,8", flat):
            assert record.provenance.gpu.split()[-1] in flat, where  # «H200»
            assert "T4" in flat and "больше" in flat, where

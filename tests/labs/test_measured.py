"""Запись измерений на GPU (feedback/measured.py): читается целиком, с происхождением."""

import json

import pytest

from feedback import measured


def test_course_record_has_provenance_and_the_measured_peaks():
    record = measured.load_record()
    provenance = record.provenance
    assert provenance.gpu and provenance.driver and provenance.jax and provenance.keras_hub
    assert "H200" in provenance.label() and "2026" in provenance.label()
    peaks = {row.name: round(row.peak_gib, 2) for row in record.rows if row.peak_bytes}
    assert peaks["b1_t4"] == 9.55
    assert peaks["acc8_t4"] == 9.57
    assert peaks["b2_t4"] == 11.31
    assert peaks["b4_free"] == 14.83
    assert record.row("w32_lab73").outcome == "stall"


def test_extrapolation_is_a_line_through_batches_1_and_2():
    record = measured.load_record()
    assert round(record.activation_gib_per_example(), 2) == 1.76
    assert round(record.extrapolated_peak_gib(8), 1) == 21.8
    assert record.extrapolated_peak_gib(1) == record.row("b1_t4").peak_gib


def test_record_round_trips_and_rejects_unknown_outcomes(tmp_path):
    record = measured.load_record()
    path = tmp_path / "r.json"
    path.write_text(json.dumps(record.to_json()), encoding="utf-8")
    assert measured.load_record(path) == record
    data = record.to_json()
    data["rows"][0]["outcome"] = "maybe"
    with pytest.raises(ValueError, match="maybe"):
        measured.parse_record(data)
    data = record.to_json()
    del data["rows"][0]["peak_bytes"]
    with pytest.raises(TypeError):
        measured.parse_record(data)

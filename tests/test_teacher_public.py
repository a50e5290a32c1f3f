"""Публичная копия курса: тетрадки и пакет есть, решений и тестов нет."""

import pytest

from feedback.teacher.public import export

from notebook_runner import ROOT


def test_public_copy_has_no_solutions(tmp_path):
    export(tmp_path / "public")
    public = tmp_path / "public"
    assert (public / "feedback" / "flops.py").exists()
    assert (public / "pyproject.toml").exists()
    assert sorted(p.name for p in (public / "notebooks").iterdir()) == sorted(
        p.name for p in (ROOT / "notebooks").iterdir()
    )
    assert not (public / "solutions").exists() and not (public / "tests").exists()
    for path in public.rglob("*"):
        if path.is_file() and path.suffix in (".ipynb", ".md", ".json"):
            text = path.read_text(encoding="utf-8")
            assert "BEGIN SOLUTION" not in text and "Образец ответа" not in text, path


def test_public_copy_refuses_a_non_empty_folder(tmp_path):
    (tmp_path / "x").write_text("моё")
    with pytest.raises(FileExistsError):
        export(tmp_path)

"""Кэш крошечной Gemma для оценивания: готовая сборка с этой машины копируется, а не строится."""

from __future__ import annotations

from pathlib import Path

import pytest

from feedback.gpu import tiny_gemma
from feedback.teacher.unit.caches import tiny_model_cache


@pytest.fixture
def builds(monkeypatch) -> list[Path]:
    """Сборки пресета вместо настоящей (она идёт секунды): пишут config.json и запоминаются."""
    done: list[Path] = []

    def fake_build(preset_dir: Path) -> None:
        preset_dir.mkdir(parents=True)
        (preset_dir / "config.json").write_text('{"built": true}')
        done.append(preset_dir)

    monkeypatch.setattr(tiny_gemma, "_build_in_subprocess", fake_build)
    return done


def preset(root: Path) -> Path:
    return root / tiny_gemma.PRESET_SUBDIR / tiny_gemma.build_fingerprint()


def test_a_build_from_the_course_cache_is_copied(tmp_path, monkeypatch, builds):
    course_cache = tmp_path / "course-cache"
    built = preset(course_cache)
    built.mkdir(parents=True)
    (built / "config.json").write_text('{"copied": true}')
    (built / "assets").mkdir()
    (built / "assets" / "tokenizer.model").write_bytes(b"\x00\x01")
    monkeypatch.setenv(tiny_gemma.CACHE_ENV_VAR, str(course_cache))

    root = tiny_model_cache(tmp_path / "grading")

    assert builds == []
    copied = preset(root)
    assert (copied / "config.json").read_text() == '{"copied": true}'
    assert (copied / "assets" / "tokenizer.model").read_bytes() == b"\x00\x01"
    assert [p.name for p in copied.parent.iterdir()] == [copied.name]  # без временных папок


def test_without_a_finished_build_the_cache_builds_its_own(tmp_path, monkeypatch, builds):
    course_cache = tmp_path / "course-cache"
    unfinished = preset(course_cache)
    unfinished.mkdir(parents=True)  # нет config.json: сборка прервалась
    monkeypatch.setenv(tiny_gemma.CACHE_ENV_VAR, str(course_cache))

    root = tiny_model_cache(tmp_path / "grading")

    assert len(builds) == 1
    assert (preset(root) / "config.json").read_text() == '{"built": true}'


def test_make_reads_the_jax_cache_settings_from_the_package(capsys):
    from feedback.teacher.commands.caches import main
    from feedback.teacher.unit.caches import JAX_COMPILATION_CACHE_ENV

    assert main([]) == 0
    printed = dict(pair.split("=", 1) for pair in capsys.readouterr().out.split())
    assert printed == JAX_COMPILATION_CACHE_ENV
    makefile = (Path(__file__).resolve().parents[3] / "Makefile").read_text(encoding="utf-8")
    assert (
        "-m feedback.teacher.commands.caches" in makefile and "JAX_PERSISTENT_CACHE" not in makefile
    )

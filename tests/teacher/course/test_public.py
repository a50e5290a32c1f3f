"""Публичная копия курса: тетрадки и пакет есть, решений, тестов и docs/ нет."""

import re

import pytest

from feedback.teacher.course.public import export, learners_readme

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


#: Ссылка Markdown и её адрес: ``[текст](адрес)``.
LINK = re.compile(r"\]\(([^)\s]+)\)")
#: Журнал разработки и страницы не для учащихся: этого в README копии быть не должно.
NOT_FOR_LEARNERS = re.compile(
    r"docs/|замер|на \d+[–-]\d+\s*% дольше|make grade|make bench|make test|formgrader|"
    r"\d+ мин \d+ с|teachers"
)


def test_public_readme_is_the_learners_readme(tmp_path):
    public = tmp_path / "public"
    export(public)
    assert not (public / "docs").exists()
    assert (public / "Makefile").exists()  # make lab из README
    readme = (public / "README.md").read_text(encoding="utf-8")
    for section in ("## Лабораторные", "## Как начать", "make lab", "COURSE7_TINY", "Лицензия"):
        assert section in readme, section
    found = sorted(set(NOT_FOR_LEARNERS.findall(readme)))
    assert found == [], found
    for target in LINK.findall(readme):
        if target.startswith(("http://", "https://", "#")):
            continue
        assert (public / target.split("#")[0]).exists(), f"ссылка ведёт в никуда: {target}"


def test_course_readme_keeps_the_teachers_links():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "docs/teaching.md" in readme and "docs/development.md" in readme
    for target in ("docs/teaching.md", "docs/development.md"):
        assert (ROOT / target).exists(), target


def test_marked_sections_are_cut_and_unbalanced_marks_refused():
    text = "А\n<!-- teachers -->\n[x](docs/a.md)\n<!-- /teachers -->\nБ\n\n<!-- teachers -->\nВ\n"
    with pytest.raises(ValueError):
        learners_readme(text)
    assert learners_readme(text + "<!-- /teachers -->\n") == "А\nБ\n\n"

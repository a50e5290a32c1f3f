"""Версия эталонной проверки: после правки пакета эталонные решения проверяются заново."""

from __future__ import annotations

import shutil
import subprocess
import sys

from feedback.teacher.grade import PACKAGE, reference_version
from feedback.teacher.release import lab_sources


def test_reference_version_changes_with_the_package_and_the_source(tmp_path):
    package = tmp_path / "feedback"
    shutil.copytree(PACKAGE, package, ignore=shutil.ignore_patterns("__pycache__"))
    source = tmp_path / "lab.ipynb"
    shutil.copy(lab_sources()[0], source)

    first = reference_version(source, package)
    assert reference_version(source, package) == first  # ничего не менялось
    (package / "__pycache__").mkdir(exist_ok=True)
    (package / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert reference_version(source, package) == first  # байт-код не в счёт

    check = package / "flops.py"
    check.write_text(check.read_text(encoding="utf-8") + "\n# правка\n", encoding="utf-8")
    after_package = reference_version(source, package)
    assert after_package != first

    source.write_bytes(source.read_bytes() + b"\n")
    assert reference_version(source, package) != after_package


def test_the_real_package_is_the_feedback_package():
    assert (PACKAGE / "__init__.py").is_file() and PACKAGE.name == "feedback"


def test_grading_does_not_build_iri_grammars_at_import():
    """rfc3987_syntax строит грамматики Lark 1,5 с и оцениванию не нужен; проверка схемы — да."""
    probe = (
        "import sys, feedback.teacher.grade, nbformat\n"
        "nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell('1')])\n"
        "nbformat.validate(nb)\n"
        "bad = nbformat.from_dict({**nb, 'cells': [{'cell_type': 'code'}]})\n"
        "try:\n    nbformat.validate(bad)\nexcept nbformat.ValidationError:\n    print('invalid')\n"
        "print(sorted(name for name in ('lark', 'rfc3987_syntax') if sys.modules.get(name)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.split() == ["invalid", "[]"]

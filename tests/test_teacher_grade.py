"""Версия эталонной проверки: после правки пакета эталонные решения проверяются заново."""

from __future__ import annotations

import shutil

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

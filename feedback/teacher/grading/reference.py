"""Эталонные решения перед работами: проверка самой настройки оценивания и прогрев кэша JAX.

Эталон каждой лабораторной, чьи работы пришли, проходит через ту же песочницу, что и работы
учащихся, — один раз на версию (:func:`reference_version`: исходник, пакет проверок, настройки
кэша JAX). Не прошёл свои проверки — оценивать нельзя (:class:`~.run.SetupError`); прошёл —
кэш компиляции JAX уже наполнен тем, что нужно верным работам GPU-лабораторных.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import replace
from pathlib import Path

from feedback.teacher.core.results import Job, UnitResult
from feedback.teacher.core.settings import PACKAGE
from feedback.teacher.grading import messages
from feedback.teacher.grading.messages import say
from feedback.teacher.grading.run import Run, SetupError, job_for, with_template
from feedback.teacher.intake.uploads import Submission
from feedback.teacher.unit.caches import JAX_COMPILATION_CACHE_ENV
from feedback.teacher.unit.runner import run_local

#: Эталоны, которые ещё не проверены: лабораторная → задание единицы и отметка о проверке.
References = dict[str, tuple[Job, Path]]


def reference_version(source: Path, package: Path = PACKAGE) -> str:
    """Версия эталонной проверки: исходник лабораторной, пакет проверок и настройки кэша JAX.

    Изменилось что-то одно — эталонное решение проверяется и кэш прогревается заново: новая
    проверка в пакете тоже должна пройти на эталоне, прежде чем оценивать ею работы.
    """
    digest = hashlib.sha256(source.read_bytes())
    digest.update(repr(JAX_COMPILATION_CACHE_ENV).encode())
    digest.update(tree_digest(package))
    return digest.hexdigest()[:16]


def tree_digest(folder: Path) -> bytes:
    """Хэш имён и содержимого всех файлов папки, кроме байт-кода."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(str(path.relative_to(folder)).encode() + b"\0")
            digest.update(path.read_bytes())
    return digest.digest()


def unchecked_references(run: Run, labs: set[str], cache: Path) -> References:
    """Эталонные решения лабораторных ``labs``, которые эта версия ещё не проверяла."""
    jax_dir = cache / "jax"
    jax_dir.mkdir(parents=True, exist_ok=True)
    pending = {}
    for lab in run.settings.labs:
        if lab.id not in labs:
            continue
        stamp = jax_dir / f".checked-{lab.id}-{reference_version(lab.source)}"
        if stamp.exists():
            continue
        notebook = json.loads(lab.source.read_text("utf-8"))
        reference = Submission("эталон", lab.id, str(lab.source), notebook)
        job = job_for(run, reference, cache)
        if job.gpu:
            job = replace(job, jax_cache_write=str(jax_dir))
        pending[lab.id] = (job, stamp)
    return pending


def warm_up(
    run: Run,
    labs: set[str],
    cache: Path,
    templates: dict[str, str] | None = None,
    pending: References | None = None,
) -> None:
    """Эталонные решения лабораторных — через ту же песочницу, что и работы учащихся.

    Так проверяется сама настройка оценивания (решение должно пройти все свои проверки,
    иначе оценивать нельзя — :class:`SetupError`), а кэш компиляции JAX наполняется тем,
    что понадобится верным работам GPU-лабораторных. Делается один раз на каждую версию
    исходника и пакета (:func:`reference_version`); ``pending`` — уже найденные
    :func:`unchecked_references`.
    """
    pending = unchecked_references(run, labs, cache) if pending is None else pending
    failures = []
    started = time.monotonic()
    for lab, (job, _) in sorted(pending.items()):
        say(messages.reference_started(lab, job.gpu))

    def on_result(result: UnitResult) -> None:
        _, stamp = pending[result.lab]
        lost = [gid for gid, test in result.tests.items() if not test.passed]
        seconds = time.monotonic() - started
        if lost or result.problems:
            failures.append(f"{result.lab}: {', '.join(lost)} {' '.join(result.problems)}")
            say(messages.reference_failed(result.lab, seconds))
        else:
            stamp.touch()
            say(messages.reference_passed(result.lab, seconds))

    jobs = [with_template(job, templates or {}) for job, _ in pending.values()]
    run_local(jobs, run.jobs, on_result, run.settings.workspace.units)
    if failures:
        raise SetupError(messages.references_broken(failures))

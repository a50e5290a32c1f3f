"""Вывод, который учащийся сдал вместе с тетрадкой: показать рядом, безопасно и с пометкой.

GPU-лабораторные при оценивании выполняются на крошечной модели: её генерации — шум,
а время и кривые потерь ничего не говорят. Настоящие генерации, замеры и графики с T4
есть только в сданной тетрадке. Их стоит видеть преподавателю (по ним он оценивает
ответы «Что вы заметили?») и самому учащемуся в отчёте — но как то, что учащийся
принёс, а не как результат проверки: баллы по ним не ставятся.

Сданный вывод — данные учащегося, поэтому здесь он разбирается с нуля: остаются
только текст, HTML, картинки и трассировки разумного размера; HTML очищается от
скриптов и обработчиков событий (:mod:`feedback.teacher.notebook.safe_html`), чтобы ничего не
выполнилось в браузере преподавателя.
"""

from __future__ import annotations

import html
from typing import Any

import nbformat

from feedback.teacher.core.settings import CPU_LIMITS
from feedback.teacher.notebook.safe_html import clean_output_data

#: Что показываем из сданного вывода (остальное, в том числе JavaScript и виджеты, — нет).
SHOWN_TYPES = ("text/html", "image/png", "image/jpeg", "text/plain")

LEARNER_MARK = (
    "<div class='course7-learner-output' style='margin:0.4em 0;padding:0.2em 0.6em;"
    "border-left:4px solid #7a5cc2;background:#f3effb;color:#333'>📎 {text}</div>"
)


def marker(text: str) -> nbformat.NotebookNode:
    """Пометка перед выводом учащегося (HTML и текст)."""
    return nbformat.v4.new_output(
        "display_data",
        data={"text/html": LEARNER_MARK.format(text=html.escape(text)), "text/plain": text},
    )


def _text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        return "".join(value)
    return None


def _one(raw: Any) -> nbformat.NotebookNode | None:
    """Один сданный вывод в безопасном виде или ``None``, если показывать нечего."""
    if not isinstance(raw, dict):
        return None
    kind = raw.get("output_type")
    if kind == "stream":
        text = _text(raw.get("text"))
        name = raw.get("name") if raw.get("name") in ("stdout", "stderr") else "stdout"
        return nbformat.v4.new_output("stream", name=name, text=text) if text else None
    if kind == "error":
        lines = raw.get("traceback")
        lines = [line for line in lines if isinstance(line, str)] if isinstance(lines, list) else []
        return nbformat.v4.new_output(
            "error",
            ename=str(raw.get("ename", "Error"))[:200],
            evalue=str(raw.get("evalue", ""))[:2000],
            traceback=lines[-40:],
        )
    if kind not in ("display_data", "execute_result"):
        return None
    raw_data = raw.get("data")
    data = {}
    for mime in SHOWN_TYPES:
        value = _text(raw_data.get(mime)) if isinstance(raw_data, dict) else None
        if value is not None:
            data[mime] = value
    clean_output_data(data)
    return nbformat.v4.new_output("display_data", data=data) if data else None


def _size(output: nbformat.NotebookNode) -> int:
    if output.output_type == "stream":
        return len(output.text)
    if output.output_type == "error":
        return sum(len(line) for line in output.traceback)
    return sum(len(value) for value in output.data.values())


def submitted(
    raw_outputs: Any, note: str, limit: int = CPU_LIMITS.submitted_output_chars
) -> list[nbformat.NotebookNode]:
    """Сданный вывод ячейки: пометка ``note`` и то, что безопасно показать, — не больше
    ``limit`` символов (:attr:`~feedback.teacher.core.settings.Limits.submitted_output_chars`)."""
    if not isinstance(raw_outputs, list):
        return []
    shown, used = [], 0
    for raw in raw_outputs:
        output = _one(raw)
        if output is None:
            continue
        used += _size(output)
        if used > limit:
            shown.append(nbformat.v4.new_output("stream", name="stdout", text="…дальше обрезано\n"))
            break
        shown.append(output)
    return [marker(note), *shown] if shown else []

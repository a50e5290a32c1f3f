"""Выполнение тетрадки так, как это сделал бы учащийся: «Run all» в текущем окружении."""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[2]


def run_notebook(
    path: Path,
    strict: bool = False,
    timeout: int = 600,
    run_all: bool = False,
    until: str | None = None,
) -> nbformat.NotebookNode:
    """Выполняет ячейки и возвращает тетрадку с выводами.

    По умолчанию — все ячейки, не останавливаясь на ошибках; ``until`` — только до первой
    ячейки кода с этим текстом включительно (остальные убираются). ``run_all=True`` — как
    «Run all» в Jupyter и Colab: выполнение останавливается на первой ячейке, которая
    упала (кроме помеченных ``raises-exception``). GPU-лабораторные идут в учебном режиме
    (``COURSE7_TINY=1``), как в CI.
    """
    nb = nbformat.read(path, as_version=4)
    if until is not None:
        code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
        last = next(i for i in code if until in nb.cells[i].source)
        nb.cells = nb.cells[: last + 1]
    env_strict = os.environ.get("FEEDBACK_STRICT")
    os.environ["FEEDBACK_STRICT"] = "1" if strict else "0"
    os.environ.setdefault("MPLBACKEND", "Agg")
    os.environ.setdefault("COURSE7_TINY", "1")
    try:
        NotebookClient(
            nb,
            timeout=timeout,
            kernel_name="python3",
            allow_errors=not run_all,
            resources={"metadata": {"path": str(path.parent)}},
        ).execute()
    except CellExecutionError:
        pass  # «Run all» остановился: выводы до этой ячейки уже в nb
    finally:
        if env_strict is None:
            os.environ.pop("FEEDBACK_STRICT", None)
        else:
            os.environ["FEEDBACK_STRICT"] = env_strict
    return nb


def outputs_text(cell: nbformat.NotebookNode) -> str:
    """Всё, что ячейка показала: текст, HTML и ошибки одной строкой."""
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type == "error":
            parts.append("\n".join([output.ename, output.evalue, *output.traceback]))
        else:
            data = output.get("data", {})
            parts.append(data.get("text/html", "") or data.get("text/plain", ""))
    return "\n".join(parts)


def graded_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    """Ячейки автопроверки (тесты nbgrader)."""
    return [
        cell
        for cell in nb.cells
        if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade")
    ]

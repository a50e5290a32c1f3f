"""Сборка проверяемой тетрадки: из выпуска берётся всё, из работы — только ответы.

Работа учащегося — это тетрадка, которую он мог как угодно изменить: Colab и Kaggle
пересохраняют её в своём формате, разметка nbgrader бывает удалена или испорчена,
ячейки-проверки переписаны. Поэтому проверяется не она, а выпуск лабораторной
(``notebooks/…``, тот же, что в базе оценок), в который вставлены:

- ответы учащегося — содержимое ячеек-решений (код и письменные ответы);
- ячейки, которые учащийся добавил сам, на своих местах: их тоже выполняем, иначе
  помощник, вынесенный в отдельную ячейку, сделал бы верное решение неверным.

Текст, подготовка, ячейка установки и проверки берутся только из выпуска. Ячейки
работы сопоставляются с ячейками выпуска по ``grade_id``, по id ячейки и по тексту
(:func:`align`), а ответы без разметки находятся между сопоставленными соседями.

Ячейки-тесты при оценивании выполняются не как есть: вместо видимой проверки ядро
выполняет :func:`probe_source` — снятие наблюдения на случаях, вытянутых для этого
учащегося. Вердикт по наблюдению выносится вне песочницы (:mod:`feedback.teacher.unit.score`).
"""

from __future__ import annotations

import ast
import copy
import difflib
import inspect
import itertools
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import nbformat

from feedback.checks import check_function, find
from feedback.engine.graded import GradedCheck, check_module, split_arguments

#: Метаданные ячеек, которые добавил учащийся (для отчёта и взгляда преподавателя); это же
#: роль такой ячейки в собранной тетрадке (:attr:`Assembled.roles`).
ADDED = "added"
#: Остальные роли ячеек собранной тетрадки: из выпуска как есть, ответ учащегося, проверка.
FIXED = "fixed"
ANSWER = "answer"
TEST = "test"
#: Метаданные ``course7`` служебных ячеек, которые оценивание добавляет в проверенную
#: тетрадку: заметка оценивания (видят и учащийся, и преподаватель), что посмотреть вручную
#: и критерии оценки под письменным ответом (только для преподавателя).
GRADING_NOTE = "grading-note"
REVIEW_NOTE = "review-note"
RUBRIC_NOTE = "rubric"
#: Ячейки выпуска с этим тегом при оценивании не выполняются: проверкам они не нужны
#: (обучение, графики, демонстрации), а вместо их вывода показывается сданный учащимся.
SKIP_TAG = "grading-skip"
#: Похожесть, начиная с которой ячейка работы считается правкой ячейки выпуска.
EDITED_SIMILARITY = 0.6


# --------------------------------------------------------------------------- ячейки


@dataclass(frozen=True)
class Cell:
    """Ячейка так, как её видит сопоставление: тип, текст и метки."""

    kind: str
    source: str
    grade_id: str | None = None
    cell_id: str | None = None
    outputs: Any = field(default=None, repr=False, compare=False)  # вывод из работы, как есть
    key: str = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", normalize(self.source))


def normalize(source: str) -> str:
    """Текст ячейки без хвостовых пробелов и пустых строк по краям."""
    lines = [line.rstrip() for line in source.replace("\r\n", "\n").split("\n")]
    return "\n".join(lines).strip("\n")


def cell_source(cell: Any) -> str:
    """Текст ячейки JSON: строка как есть, список строк — склеенный, иное — пустая строка.

    В файле .ipynb текст ячейки бывает и строкой, и списком строк, а в загруженной работе —
    чем угодно: из списка берутся только строки.
    """
    source = cell.get("source") if isinstance(cell, Mapping) else None
    if isinstance(source, str):
        return source
    if isinstance(source, list):
        return "".join(part for part in source if isinstance(part, str))
    return ""


def _grading(raw: dict[str, Any]) -> dict[str, Any]:
    metadata = raw.get("metadata")
    grading = metadata.get("nbgrader") if isinstance(metadata, dict) else None
    return grading if isinstance(grading, dict) else {}


def upload_cells(nb: Any) -> list[Cell]:
    """Ячейки работы; всё, что не похоже на ячейку, пропускается."""
    cells = nb.get("cells") if isinstance(nb, dict) else None
    result = []
    for raw in cells if isinstance(cells, list) else []:
        if not isinstance(raw, dict) or raw.get("cell_type") not in ("code", "markdown", "raw"):
            continue
        grade_id = _grading(raw).get("grade_id")
        cell_id = raw.get("id")
        if not isinstance(cell_id, str):
            metadata = raw.get("metadata")
            cell_id = metadata.get("id") if isinstance(metadata, dict) else None  # Colab
        result.append(
            Cell(
                raw["cell_type"],
                cell_source(raw),
                grade_id if isinstance(grade_id, str) and grade_id else None,
                cell_id if isinstance(cell_id, str) and cell_id else None,
                raw.get("outputs") if raw["cell_type"] == "code" else None,
            )
        )
    return result


def release_cell(cell: nbformat.NotebookNode) -> Cell:
    grading = cell.metadata.get("nbgrader", {})
    return Cell(cell.cell_type, cell.source, grading.get("grade_id"), cell.get("id"))


def is_answer(cell: nbformat.NotebookNode) -> bool:
    """Ячейка-решение: её содержимое пишет учащийся."""
    return bool(cell.metadata.get("nbgrader", {}).get("solution"))


def is_test(cell: nbformat.NotebookNode) -> bool:
    """Ячейка автопроверки: код с баллами, но не решение."""
    grading = cell.metadata.get("nbgrader", {})
    return cell.cell_type == "code" and bool(grading.get("grade")) and not grading.get("solution")


# --------------------------------------------------------------------------- сопоставление


def _score(release: Cell, upload: Cell) -> int:
    if release.kind != upload.kind:
        return 0
    if release.grade_id and upload.grade_id == release.grade_id:
        return 4
    if upload.grade_id and upload.grade_id != release.grade_id:
        return 0
    if release.cell_id and upload.cell_id == release.cell_id:
        return 3
    if release.key and upload.key == release.key:
        return 2
    return 0


def align(release: list[Cell], upload: list[Cell]) -> list[tuple[int, int]]:
    """Пары (ячейка выпуска, ячейка работы) с наибольшим суммарным совпадением.

    Порядок сохраняется (это наибольшая общая подпоследовательность с весами):
    совпадение ``grade_id`` весит больше совпадения id, а оно — больше совпадения текста.
    """
    n, m = len(release), len(upload)
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            score = _score(release[i], upload[j])
            best[i][j] = max(
                best[i + 1][j], best[i][j + 1], best[i + 1][j + 1] + score if score else 0
            )
    pairs, i, j = [], 0, 0
    while i < n and j < m:
        score = _score(release[i], upload[j])
        if score and best[i][j] == best[i + 1][j + 1] + score:
            pairs.append((i, j))
            i, j = i + 1, j + 1
        elif best[i][j] == best[i + 1][j]:
            i += 1
        else:
            j += 1
    return pairs


def _similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() if a or b else 1.0


@dataclass
class Placement:
    """Где в собранной тетрадке окажется каждая ячейка работы."""

    answers: dict[int, int] = field(default_factory=dict)  # ячейка выпуска → ячейка работы
    matched: dict[int, int] = field(default_factory=dict)  # то же для остальных ячеек выпуска
    added: dict[int, list[int]] = field(default_factory=dict)  # после какой ячейки выпуска
    dropped: list[int] = field(default_factory=list)  # правки и копии ячеек выпуска
    missing: list[int] = field(default_factory=list)  # ответы, которых нет в работе


def place(release: list[Cell], answers: set[int], upload: list[Cell]) -> Placement:
    """Раскладывает ячейки работы по ячейкам выпуска (см. модуль)."""
    placement = Placement()
    pairs = align(release, upload)
    anchors = [(-1, -1), *pairs, (len(release), len(upload))]
    fixed = [cell for i, cell in enumerate(release) if i not in answers]
    fixed_ids = {cell.grade_id for cell in fixed if cell.grade_id}
    fixed_keys = {cell.key for cell in fixed if cell.key}
    for (i0, j0), (i1, j1) in itertools.pairwise(anchors):
        if 0 <= i0 < len(release):
            (placement.answers if i0 in answers else placement.matched)[i0] = j0
        gap_release = list(range(i0 + 1, i1))
        gap_upload = list(range(j0 + 1, j1))
        free = set(gap_upload)
        for i in gap_release:
            candidates = [
                j
                for j in gap_upload
                if j in free
                and upload[j].kind == release[i].kind
                and (
                    i in answers or _similarity(upload[j].key, release[i].key) >= EDITED_SIMILARITY
                )
            ]
            if not candidates:
                if i in answers:
                    placement.missing.append(i)
                continue
            chosen = max(candidates, key=lambda j: _similarity(upload[j].key, release[i].key))
            free.discard(chosen)
            if i in answers:
                placement.answers[i] = chosen
            else:
                placement.dropped.append(chosen)
                placement.matched[i] = chosen
        before = i0
        assigned = {j: i for i, j in placement.answers.items()}
        for j in gap_upload:
            if j in assigned:
                before = assigned[j]
            elif j in free:
                if upload[j].grade_id in fixed_ids or upload[j].key in fixed_keys:
                    placement.dropped.append(j)  # копия ячейки-проверки или текста
                else:
                    placement.added.setdefault(before, []).append(j)
    return placement


# --------------------------------------------------------------------------- проверки


@dataclass(frozen=True)
class CheckCall:
    """Вызов проверки в ячейке-тесте: какая проверка, чьи объекты, какие параметры."""

    name: str
    objects: tuple[str, ...]
    params: dict[str, Any]

    @property
    def check(self) -> GradedCheck:
        return find(self.name)


def parse_check_call(source: str) -> CheckCall:
    """Разбирает ячейку-тест выпуска: ровно один вызов ``модуль.check_…(имена, параметр=литерал)``.

    Так устроены все ячейки-тесты курса (это проверяет тест); всё остальное —
    ошибка в исходниках курса, а не у учащегося.
    """
    tree = ast.parse(source)
    statements = [node for node in tree.body if not isinstance(node, ast.Pass)]
    if len(statements) != 1 or not isinstance(statements[0], ast.Expr):
        raise ValueError("в ячейке-тесте должен быть ровно один вызов проверки")
    call = statements[0].value
    if not (
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and isinstance(call.func.value, ast.Name)
    ):
        raise ValueError("проверка вызывается как модуль.check_…(…)")
    name = f"{call.func.value.id}.{call.func.attr}"
    signature = inspect.signature(check_function(name))
    args = [_argument(node) for node in call.args]
    kwargs = {keyword.arg: _argument(keyword.value) for keyword in call.keywords}
    objects, params = split_arguments(signature, tuple(args), kwargs)
    if not all(isinstance(item, _Name) for item in objects):
        raise ValueError("объекты учащегося передаются в проверку именами переменных")
    if any(isinstance(value, _Name) for value in params.values()):
        raise ValueError("параметры проверки в ячейке-тесте должны быть литералами")
    # Оценивается только то, что обязательно наблюдению: необязательный объект (функция
    # задания 1 у таблицы 7.2) нужен лишь подсказке и в зонд другого задания не входит.
    objects = objects[: find(name).required_objects()]
    return CheckCall(name, tuple(str(item) for item in objects), params)


class _Name(str):
    """Имя переменной учащегося в вызове проверки."""


def _argument(node: ast.expr) -> Any:
    if isinstance(node, ast.Name):
        return _Name(node.id)
    return ast.literal_eval(node)


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def probe_source(grade_id: str, call: CheckCall, params: dict[str, Any], token: str = "") -> str:
    """Код, который ядро выполнит вместо ячейки-теста: снять и показать наблюдение.

    ``token`` — метка этой работы (см. :func:`feedback.engine.probe.observation_payload`).
    """
    if not all(_IDENTIFIER.match(name) for name in call.objects):
        raise ValueError("имена объектов должны быть идентификаторами")
    objects = "".join(f"{name}, " for name in call.objects)
    # Модуль проверки импортирует сам зонд — как это делал бы import: зонд не зависит от того,
    # что успели импортировать ячейки до него, а движок модулей лабораторных не импортирует.
    module = f"feedback.{check_module(call.name)}"
    return (
        "from feedback.engine import probe as _course7_probe\n"
        "import importlib as _course7_importlib\n\n"
        f"_course7_importlib.import_module({module!r})\n"
        f"_course7_probe.emit({grade_id!r}, {call.name!r}, lambda: ({objects}), "
        f"{json.dumps(params, ensure_ascii=False)!r}, {token!r})"
    )


# --------------------------------------------------------------------------- сборка


@dataclass
class Assembled:
    """Собранная тетрадка и что в ней откуда."""

    notebook: nbformat.NotebookNode  # то, что увидит преподаватель (тесты — как в выпуске)
    roles: list[str]  # по ячейкам: fixed, answer, added, test
    learner_cells: list[tuple[int, str]] = field(default_factory=list)  # (номер, подпись)
    #: вывод, который учащийся сдал вместе с тетрадкой, по номерам ячеек (как есть, не проверен)
    submitted_outputs: dict[int, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # что пришлось восстановить (по-русски)


def assemble(release: nbformat.NotebookNode, upload: Any) -> Assembled:
    """Выпуск с ответами и добавленными ячейками из работы (см. модуль)."""
    release_cells = [release_cell(cell) for cell in release.cells]
    answers = {i for i, cell in enumerate(release.cells) if is_answer(cell)}
    cells = upload_cells(upload)
    placement = place(release_cells, answers, cells)
    result = copy.deepcopy(release)
    result.cells = []
    roles: list[str] = []
    learner: list[tuple[int, str]] = []
    submitted: dict[int, Any] = {}

    def add_learner_cells(after: int) -> None:
        for j in placement.added.get(after, []):
            cell = _new_cell(cells[j])
            cell.id = f"course7-added-{j}"  # не случайный: повторное оценивание даёт тот же файл
            cell.metadata["course7"] = ADDED
            if cells[j].outputs:
                submitted[len(result.cells)] = cells[j].outputs
            result.cells.append(cell)
            roles.append(ADDED)
            if cell.cell_type == "code":
                learner.append((len(result.cells) - 1, f"добавленная ячейка №{len(result.cells)}"))

    add_learner_cells(-1)
    for i, original in enumerate(release.cells):
        cell = copy.deepcopy(original)
        if i in answers:
            if i in placement.answers:
                cell.source = cells[placement.answers[i]].source
            roles.append(ANSWER)
            if cell.cell_type == "code":
                learner.append((len(result.cells), cell.metadata["nbgrader"]["grade_id"]))
        else:
            roles.append(TEST if is_test(cell) else FIXED)
        source = placement.answers.get(i, placement.matched.get(i))
        if source is not None and cells[source].outputs and cell.cell_type == "code":
            submitted[len(result.cells)] = cells[source].outputs
        result.cells.append(cell)
        add_learner_cells(i)
    notes = [
        f"Не найдена ячейка-решение «{release_cells[i].grade_id}»: оценена как пустая."
        for i in placement.missing
    ]
    return Assembled(result, roles, learner, submitted_outputs=submitted, notes=notes)


def _new_cell(cell: Cell) -> nbformat.NotebookNode:
    if cell.kind == "code":
        return nbformat.v4.new_code_cell(cell.source)
    if cell.kind == "markdown":
        return nbformat.v4.new_markdown_cell(cell.source)
    return nbformat.v4.new_raw_cell(cell.source)

"""Похожие ответы: пары учащихся, чьи ответы на одно задание почти совпадают.

Алгоритм — winnowing (Schleimer, Wilkerson, Aiken, «Winnowing: local algorithms for
document fingerprinting», SIGMOD 2003), как в MOSS, copydetect и Dolos; написан здесь на
стандартной библиотеке, без этих программ:

1. Ответ превращается в поток токенов. Код разбирает :mod:`tokenize`: имена, которые код
   вводит сам (переменные, аргументы, функции, псевдонимы импортов — :func:`bound_names`
   по :mod:`ast`), становятся одним заполнителем ``V``; чужие имена (функции лабораторной,
   встроенные, атрибуты) остаются; комментарии, переводы строк и отступы выбрасываются,
   строки и числа остаются. Поэтому переименованные переменные и переформатированный код
   дают тот же поток. Письменный ответ — слова в нижнем регистре
   (ё → е), без разметки Markdown и знаков препинания.
2. Отпечатки: хэши всех k-грамм токенов; из каждого окна в w подряд идущих хэшей берётся
   наименьший (при равенстве — самый правый). Любой общий кусок длиной от w + k − 1
   токенов даёт хотя бы один общий отпечаток.
3. То, что шаблон даёт всем (заглушка выпуска: подпись функции, строка документации,
   «Добавьте сюда свой код» / «Впишите сюда свой ответ»), вычитается: k-граммы шаблона
   не считаются ни отпечатками, ни «своими» токенами ответа. Отпечатки, которые есть
   больше чем у :data:`COMMON_SHARE` ответов задания (и больше чем у
   :data:`COMMON_MIN` ответов), — общее место задания (их вычитает и MOSS), тоже не в счёт.
4. Код короче :data:`MIN_CODE_TOKENS` своих токенов не сравнивается: короткую формулу
   (``return 6 * p * n``) все верные ответы пишут одинаково.
5. Сходство пары — коэффициент Жаккара множеств отпечатков: |A ∩ B| / |A ∪ B|. Пара
   попадает в similar.csv при сходстве от порога :data:`THRESHOLDS` (свой у кода и текста).
6. Короткий письменный ответ (от :data:`MIN_SHORT_WORDS` до :data:`MIN_TEXT_WORDS` своих
   слов — столько и просит «Ответьте коротко») отпечатков почти не даёт, поэтому у него своё
   правило: его слова без текста курса сравниваются целиком, :class:`difflib.SequenceMatcher`
   (доля совпавших слов). Пара — при совпадении от :data:`SHORT_THRESHOLD`: слово в слово
   или с одной-двумя правками. Текст курса — это не только заглушка ответа, но и весь
   Markdown выпуска (вопрос, объяснения): ответ, который начинается с переписанного вопроса,
   похож на другие только вопросом, и тот вычитается. Ответ, который дали больше
   :data:`COMMON_SHARE` ответов задания, — общее место, а не списывание.

Пороги подобраны на синтетическом наборе из tests/teacher/pages/test_similarity.py (честно и
независимо написанные варианты функции 7.4 и абзаца рефлексии против копий с
переименованными переменными и переформатированием); числа — в отчёте задачи (issue 20).
"""

from __future__ import annotations

import ast
import difflib
import functools
import io
import keyword
import re
import tokenize
import zlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from itertools import combinations

from feedback.teacher.core.tables import SimilarRow
from feedback.teacher.notebook.assemble import cell_source

#: Длина k-граммы и окна winnowing: для кода — в токенах, для текста — в словах.
CODE_K, CODE_W = 5, 4
TEXT_K, TEXT_W = 4, 3
#: Сколько своих токенов (кода) или слов (текста) нужно ответу, чтобы сравнивать его
#: отпечатками.
MIN_CODE_TOKENS = 30
MIN_TEXT_WORDS = 25
#: Короткий письменный ответ (меньше MIN_TEXT_WORDS своих слов) сравнивается целиком, если в
#: нём не меньше MIN_SHORT_WORDS своих слов: «Adam.» или «Оптимизатор» честно пишут многие.
MIN_SHORT_WORDS = 5
#: Доля совпавших слов (SequenceMatcher.ratio), от которой два коротких ответа похожи:
#: в ответе из 10 слов — одно заменённое слово (0,9).
SHORT_THRESHOLD = 0.9
#: Сходство (Жаккар отпечатков), от которого пара считается похожей: для кода и текста.
#: Короткий честный код похож «формой» (``V = V * V``), поэтому порог кода выше.
THRESHOLDS = {"code": 0.6, "text": 0.25}
#: Отпечаток, который есть у большей доли ответов задания, — общее место, а не списывание.
COMMON_SHARE = 0.5
COMMON_MIN = 4
#: Длина показываемого общего фрагмента, символов.
FRAGMENT_CHARS = 100

#: Заглушки выпуска: их текст даёт всем шаблон.
STUBS = ("Добавьте сюда свой код", "Впишите сюда свой ответ")

_SKIPPED = {
    tokenize.COMMENT,
    tokenize.NL,
    tokenize.NEWLINE,
    tokenize.INDENT,
    tokenize.DEDENT,
    tokenize.ENCODING,
    tokenize.ENDMARKER,
}
_KEYWORDS = set(keyword.kwlist)  # мягкие (match, case, _) — обычные имена
_WORD = re.compile(r"\w+", re.UNICODE)
_CODE_FALLBACK = re.compile(r"\w+|\"[^\"\n]*\"|'[^'\n]*'|[^\s\w]", re.UNICODE)


@dataclass(frozen=True)
class Tokens:
    """Поток нормализованных токенов и где каждый стоит в исходном тексте (начало, конец)."""

    values: tuple[str, ...]
    spans: tuple[tuple[int, int], ...]


def _offsets(source: str) -> list[int]:
    starts, total = [0], 0
    for line in source.splitlines(keepends=True):
        total += len(line)
        starts.append(total)
    return starts


def _strip_stubs(text: str) -> str:
    for stub in STUBS:
        text = text.replace(stub, " " * len(stub))
    return text


def bound_names(source: str) -> set[str] | None:
    """Имена, которые код сам вводит: переменные, аргументы, функции, импорты.

    Именно их переименовывает тот, кто прячет списанное; имена извне (функции
    лабораторной, встроенные, атрибуты) остаются как есть. ``None`` — код не разбирается.
    """
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return None
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def code_tokens(source: str) -> Tokens:
    """Токены кода: свои имена → ``V``, без комментариев, переводов строк и отступов.

    Имена, которые код вводит сам (:func:`bound_names`), становятся ``V``, остальные (и
    атрибуты после точки) остаются. Код, который не разбирается (недописанная скобка),
    режется регулярным выражением, и тогда ``V`` — все имена: сравнивать его всё равно нужно.
    """
    source = _strip_stubs(source)
    bound = bound_names(source)
    starts = _offsets(source)
    values: list[str] = []
    spans: list[tuple[int, int]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in _SKIPPED:
                continue
            text = token.string
            if token.type == tokenize.NAME and text not in _KEYWORDS:
                text = "V" if bound is None or text in bound else text
            elif token.type == tokenize.STRING:
                text = " ".join(text.lower().split())
            start = starts[token.start[0] - 1] + token.start[1]
            end = starts[token.end[0] - 1] + token.end[1]
            values.append(text)
            spans.append((start, end))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        values, spans = [], []
        for match in _CODE_FALLBACK.finditer(source):
            text = match.group()
            if text[0].isalpha() or text[0] == "_":
                text = text if text in _KEYWORDS else "V"
            values.append(text)
            spans.append(match.span())
    return Tokens(tuple(values), tuple(spans))


def text_tokens(text: str) -> Tokens:
    """Слова письменного ответа: нижний регистр, ё → е, без разметки и препинания."""
    text = _strip_stubs(text)
    matches = list(_WORD.finditer(text))
    values = tuple(match.group().lower().replace("ё", "е") for match in matches)
    return Tokens(values, tuple(match.span() for match in matches))


def _token_id(value: str) -> int:
    return zlib.crc32(value.encode("utf-8"))


def kgram_hashes(tokens: Tokens, k: int) -> list[int]:
    """Хэши всех k-грамм подряд (не зависят от PYTHONHASHSEED: кортеж целых чисел)."""
    ids = [_token_id(value) for value in tokens.values]
    return [hash(tuple(ids[i : i + k])) for i in range(len(ids) - k + 1)]


def winnow(hashes: list[int], w: int) -> dict[int, int]:
    """Отпечатки winnowing: хэш → позиция первой k-граммы, где он выбран.

    В каждом окне из ``w`` хэшей выбирается наименьший (при равенстве — самый правый);
    выбранный уже в прошлом окне не записывается снова (robust winnowing).
    """
    chosen: dict[int, int] = {}
    if not hashes:
        return chosen
    w = min(w, len(hashes))
    previous = -1
    for start in range(len(hashes) - w + 1):
        newest = start + w - 1
        if previous < start:  # прошлый минимум вышел из окна: ищем заново
            position = min(range(start, newest + 1), key=lambda i: (hashes[i], i))
            position = max(i for i in range(start, newest + 1) if hashes[i] == hashes[position])
        elif hashes[newest] <= hashes[previous]:
            position = newest
        else:
            position = previous
        if position != previous:
            chosen.setdefault(hashes[position], position)
            previous = position
    return chosen


@dataclass
class Answer:
    """Один ответ учащегося на задание, готовый к сравнению."""

    student: str
    source: str
    tokens: Tokens
    k: int
    hashes: list[int]
    fingerprints: dict[int, int]
    template: list[bool]  # токен покрыт k-граммой шаблона
    own: int  # своих токенов: не покрытых k-граммами шаблона

    @property
    def own_words(self) -> tuple[str, ...]:
        """Свои токены подряд (без покрытых шаблоном) — короткий ответ целиком."""
        return tuple(
            value
            for value, covered in zip(self.tokens.values, self.template, strict=True)
            if not covered
        )

    def own_text(self) -> str:
        """Свой кусок ответа как он написан: от первого своего слова до последнего."""
        spans = [
            span
            for span, covered in zip(self.tokens.spans, self.template, strict=True)
            if not covered
        ]
        if not spans:
            return ""
        text = " ".join(self.source[spans[0][0] : spans[-1][1]].split())
        return text if len(text) <= FRAGMENT_CHARS else text[: FRAGMENT_CHARS - 1] + "…"


@functools.lru_cache(maxsize=64)
def _template_hashes(template: str, kind: str) -> frozenset[int]:
    """k-граммы шаблона задания: одни на все ответы задания (текст курса бывает длинным)."""
    tokenizer, k = (code_tokens, CODE_K) if kind == "code" else (text_tokens, TEXT_K)
    return frozenset(kgram_hashes(tokenizer(template), k)) if template else frozenset()


def prepare(student: str, source: str, template: str, kind: str) -> Answer:
    """Ответ ``kind`` (``"code"`` или ``"text"``) без того, что дал всем шаблон."""
    tokenizer, k, w = (
        (code_tokens, CODE_K, CODE_W) if kind == "code" else (text_tokens, TEXT_K, TEXT_W)
    )
    tokens = tokenizer(source)
    hashes = kgram_hashes(tokens, k)
    template_hashes = _template_hashes(template, kind)
    covered = [False] * len(tokens.values)
    for index, value in enumerate(hashes):
        if value in template_hashes:
            covered[index : index + k] = [True] * k
    prints = {h: p for h, p in winnow(hashes, w).items() if h not in template_hashes}
    own = covered.count(False) if hashes else 0
    return Answer(student, source, tokens, k, hashes, prints, covered, own)


@dataclass(frozen=True)
class Pair:
    """Пара похожих ответов одного задания."""

    student_a: str
    student_b: str
    similarity: float
    fragment: str


@dataclass
class Task:
    """Ответы всех учащихся на одно задание лабораторной."""

    lab: str
    task: str
    kind: str  # "code" или "text"
    template: str = ""
    answers: dict[str, str] = field(default_factory=dict)


def _fragment(a: Answer, shared: set[int], skip: set[int]) -> str:
    """Самый длинный кусок ответа A (не из шаблона), покрытый k-граммами, общими с B."""
    covered = [False] * len(a.tokens.values)
    for index, value in enumerate(a.hashes):
        if value in shared and value not in skip:
            covered[index : index + a.k] = [True] * a.k
    covered = [flag and not template for flag, template in zip(covered, a.template, strict=True)]
    best, start = (0, 0), None
    for index, flag in enumerate([*covered, False]):
        if flag and start is None:
            start = index
        elif not flag and start is not None:
            if index - start > best[1] - best[0]:
                best = (start, index)
            start = None
    if best[1] == best[0]:
        return ""
    begin = a.tokens.spans[best[0]][0]
    end = a.tokens.spans[best[1] - 1][1]
    text = " ".join(a.source[begin:end].split())
    return text if len(text) <= FRAGMENT_CHARS else text[: FRAGMENT_CHARS - 1] + "…"


def similar_pairs(task: Task, threshold: float | None = None) -> list[Pair]:
    """Пары ответов задания со сходством от ``threshold`` (по умолчанию — порог вида
    ответа из :data:`THRESHOLDS`), самые похожие первыми."""
    threshold = THRESHOLDS[task.kind] if threshold is None else threshold
    minimum = MIN_CODE_TOKENS if task.kind == "code" else MIN_TEXT_WORDS
    prepared = [
        prepare(student, source, task.template, task.kind)
        for student, source in sorted(task.answers.items())
    ]
    answers = [answer for answer in prepared if answer.own >= minimum and answer.fingerprints]
    short = []
    if task.kind == "text":
        short = [answer for answer in prepared if MIN_SHORT_WORDS <= answer.own < minimum]
    owners: dict[int, list[int]] = defaultdict(list)
    for index, answer in enumerate(answers):
        for value in answer.fingerprints:
            owners[value].append(index)
    limit = max(COMMON_MIN, COMMON_SHARE * len(answers))
    common = {value for value, found in owners.items() if len(found) > limit}
    sizes = [len(set(answer.fingerprints) - common) for answer in answers]
    shared: Counter[tuple[int, int]] = Counter()
    for value, found in owners.items():
        if value not in common:
            shared.update(combinations(found, 2))
    pairs = []
    for (i, j), count in shared.items():
        union = sizes[i] + sizes[j] - count
        similarity = count / union if union else 0.0
        if similarity < threshold:
            continue
        a, b = answers[i], answers[j]
        both = set(a.fingerprints) & set(b.fingerprints)
        pairs.append(Pair(a.student, b.student, round(similarity, 3), _fragment(a, both, common)))
    given = sum(1 for answer in prepared if answer.own)
    pairs += short_pairs(short, max(COMMON_MIN, COMMON_SHARE * given))
    return sorted(pairs, key=lambda p: (-p.similarity, p.student_a, p.student_b))


def short_pairs(answers: list[Answer], common_limit: float) -> list[Pair]:
    """Пары коротких письменных ответов, чьи свои слова совпадают почти целиком.

    Ответ, слово в слово одинаковый больше чем у ``common_limit`` учащихся, — общее место
    задания (так отвечают все), его пары не в счёт.
    """
    words = [answer.own_words for answer in answers]
    counts = Counter(words)
    pairs = []
    for i, j in combinations(range(len(answers)), 2):
        a, b = words[i], words[j]
        if counts[a] > common_limit or counts[b] > common_limit:
            continue
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        if matcher.real_quick_ratio() < SHORT_THRESHOLD or matcher.quick_ratio() < SHORT_THRESHOLD:
            continue
        ratio = matcher.ratio()
        if ratio >= SHORT_THRESHOLD:
            first, second = answers[i], answers[j]
            pairs.append(Pair(first.student, second.student, round(ratio, 3), first.own_text()))
    return pairs


def similarity(a: str, b: str, kind: str, template: str = "") -> float:
    """Сходство двух ответов (Жаккар отпечатков) без порогов и общих мест — для проверки."""
    first, second = prepare("a", a, template, kind), prepare("b", b, template, kind)
    union = set(first.fingerprints) | set(second.fingerprints)
    if not union:
        return 0.0
    return len(set(first.fingerprints) & set(second.fingerprints)) / len(union)


# --------------------------------------------------------------------------- тетрадки


def answer_cells(notebook: Mapping) -> dict[str, tuple[str, str]]:
    """Ячейки-ответы тетрадки: grade_id → (вид ``"code"``/``"text"``, текст)."""
    found = {}
    for cell in notebook.get("cells", []):
        metadata = cell.get("metadata", {}) if isinstance(cell, Mapping) else {}
        grading = metadata.get("nbgrader", {}) if isinstance(metadata, Mapping) else {}
        if not isinstance(grading, Mapping) or not grading.get("solution"):
            continue
        grade_id = grading.get("grade_id")
        if not isinstance(grade_id, str):
            continue
        kind = "code" if cell.get("cell_type") == "code" else "text"
        found[grade_id] = (kind, cell_source(cell))
    return found


def course_text(release: Mapping) -> str:
    """Весь Markdown выпуска, кроме ответов: вопросы, объяснения, заглушки — текст курса."""
    parts = []
    for cell in release.get("cells", []):
        metadata = cell.get("metadata", {}) if isinstance(cell, Mapping) else {}
        grading = metadata.get("nbgrader", {}) if isinstance(metadata, Mapping) else {}
        if cell.get("cell_type") == "markdown" and not grading.get("solution"):
            parts.append(cell_source(cell))
    return "\n\n".join(parts)


def tasks_from(
    releases: Mapping[str, Mapping], works: Iterable[tuple[str, str, Mapping]]
) -> list[Task]:
    """Задания с ответами: ``releases`` — выпуски (лаб → тетрадка), ``works`` — работы.

    ``works`` — тройки (учащийся, лабораторная, проверенная тетрадка). Шаблон задания —
    ячейка выпуска с тем же grade_id, а у письменного ответа ещё и весь текст курса
    (:func:`course_text`): переписанный в ответ вопрос — не свой текст.
    """
    tasks: dict[tuple[str, str], Task] = {}
    for lab, release in releases.items():
        course = course_text(release)
        for grade_id, (kind, source) in answer_cells(release).items():
            template = f"{source}\n\n{course}" if kind == "text" else source
            tasks[(lab, grade_id)] = Task(lab, grade_id, kind, template)
    for student, lab, notebook in works:
        for grade_id, (kind, source) in answer_cells(notebook).items():
            task = tasks.setdefault((lab, grade_id), Task(lab, grade_id, kind))
            task.answers[student] = source
    return [tasks[key] for key in sorted(tasks)]


def similar_rows(tasks: Iterable[Task], threshold: float | None = None) -> list[SimilarRow]:
    """Строки similar.csv по всем заданиям."""
    rows = []
    for task in tasks:
        for pair in similar_pairs(task, threshold):
            rows.append(
                SimilarRow(
                    task.lab,
                    task.task,
                    pair.student_a,
                    pair.student_b,
                    f"{pair.similarity:.3f}",
                    pair.fragment,
                )
            )
    return rows

"""Похожие ответы (feedback.teacher.pages.similarity) на синтетическом наборе.

Набор создаётся здесь же: десять независимо написанных честных вариантов функции
calculate_activation_memory (лабораторная 7.4) и десять абзацев ответа на вопрос 1 той же
лабораторной, а к ним — копии: с переименованными переменными и переформатированными
пробелами и переносами (код), с переносами строк, регистром и пробелами (текст). Честные
пары должны остаться ниже порога, копии — выше. Числа печатаются (``pytest -s``) и
приведены в отчёте задачи.
"""

from __future__ import annotations

import ast
import re
import tokenize
from io import StringIO
from itertools import combinations

import pytest
from corpus import LAB4

from feedback.teacher.core.settings import Settings
from feedback.teacher.core.workspace import Workspace
from feedback.teacher.pages import similarity
from feedback.teacher.pages.similarity import Task, similar_pairs

from submissions import cell_by_id, student_notebook, submission

SIGNATURE = '''def calculate_activation_memory(
    batch_size: int,
    max_length: int,
    num_layers: int,
    embedding_dim: int,
    bytes_per_param: float,
) -> float:
    """Память под активации (один вектор на токен на слой), ГиБ."""
'''

#: Честные варианты: каждый написан отдельно, своими словами и своим способом.
HONEST_CODE = [
    SIGNATURE
    + """    tokens = batch_size * max_length
    values_per_layer = tokens * embedding_dim
    total_values = values_per_layer * num_layers
    total_bytes = total_values * bytes_per_param
    return bytes_to_gb(total_bytes)
""",
    SIGNATURE
    + """    # один вектор размера embedding_dim на каждый токен в каждом слое
    per_token = embedding_dim * bytes_per_param
    per_layer = per_token * batch_size * max_length
    memory_bytes = per_layer * num_layers
    gib = memory_bytes / 1024**3
    return gib
""",
    SIGNATURE
    + """    GIB = 1024 ** 3
    shape = (batch_size, max_length, num_layers, embedding_dim)
    count = 1
    for size in shape:
        count *= size
    return count * bytes_per_param / GIB
""",
    SIGNATURE
    + """    import math

    n_elements = math.prod([batch_size, max_length, num_layers, embedding_dim])
    size_in_bytes = n_elements * bytes_per_param
    result = size_in_bytes / (1024 * 1024 * 1024)
    print(f"активации: {result:.2f} ГиБ")
    return result
""",
    """def calculate_activation_memory(batch_size, max_length, num_layers, embedding_dim,
                                bytes_per_param):
    if batch_size <= 0 or max_length <= 0:
        return 0.0
    activations = batch_size * max_length * embedding_dim
    activations = activations * num_layers
    return bytes_to_gb(activations * bytes_per_param)
""",
    SIGNATURE
    + """    layer_bytes = batch_size * max_length * embedding_dim * bytes_per_param
    total = 0
    for _ in range(num_layers):
        total += layer_bytes
    return total / 2**30
""",
    SIGNATURE
    + """    bytes_total = (
        batch_size
        * max_length
        * num_layers
        * embedding_dim
        * bytes_per_param
    )
    gigabytes = bytes_total / 1073741824
    assert gigabytes >= 0, "память не бывает отрицательной"
    return gigabytes
""",
    SIGNATURE
    + """    def per_sequence(length, width):
        return length * width * bytes_per_param

    one_sequence = per_sequence(max_length, embedding_dim)
    all_layers = one_sequence * num_layers
    return bytes_to_gb(all_layers * batch_size)
""",
    SIGNATURE
    + """    import numpy as np

    dims = np.array([batch_size, max_length, num_layers, embedding_dim], dtype=np.float64)
    total_bytes = float(np.prod(dims)) * bytes_per_param
    return total_bytes / 1024 / 1024 / 1024
""",
    SIGNATURE
    + """    tokens_in_batch = batch_size * max_length
    floats_per_token = num_layers * embedding_dim
    memory = tokens_in_batch * floats_per_token * bytes_per_param
    memory_gib = bytes_to_gb(memory)
    return memory_gib
""",
]

#: Честные ответы на вопрос 1 лабораторной 7.4: какая статья памяти самая большая.
HONEST_TEXT = [
    "Самая большая статья — состояние оптимизатора Adam. Для каждого параметра он хранит два "
    "числа: скользящее среднее градиента и среднее его квадрата. Во float32 это 8 байт на "
    "параметр, то есть вдвое больше, чем сами веса, и вдвое больше градиентов. Для модели "
    "на 4 млрд параметров выходит около 29 ГиБ.",
    "Больше всего места занимает Adam: у него на каждый вес приходится первый и второй "
    "момент, поэтому память оптимизатора равна 2·P·4 байта. Веса и градиенты занимают по "
    "P·4 байта каждый, а активации в нашей упрощённой оценке ещё меньше. Получается, что "
    "оптимизатор один тяжелее весов и градиентов по отдельности.",
    "По графику видно, что крупнейший столбец — optimizer. Причина в том, что AdamW держит "
    "две копии размера модели (моменты m и v). Каждая такая копия во float32 весит столько "
    "же, сколько все веса, так что вместе они дают примерно 29 ГиБ против 14,5 ГиБ у весов.",
    "Я думаю, что это память под состояние оптимизатора. Adam запоминает для всех параметров "
    "среднее значение градиента и среднее значение квадрата градиента, и оба хранятся в 32 "
    "битах. Значит, на один параметр уходит восемь байт только на оптимизатор, а веса и "
    "градиенты требуют ещё по четыре.",
    "Наибольшая часть — моменты Adam (около 28,9 ГиБ). Веса модели — около 14,5 ГиБ, столько же "
    "градиенты, потому что градиент есть у каждого параметра. А оптимизатору нужно хранить "
    "два значения на параметр, отсюда удвоение. Активации зависят от батча и длины, но у нас "
    "батч маленький.",
    "Оптимизатор. Если посчитать: 3,88 млрд параметров × 2 момента × 4 байта ≈ 31 ГБ, то есть "
    "примерно 29 ГиБ. Это больше всего остального вместе взятого, кроме суммы весов и "
    "градиентов. Так происходит, потому что Adam адаптирует шаг для каждого веса отдельно и "
    "ему нужна статистика по каждому.",
    "Самым затратным оказывается состояние AdamW. Этот оптимизатор для каждого обучаемого "
    "параметра ведёт экспоненциальные средние первого и второго порядка. Раз их два, а "
    "каждое занимает четыре байта, получаем удвоенный объём весов. При обучении всех "
    "параметров без LoRA это главная статья расхода.",
    "Главный потребитель памяти — Adam. Градиенты и веса весят одинаково (по числу "
    "параметров, умноженному на размер float32), но оптимизатор хранит m и v для каждого "
    "параметра, поэтому его часть вдвое больше. Вместе веса, градиенты и Adam дают 16 байт "
    "на параметр.",
    "Больше всего памяти уходит на состояния оптимизатора, потому что в Adam для каждого "
    "параметра нужно помнить две величины — сглаженный градиент и сглаженный квадрат "
    "градиента. В итоге оптимизатор занимает в два раза больше, чем модель, а на T4 с её "
    "15 ГиБ это не влезает совсем.",
    "Ответ: optimizer state. Формула 2 × P × b показывает, что при b = 4 байта и P ≈ 3,9 млрд "
    "получаем почти 29 ГиБ. Для сравнения веса — 14,5 ГиБ, градиенты — тоже 14,5 ГиБ. "
    "Причина — два момента на параметр у Adam, которые нужны, чтобы масштабировать шаг "
    "обновления.",
]


def rename_variables(source: str, suffix: str = "_x") -> str:
    """Копия, в которой переименовано всё, что можно переименовать без вреда: переменные,
    аргументы, вложенные функции и псевдонимы импортов (атрибуты и чужие имена — нет)."""
    tree = ast.parse(source)
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            found = node.id
        elif isinstance(node, ast.arg):
            found = node.arg
        elif isinstance(node, ast.FunctionDef):
            found = node.name
        elif isinstance(node, ast.alias) and node.asname:
            found = node.asname
        else:
            continue
        names.setdefault(found, f"renamed{len(names)}{suffix}")
    pieces = []
    for token in tokenize.generate_tokens(StringIO(source).readline):
        pieces.append(
            (token.type, names.get(token.string, token.string))
            if token.type == tokenize.NAME
            else (token.type, token.string)
        )
    return tokenize.untokenize(pieces)


def reflow_code(source: str) -> str:
    """Копия с другими пробелами и переносами: операторы без пробелов, пустые строки,
    другой комментарий, подпись в одну строку."""
    lines = []
    for line in source.splitlines():
        code, _, _ = line.partition("  #")
        if code.strip().startswith("#"):
            lines.append(code.replace("#", "#  переписано:", 1))
            continue
        lines.append(re.sub(r" ([*/+-]) ", r"\1", code).rstrip())
        if code.strip().endswith(":"):
            continue
        lines.append("")
    return "\n".join(lines)


def reflow_text(text: str) -> str:
    """Копия абзаца с другими переносами строк, двойными пробелами и регистром."""
    words = text.split()
    lines, line = [], []
    for index, word in enumerate(words):
        line.append(word.upper() if index % 7 == 0 else word)
        if len(line) == 6:
            lines.append("  ".join(line))
            line = []
    lines.append(" ".join(line))
    return "\n".join(lines)


def edit_text(text: str) -> str:
    """Копия с правками: заменены несколько слов, добавлено вводное слово."""
    replaced = text.replace("параметр", "вес").replace("Adam", "Адам")
    return "По-моему, " + replaced[0].lower() + replaced[1:]


def template() -> str:
    cell = cell_by_id(student_notebook(LAB4), "calculate_activation_memory")
    return "".join(cell["source"])


def text_template() -> str:
    cell = cell_by_id(student_notebook(LAB4), "reflection_largest")
    return "".join(cell["source"])


def honest_pairs(answers, kind, stub, eligible_only=False):
    """Сходство всех честных пар (или только тех, что similar_pairs станет сравнивать)."""
    pairs = combinations(answers, 2)
    if eligible_only:
        pairs = [
            (a, b) for a, b in pairs if _long_enough(a, kind, stub) and _long_enough(b, kind, stub)
        ]
    return sorted(similarity.similarity(a, b, kind, stub) for a, b in pairs)


def copied(answers, disguise, kind, stub):
    return sorted(similarity.similarity(a, disguise(a), kind, stub) for a in answers)


def disguised_code(source: str) -> str:
    return reflow_code(rename_variables(source))


def test_code_tokens_ignore_names_comments_and_layout():
    a = "def f(x, y):\n    # сумма\n    return x + y * 2\n"
    b = "def g(first,\n      second):\n    return first+second*2  # иначе\n"
    assert similarity.code_tokens(a).values == similarity.code_tokens(b).values
    assert similarity.code_tokens("x = 'a  b'").values == ("V", "=", "'a b'")


def test_code_that_does_not_parse_is_still_compared():
    broken = "def f(x:\n    return (x + 1"
    assert "V" in similarity.code_tokens(broken).values


def test_winnowing_picks_rightmost_minimum_of_every_window():
    hashes = [5, 3, 3, 7, 1, 9, 9, 2]
    chosen = similarity.winnow(hashes, 3)
    # окна: [5,3,3]→3@2, [3,3,7]→3@2, [3,7,1]→1@4, [7,1,9]→1@4, [1,9,9]→1@4, [9,9,2]→2@7
    assert chosen == {3: 2, 1: 4, 2: 7}


def test_shared_fragment_of_k_plus_w_tokens_always_gives_a_shared_fingerprint():
    shared = " ".join(f"слово{i}" for i in range(similarity.TEXT_K + similarity.TEXT_W - 1))
    a = similarity.prepare("a", "начало одно " + shared + " конец", "", "text")
    b = similarity.prepare("b", "совсем другое начало " + shared, "", "text")
    assert set(a.fingerprints) & set(b.fingerprints)


def test_template_text_is_not_an_answer():
    stub = template()
    answer = similarity.prepare("a", stub, stub, "code")
    assert answer.own == 0
    assert answer.fingerprints == {}
    reflection = similarity.prepare("a", text_template(), text_template(), "text")
    assert reflection.own == 0


def test_short_formulas_do_not_flood_the_table():
    short = [f"def compute_num_flops(p, n):\n    return 6 * p * n  # {i}\n" for i in range(30)]
    task = Task("lab", "compute_num_flops", "code", "", dict(enumerate(map(str, short))))
    task.answers = {f"s{i}": source for i, source in enumerate(short)}
    assert similar_pairs(task) == []


def test_honest_variants_stay_below_and_copies_exceed_the_threshold(capsys):
    stub, text_stub = template(), text_template()
    code_limit, text_limit = similarity.THRESHOLDS["code"], similarity.THRESHOLDS["text"]
    code_honest = honest_pairs(HONEST_CODE, "code", stub)
    code_compared = honest_pairs(HONEST_CODE, "code", stub, eligible_only=True)
    text_honest = honest_pairs(HONEST_TEXT, "text", text_stub)
    code_copies = copied(HONEST_CODE, disguised_code, "code", stub)
    text_copies = copied(HONEST_TEXT, reflow_text, "text", text_stub)
    text_edited = copied(HONEST_TEXT, edit_text, "text", text_stub)

    def spread(values):
        return f"{values[0]:.3f}…{values[-1]:.3f} (медиана {values[len(values) // 2]:.3f})"

    with capsys.disabled():
        print(
            f"\nкод (порог {code_limit}): честные пары, все {len(code_honest)}: "
            f"{spread(code_honest)}; из них сравниваемые (от {similarity.MIN_CODE_TOKENS} "
            f"своих токенов) {len(code_compared)}: {spread(code_compared)}; копии с "
            f"переименованием и переформатированием: {spread(code_copies)}\n"
            f"текст (порог {text_limit}): честные пары {len(text_honest)}: {spread(text_honest)}; "
            f"копии с переносами и регистром: {spread(text_copies)}; копии с заменой слов: "
            f"{spread(text_edited)}"
        )
    assert code_honest[-1] < code_limit
    assert text_honest[-1] < text_limit
    assert code_copies[0] >= code_limit
    assert text_copies[0] >= text_limit
    assert text_edited[0] >= text_limit


@pytest.mark.parametrize("kind", ["code", "text"])
def test_similar_pairs_finds_exactly_the_copies_in_a_mixed_class(kind):
    honest = HONEST_CODE if kind == "code" else HONEST_TEXT
    stub = template() if kind == "code" else text_template()
    answers = {f"honest_{i:02d}": source for i, source in enumerate(honest)}
    disguise = disguised_code if kind == "code" else reflow_text
    for i in (1, 4, 7):
        answers[f"copy_of_{i:02d}"] = disguise(honest[i])
    # Все, кто оставил шаблон нетронутым, одинаковы, но ответа у них нет.
    answers.update({f"blank_{i}": stub for i in range(5)})
    task = Task(LAB4, "calculate_activation_memory", kind, stub, answers)
    pairs = similar_pairs(task)
    found = {(pair.student_a, pair.student_b) for pair in pairs}
    expected = {(f"copy_of_{i:02d}", f"honest_{i:02d}") for i in (1, 4, 7)}
    expected = {pair for pair in expected if _long_enough(honest[int(pair[1][-2:])], kind, stub)}
    assert found == expected
    assert all(pair.fragment for pair in pairs)
    assert all(len(pair.fragment) <= similarity.FRAGMENT_CHARS for pair in pairs)


def _long_enough(source: str, kind: str, stub: str) -> bool:
    minimum = similarity.MIN_CODE_TOKENS if kind == "code" else similarity.MIN_TEXT_WORDS
    return similarity.prepare("x", source, stub, kind).own >= minimum


def test_most_honest_variants_are_long_enough_to_be_compared():
    stub, text_stub = template(), text_template()
    code = [_long_enough(source, "code", stub) for source in HONEST_CODE]
    text = [_long_enough(source, "text", text_stub) for source in HONEST_TEXT]
    assert sum(code) >= 5, code
    assert all(text), text


def test_csv_rows_carry_the_fragment_for_write_rows(tmp_path):
    from feedback.teacher.core.tables import SimilarRow, write_rows

    answers = {
        "a": "=cmd|' /C calc'!A0 " + HONEST_TEXT[0],
        "b": "=cmd|' /C calc'!A0 " + HONEST_TEXT[0],
    }
    rows = similarity.similar_rows([Task(LAB4, "reflection_largest", "text", "", answers)])
    assert len(rows) == 1
    assert (rows[0].lab, rows[0].task, rows[0].student_a, rows[0].student_b) == (
        LAB4,
        "reflection_largest",
        "a",
        "b",
    )
    write_rows(tmp_path / "similar.csv", SimilarRow, rows)
    text = (tmp_path / "similar.csv").read_text(encoding="utf-8")
    assert "\n" + LAB4 in text
    assert ",'=" in text or ",=" not in text


# --------------------------------------------------------------------------- короткие ответы

#: Вопросы 7.4 — как в выпуске (текст курса).
QUESTION_1 = "Какая статья памяти при обучении во float32 самая большая и почему?"
#: Короткие ответы, которые списаны слово в слово («Ответьте коротко»).
SHORT_1 = "Состояние оптимизатора: Adam хранит два момента на каждый параметр, это 8 байт."
SHORT_2 = "Веса, потому что 12 млрд параметров в bfloat16 занимают около 22 ГиБ."


def _short_answers() -> dict[str, dict[str, str]]:
    """Ответы класса на три вопроса 7.4: grade_id → текст."""
    return {
        "copier_a": {
            "reflection_largest": SHORT_1,
            "reflection_input": SHORT_2,
            "reflection_fit": "Взять LoRA и bfloat16, тогда обучаемых параметров мало.",
        },
        "copier_b": {  # те же два ответа: другие регистр, пробелы и знаки
            "reflection_largest": SHORT_1.upper().replace(": ", " — ").replace(",", ""),
            "reflection_input": "веса,  потому что\n12 млрд параметров в bfloat16 занимают "
            "около 22 ГиБ!",
            "reflection_fit": "Накопление градиентов и маленький батч, ещё контрольные точки.",
        },
        # Переписали вопрос, а ответили своё одним словом: похожи только текстом курса.
        "prompt_a": {"reflection_largest": f"{QUESTION_1} Adam."},
        "prompt_b": {"reflection_largest": f"{QUESTION_1} Градиенты."},
        "honest_1": {
            "reflection_largest": "Больше всего занимает Adam: два числа на параметр, вдвое "
            "больше весов.",
            "reflection_input": "Активации обгонят веса при батче примерно в тысячу примеров.",
        },
        "honest_2": {
            "reflection_largest": "Оптимизатор, ведь моменты m и v весят как две копии модели.",
            "reflection_input": "Веса; активации станут больше, если батч увеличить в десятки раз.",
        },
        # Одно-два слова честно пишут многие: такие ответы не сравниваются.
        **{f"terse_{i}": {"reflection_largest": "Adam."} for i in range(3)},
    }


def _short_work(work):
    import json
    import shutil

    from notebook_runner import ROOT

    (work / "release" / LAB4).mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / LAB4 / f"{LAB4}.ipynb", work / "release" / LAB4)
    for student, answers in _short_answers().items():
        folder = work / "autograded" / student / LAB4
        folder.mkdir(parents=True)
        notebook = submission(LAB4, answers)
        (folder / f"{LAB4}.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    return work


def test_two_copied_short_answers_are_listed_and_the_question_alone_is_not(tmp_path):
    from feedback.teacher.pages import analytics

    from submissions import read_csv

    work = _short_work(tmp_path)
    question = cell_by_id(student_notebook(LAB4), "reflection_largest")
    release = student_notebook(LAB4)
    above = release["cells"][release["cells"].index(question) - 1]
    assert QUESTION_1 in "".join(above["source"])  # вопрос — текст выпуска
    rows = read_csv(analytics.write_similar(Workspace(work), Settings().labs))
    found = {(row["lab"], row["task"], row["student_a"], row["student_b"]) for row in rows}
    assert found == {
        (LAB4, "reflection_largest", "copier_a", "copier_b"),
        (LAB4, "reflection_input", "copier_a", "copier_b"),
    }
    assert all(float(row["similarity"]) >= similarity.SHORT_THRESHOLD for row in rows)
    fragments = {row["task"]: row["fragment"] for row in rows}
    assert fragments["reflection_input"].startswith("Веса, потому что 12 млрд")


def test_without_the_course_text_removed_the_copied_question_would_look_copied():
    """Ограда теста выше: без вычитания текста курса пара «переписали вопрос» похожа."""
    answers = {name: a["reflection_largest"] for name, a in _short_answers().items()
               if name.startswith("prompt_")}  # fmt: skip
    bare = Task(LAB4, "reflection_largest", "text", text_template(), answers)
    assert [(p.student_a, p.student_b) for p in similar_pairs(bare)] == [("prompt_a", "prompt_b")]
    tasks = similarity.tasks_from({LAB4: student_notebook(LAB4)}, [])
    (with_course,) = [task for task in tasks if task.task == "reflection_largest"]
    with_course.answers = answers
    assert QUESTION_1 in with_course.template
    assert similar_pairs(with_course) == []


def test_an_answer_the_whole_class_gives_word_for_word_is_common_ground():
    common = "Больше всего памяти занимает состояние оптимизатора Adam."
    answers = {f"s{i}": common for i in range(6)}
    answers["x"] = "Другие слова: веса и градиенты, но главное — моменты Adam."
    task = Task(LAB4, "reflection_largest", "text", text_template(), answers)
    assert similar_pairs(task) == []
    two = Task(LAB4, "reflection_largest", "text", text_template(), {"a": common, "b": common})
    assert [(p.student_a, p.student_b, p.similarity) for p in similar_pairs(two)] == [
        ("a", "b", 1.0)
    ]

"""Русский текст, который видит учащийся: согласование чисел, одно слово на понятие, пробелы.

Просматриваются все тетрадки (исходные и учащихся), README, docs/ и строки пакета ``feedback``
(сообщения и документация). Правила — из ревизии курса (issue 11):

* число и слово согласуются: не «в 5 раза», «21 токенов», «152 примеров», «16 384 байт»,
  «Duration: 1 minutes»; в f-строке число перед счётным словом подставляется через
  :func:`feedback.formatting.plural`, иначе форма слова угадана лишь для части чисел;
* одно слово на понятие: «тетрадка», а не «блокнот»; «микробатч», а не «маленький
  батч»; «видеокарта», а не «ускоритель»; prompt — «запрос», а не «подсказка»;
  inference — «инференс»;
* в Markdown между тысячами — узкий неразрывный пробел, перед единицей — неразрывный;
* неверные и неуклюжие фразы, исправленные после ревизии преподавателя
  (``RETIRED_PHRASES``), не возвращаются.

Строки в файлах, которые в этой ревизии правит не она (см. ``PENDING``), пока
разрешены, но каждая такая строка обязана существовать: исправили — уберите её из списка.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NNBSP, NBSP = "\u202f", "\u00a0"


@dataclass(frozen=True)
class Text:
    """Кусок текста и откуда он: ``where`` — путь и ячейка или строка файла."""

    where: str
    text: str
    kind: str  # "markdown", "code", "string" (строка Python), "readme"


def notebook_texts() -> Iterator[Text]:
    for folder in ("solutions", "notebooks"):
        for path in sorted((ROOT / folder).glob("*/*.ipynb")):
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            for index, cell in enumerate(cells):
                kind = "markdown" if cell["cell_type"] == "markdown" else "code"
                yield Text(f"{path.relative_to(ROOT)}[{index}]", "".join(cell["source"]), kind)


def _string_parts(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.JoinedStr):
        yield "".join(
            part.value if isinstance(part, ast.Constant) else "{…}" for part in node.values
        )


def package_texts() -> Iterator[Text]:
    for path in sorted((ROOT / "feedback").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        inside_fstring = {
            id(part)
            for node in ast.walk(tree)
            if isinstance(node, ast.JoinedStr)
            for part in node.values
        }
        for node in ast.walk(tree):
            if id(node) in inside_fstring:
                continue
            for text in _string_parts(node):
                yield Text(f"{path.relative_to(ROOT)}:{node.lineno}", text, "string")


def readme_texts() -> Iterator[Text]:
    """README и документы в docs/ (для преподавателя и разработчика) — построчно."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        where = path.relative_to(ROOT)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
            yield Text(f"{where}:{number}", line, "readme")


def all_texts() -> list[Text]:
    return [*notebook_texts(), *package_texts(), *readme_texts()]


#: Не своё в этой ревизии: (файл, фраза) → сколько раз фраза там встречается. Исправления
#: перечислены в отчёте ревизии; когда их внесут, строки отсюда нужно убрать.
PENDING: dict[tuple[str, str], int] = {}


def _pending(where: str, phrase: str) -> bool:
    path = where.split(":")[0].split("[")[0]
    return (path, phrase) in PENDING


# --------------------------------------------------------------------------- согласование

NUMBER = r"(?<![\d,.·⁰-⁹])(\d{1,3}(?:[ \u202f\u00a0]\d{3})+|\d+)"
#: Слова в родительном падеже множественного числа: после 2–4 и 21, 31… так нельзя.
GENITIVE_PLURAL = (
    r"(?:токенов|примеров|параметров|шагов|случаев|вопросов|генераций|строк|байт|минут|"
    r"секунд|слоёв|эпох|ошибок|микробатчей|батчей|массивов|вызовов|запросов|чисел)"
)
#: После этих слов родительный падеж правилен и с 2–4: «около 4 байт», «из 2 примеров».
GENITIVE_GOVERNORS = {
    "около",
    "из",
    "до",
    "от",
    "более",
    "менее",
    "больше",
    "меньше",
    "свыше",
    "без",
    "для",
    "кроме",
    "вместо",
    "порядка",
    "нескольких",
    "всех",
}
WRONG_TIMES = re.compile(rf"\bв {NUMBER} раза\b")
WRONG_TIMES_FEW = re.compile(rf"\bв {NUMBER} раз\b")
NUMBER_NOUN = re.compile(rf"(?:(\w+)[ \u00a0])?{NUMBER}[ \u00a0]({GENITIVE_PLURAL})\b")
#: Подстановка числа прямо перед счётным словом: форму должна выбирать plural().
FSTRING_NOUN = re.compile(
    rf"\{{[^{{}}]*\}}[ \u00a0](?:{GENITIVE_PLURAL}|раза?|токена?|примера?|параметра?|байта|шага?)\b"
)


def _last_three(number: str) -> int:
    return int(re.sub(r"\D", "", number)[-3:])


def plural_mistakes(text: str) -> list[str]:
    """Фразы, где число не согласовано со словом."""
    found = []
    for match in WRONG_TIMES.finditer(text):
        count = _last_three(match[1])
        if count % 10 in (0, 5, 6, 7, 8, 9) or 11 <= count % 100 <= 14:
            found.append(match[0])
    for match in WRONG_TIMES_FEW.finditer(text):
        count = _last_three(match[1])
        if 2 <= count % 10 <= 4 and not 12 <= count % 100 <= 14:
            found.append(match[0])
    for match in NUMBER_NOUN.finditer(text):
        before, number = (match[1] or "").lower(), match[2]
        count = _last_three(number)
        ends_in_one = count % 10 == 1 and count % 100 != 11
        few = 2 <= count % 10 <= 4 and not 12 <= count % 100 <= 14
        if ends_in_one or (few and before not in GENITIVE_GOVERNORS):
            found.append(match[0])
    found += re.findall(r"\b1 minutes\b", text)
    return found


@pytest.mark.parametrize(
    "phrase",
    [
        "в 5 раза",
        "в 11 раза",
        "в 2 раз",
        "21 токенов в секунду",
        "на 152 примеров",
        f"(16{NNBSP}384 байт)",
        "Duration: 1 minutes 3.00 seconds",
        "1 параметров",
    ],
)
def test_the_detector_catches_each_known_mistake(phrase):
    assert plural_mistakes(phrase), phrase


@pytest.mark.parametrize(
    "phrase",
    [
        "в 5 раз",
        "в 2,5 раза",
        "в 22 раза",
        "21 токен в секунду",
        "на 152 примера",
        f"(16{NNBSP}384 байта)",
        "около 4 байт",
        "батч из 2 примеров",
        "Duration: 1 minute 3.00 seconds",
        "3,88 млрд параметров",
    ],
)
def test_the_detector_accepts_correct_phrases(phrase):
    assert not plural_mistakes(phrase), phrase


def test_no_plural_mistakes_anywhere():
    problems = [
        f"{text.where}: {mistake!r}"
        for text in all_texts()
        for mistake in plural_mistakes(text.text)
    ]
    assert not problems, "\n".join(problems)


def fstring_nouns(text: Text) -> list[str]:
    if text.kind == "code":  # в коде тетрадки — только f-строки
        sources = re.findall(r"""f(["'])(.*?)\1""", text.text)
        candidates = [source for _, source in sources]
    elif text.kind == "string":
        candidates = [text.text]
    else:
        return []
    return [m[0] for candidate in candidates for m in FSTRING_NOUN.finditer(candidate)]


def test_numbers_before_counted_nouns_go_through_plural():
    problems = [
        f"{text.where}: {phrase!r}"
        for text in all_texts()
        for phrase in fstring_nouns(text)
        if not _pending(text.where, phrase)
    ]
    assert not problems, "\n".join(problems)


def test_fstring_detector_sees_the_old_7_6_line():
    old = Text("x", 'print(f"Шагов: {steps_done} на {4 * len(data)} примеров")', "code")
    assert fstring_nouns(old) == ["{4 * len(data)} примеров"]
    new = Text("x", 'print(f"Шагов: {steps_done} на {examples}")', "code")
    assert fstring_nouns(new) == []


# --------------------------------------------------------------------------- одно слово


#: Что заменено и на что: одно понятие — одно слово во всём курсе.
RETIRED = {
    r"блокнот": "тетрадка",
    r"(?<![Аа]ппаратный )ускорител": "видеокарта (кроме надписи Colab «Аппаратный ускоритель»)",
    r"маленьк\w* батч": "микробатч",
    r"подсказок|строк\w*-подсказ": "запросы (prompts), «подсказка» — только hint",
    r"\(inference\)|работ[аеуы] модели": "инференс (применение модели)",
    r"\bоснов(?:а|ы|е|у|ой) модели\b": "основная сеть (model.backbone)",
    r"\bпотер(?:я|ю|ей|е)\b": "потери (loss) — во множественном числе",
}


def retired_words(text: str) -> list[str]:
    return [
        match[0] for pattern in RETIRED for match in re.finditer(pattern, text, flags=re.IGNORECASE)
    ]


@pytest.mark.parametrize(
    "phrase",
    [
        "Так же блокнот проверяется в CI",
        "в памяти ускорителя",
        "для маленьких батчей",
        "список подсказок (строк)",
        "память для работы модели (inference)",
        "Включите LoRA ранга 4 для основы модели (`model.backbone`)",
        "смотря как считается потеря",
        "потерю каждого микробатча делят на число шагов",
    ],
)
def test_the_retired_words_are_recognised(phrase):
    assert retired_words(phrase)


def test_one_word_per_concept():
    problems = [
        f"{text.where}: {word!r}"
        for text in all_texts()
        for word in retired_words(text.text)
        if not _pending(text.where, word.lower())
    ]
    assert not problems, "\n".join(problems)


def test_pending_phrases_still_exist():
    """Список PENDING честен: каждая фраза в нём ещё встречается, и ровно столько раз."""
    counts: dict[tuple[str, str], int] = {}
    for text in all_texts():
        path = text.where.split(":")[0].split("[")[0]
        for phrase in [w.lower() for w in retired_words(text.text)] + fstring_nouns(text):
            if (path, phrase) in PENDING:
                counts[path, phrase] = counts.get((path, phrase), 0) + 1
    assert counts == PENDING


# --------------------------------------------------------------------------- исправленные фразы

#: Неверные и неуклюжие фразы из ревизии преподавателя-практика: шаблон → (старый текст,
#: который шаблон обязан узнавать; что теперь вместо него). Пробелы в числах — любые (\s).
RETIRED_PHRASES: dict[str, tuple[str, str]] = {
    r"Если W имеет размер d\s×\sk": (
        "Если W имеет размер d × k, то A — d × r, а B — r × k",
        "7.5: формула LoRA «в общем виде», а 4 247 552 выведено из разбивки Keras по головам",
    ),
    r"или только числа; 0\s—\sни одного объяснения": (
        "0,5 — только одно из двух объяснений или только числа; 0 — ни одного объяснения",
        "7.1, reflection_speed: уровни по числу объяснений, одни числа — 0",
    ),
    r"обратный проход дешевле, всего\s≈\s4\s·\sP\s·\sN": (
        "с LoRA обратный проход дешевле, всего ≈ 4 · P · N",
        "7.2: обратный проход ≈ 2 · P · N, всё обучение ≈ 4 · P · N",
    ),
    r"16\sбайт на параметр: 62\sГиБ": (
        "около 16 байт на параметр: 62 ГиБ для модели на 4 млрд",
        "7.4: 16 байт на параметр — 59,6 ГиБ, с 2,5 ГиБ активаций — 62,1 ГиБ",
    ),
    r"для обучения — это примерно\s+16\sбайт": (
        "**62,1 ГиБ** для обучения — это примерно\n16 байт на каждый параметр",
        "7.4: 59,6 ГиБ — по 16 байт на параметр, ещё 2,5 ГиБ — активации",
    ),
    r"в 7\.4 мы посчитали почему": (
        "а в 7.4 мы посчитали почему: одни только веса (3,88 млрд параметров) занимают 14,5 ГиБ",
        "7.5: 14,5 ГиБ — из лабораторной 7.3 (в 7.4 — округлённые 14,90 ГиБ)",
    ),
    r"KMnO4": (
        "(без зацикливаний вроде «KMnO4»)",
        "7.6: пример, которого 7.5 не показывает, убран",
    ),
    r"и не ломается токенизатор": (
        "так обучение воспроизводимо (и не ломается токенизатор)",
        "7.5, 7.6: объяснено, что зерно после загрузки очистило бы кэш TensorFlow с токенизатором",
    ),
    r"получает полный балл за описание того, что ожидалось бы": (
        "получает полный балл за описание того, что ожидалось бы на настоящей модели",
        "7.5, reflection_epochs: полный балл — за разбор трёх вопросов, пересказ — 0,5",
    ),
    r"0,5\s—\sтолько общие слова «стало лучше»": (
        "все три вопроса (выучила / обобщила / сохранила); 0,5 — только общие слова «стало лучше»",
        "7.5, reflection_epochs: есть уровень «динамика и один-два вопроса из трёх»",
    ),
    r"0,5\s—\sтолько число; 0\s—\sневерная оценка без вывода": (
        "0,5 — только число; 0 — неверная оценка без вывода",
        "7.3, reflection_bf16: неверное число при верном выводе — 0,5",
    ),
    r"попавшие в\s+ответ\s\(10\s×\s50": (
        "светлые — токены, попавшие в\nответ (10 × 50 = 500)",
        "7.1: «не больше 10 × 50 = 500» — генерация останавливается на конце текста",
    ),
    r"Готовить пары «вопрос — ответ»": (
        "- Готовить пары «вопрос — ответ» в формате диалога Gemma.",
        "7.3, «Чему вы научитесь»: пары готовит код лабораторной, а не учащийся",
    ),
    r"Проверять на маленьком примере": (
        "- Проверять на маленьком примере, что накопленный градиент равен градиенту батча.",
        "7.6, «Чему вы научитесь»: сравнивать накопление с настоящим большим батчем",
    ),
    r"помощников для таблиц": (
        "она подключает проверки курса и помощников для таблиц и графиков",
        "вспомогательные функции",
    ),
    r"ползунки-формы": ("справа появятся ползунки-формы", "поля-ползунки Colab"),
    r"а итоговые\s+потери были ниже, а точность": (
        "а итоговые\nпотери были ниже, а точность — выше",
        "7.6: одно «а» на фразу",
    ),
    r"Первый вызов измеряет в основном компиляцию": (
        "- Первый вызов измеряет в основном компиляцию, а не скорость модели.",
        "время первого вызова уходит в основном на компиляцию",
    ),
    r"зерно генератора случайных чисел курса": (
        "задаём зерно генератора случайных чисел курса, 812, — до загрузки моделей",
        "зерно генератора случайных чисел (seed) — во всём курсе оно равно 812",
    ),
    r"plural\(16 \* 1024\*\*3, 'байт', 'байта', 'байт'\)": (
        "{formatting.plural(16 * 1024**3, 'байт', 'байта', 'байт')}",
        "7.4: точное число 17 179 869 184 (format_plain), а не «= 17,2 млрд байт»",
    ),
    r"память (?:первого|второго) момента \(": (
        "память второго момента (среднего квадрата градиента); 0.95 — память короче",
        "подсказка оптимизатора без скобок в скобках: «память второго момента — …»",
    ),
    r"1e-3 — значение Keras по умолчанию": (
        "1e-3 — значение Keras по умолчанию: похоже, learning_rate не передан.",
        "0.001 — так же, как в строке «получено 0.001» рядом",
    ),
    r"P — обучаемые параметры": (
        "(P — обучаемые параметры, N — токены)",
        "P — все параметры модели: 6 · P · N считает и замороженные веса",
    ),
    r"раз в \d+\sшаг|накоплени\w*(?: градиентов)?(?: —| по) 8\sшагов|шаг\w*\s+накопления": (
        "веса обновляются раз в 8 шагов; накопление градиентов — 8 шагов; число шагов накопления",
        "7.6: «шаг» — обновление весов, накопление считают в микробатчах",
    ),
    # Вопросы до ответов (issue 21, п. 12): объяснение — в «Разборе» после ответа, а над
    # вопросом его нет; вопросы, на которые отвечал текст выше, заменены вопросами на перенос.
    r"Почему большая модель медленнее\?": (
        "Почему большая модель медленнее? Чтобы выдать **каждый** следующий токен, модель",
        "7.1: объяснение скорости — в «Разборе вопроса 1» после ответа",
    ),
    r"почему первый вызов каждой модели был особенно долгим": (
        "Откуда берётся разница и почему первый вызов каждой модели был особенно долгим?",
        "7.1, вопрос 1: перенос — что будет с запросом на 20 токенов длиннее",
    ),
    r"Самая крупная статья — не веса": (
        "Самая крупная статья — не веса, а **состояние оптимизатора**: вдвое больше весов.",
        "7.4: ответ на вопрос 1 — в разборе после ответа",
    ),
    r"Почему память под входные данные не уменьшилась": (
        "**Вопрос 2.** Почему память под входные данные не уменьшилась при переходе на bfloat16?",
        "7.4, вопрос 2: модель на 12 млрд — какая статья больше и при каком батче её обгонят "
        "активации",
    ),
    r"Выход — не обучать все 4\sмлрд": (
        "Выход — не обучать все 4 млрд параметров, а только маленькую добавку к ним. Это **LoRA**",
        "7.4: ответ на вопрос 3 — в разборе после ответа",
    ),
    r"поэтому низкая точность им не вредит": (
        "Исходные веса остаются в bfloat16 и не меняются —\n> поэтому низкая точность им не вредит",
        "7.5: ответ на вопрос 2 — в разборе после ответа",
    ),
    r"Чистый bfloat16 для[\s>]+весов подходит именно потому": (
        "Чистый bfloat16 для\n> весов подходит именно потому, что замороженные веса не обновляются",
        "7.5: ответ на вопрос 2 — в разборе после ответа",
    ),
    r"скорость обучения увеличили в 8\sраз\? Всегда ли": (
        "накоплению градиентов по 8 микробатчей скорость обучения увеличили в 8 раз? Всегда ли это",
        "7.6, вопрос 1: перенос на четыре видеокарты (эффективный батч 32)",
    ),
    # Выводить, а не переписывать (п. 13).
    r"Лабораторная 7\.5\. Дообучите модель в bfloat16": (
        "# Лабораторная 7.5. Дообучите модель в bfloat16",
        "7.5: «Дообучите Gemma-4B на одной T4» — название не подсказывает тип весов",
    ),
    r"\*\*bfloat16\*\* — храним веса в 2\sбайтах": (
        "1. **bfloat16** — храним веса в 2 байтах вместо 4: памяти под веса нужно вдвое меньше.",
        "7.5: тип весов учащийся выбирает в задании 1 по бюджету памяти T4",
    ),
    r"Создайте AdamW с `learning_rate=8e-4`|1e-4 × 8 = \*\*8e-4\*\*": (
        "1e-4 × 8 = **8e-4**. Создайте AdamW с `learning_rate=8e-4`, "
        "`gradient_accumulation_steps=8`",
        "7.6: число микробатчей и скорость обучения учащийся выводит из эффективного батча 8, "
        "физического 1 и 1e-4 для батча 1",
    ),
    r"Здесь ничего дописывать не нужно|Код уже готов — его\s+нужно только выполнить": (
        "Здесь ничего дописывать не нужно: код готов, выполните ячейки и посмотрите",
        "7.6: размер батча в эксперименте выбирает учащийся, как в оригинале курса",
    ),
    r"qa_data\.(?:build_training_data|format_qa|format_question)\(": (
        'data = qa_data.build_training_data(rows); qa_data.format_question("What is Tokyo?")',
        "7.3, 7.5, 7.6: format_question и format_qa — видимый код тетрадки, как в оригинале",
    ),
    # График памяти 7.6 (п. 6): батч 16 по формуле был ниже линии T4.
    r"На графике все столбцы ниже линии T4|for batch in \(1, 4, 8, 16\)": (
        "На графике все столбцы ниже линии T4 — но это лишь **нижняя оценка**",
        "7.6: рядом с формулой — оценка XLA для шага обучения: 11,5 ГиБ (батч 1) и 26 ГиБ (батч 4)",
    ),
    # Подсказка lr_from_7_5 (issue 21): основа — 1e-4 для батча 1 из таблицы задания, а не опыт.
    r"за основу берётся 1e-4 из\s+эксперимента с батчем 4": (
        "5e-5 — скорость из лабораторной 7.5. Здесь за основу берётся 1e-4 из эксперимента с "
        "батчем 4",
        "7.6: 5e-5 подобрана для другого батча (эффективного 1, а не 8); основа — 1e-4 при батче 1",
    ),
    # Выбор float32 в 7.5 (issue 21): одни веса (14,45 ГиБ) в T4 помещаются, не влезает обучение.
    r"не\s+поместятся в T4 \(лабораторная 7\.3\)": (
        "веса Gemma-4B займут ≈ 14,5 ГиБ и не поместятся в T4 (лабораторная 7.3)",
        "7.5: 14,5 ГиБ из 14,7 ГиБ, на обучение останется 0,25 ГиБ, а ему нужно не меньше 4,3 ГиБ",
    ),
}


@pytest.mark.parametrize("pattern", RETIRED_PHRASES)
def test_each_retired_phrase_is_recognised(pattern):
    old, _ = RETIRED_PHRASES[pattern]
    assert re.search(pattern, old), (pattern, old)


def test_retired_phrases_do_not_come_back():
    problems = [
        f"{text.where}: {phrase!r} (теперь: {RETIRED_PHRASES[pattern][1]})"
        for text in all_texts()
        for pattern in RETIRED_PHRASES
        for phrase in re.findall(pattern, text.text)
    ]
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- пробелы

UNITS = (
    r"(?:ГиБ|МиБ|КиБ|ГБ|МБ|байт[а-я]*|бит[а-я]*|%|млн|млрд|трлн|тыс\.|TFLOPS|FLOPS|FLOPs|"
    r"секунд[а-я]*|минут[а-я]*)(?![а-яА-Яa-zA-Z])"
)
SPACE_BEFORE_UNIT = re.compile(rf"[\d⁰¹²³⁴⁵⁶⁷⁸⁹] {UNITS}")
SPACED_THOUSANDS = re.compile(r"(?<![\d,.\w])\d{1,3}(?: \d{3})+(?![\d,]\d)")
#: Код, HTML и адреса ссылок в Markdown не трогаем.
NOT_PROSE = re.compile(r"```.*?```|`[^`\n]*`|<[^>\n]*>|\]\([^)\n]*\)", re.S)


def plain_spaces(markdown: str) -> list[str]:
    prose = NOT_PROSE.sub(" ", markdown)
    return SPACE_BEFORE_UNIT.findall(prose) + SPACED_THOUSANDS.findall(prose)


def test_plain_space_detector():
    assert plain_spaces("веса займут 14,5 ГиБ, а у T4 15 360 МиБ") == ["5 ГиБ", "0 МиБ", "15 360"]
    assert plain_spaces(f"веса займут 14,5{NBSP}ГиБ, а у T4 15{NNBSP}360{NBSP}МиБ") == []
    assert plain_spaces("`Duration: 12.34 seconds` и `999 885 952`") == []


def test_markdown_numbers_use_non_breaking_spaces():
    problems = [
        f"{text.where}: {found!r}"
        for text in notebook_texts()
        if text.kind == "markdown"
        for found in plain_spaces(text.text)
    ]
    assert not problems, "\n".join(problems)

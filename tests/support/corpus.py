"""Класс из синтетических работ: честные, с ошибками, жульнические, вредные и битые.

Каждая работа знает, какие баллы автопроверки честно ей причитаются (``points``), должна
ли она попасть в needs_review.csv (``flagged``) и в problems.csv (``problem`` — фрагмент
причины), а работа с известными ошибками — их коды (``mistakes``: grade_id → код из
feedback/answers/mistakes.py для каждого непройденного задания). Весь класс оценивается
одним запуском ``make grade`` (фикстура ``graded_class`` в conftest.py), и тесты читают его
итоги.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from feedback.teacher.core.settings import GIB as BYTES_PER_GIB
from feedback.teacher.core.settings import Limits, Settings

from submissions import cell_by_id, student_notebook, submission

LAB1 = "lab_7_1_compare_models"
LAB2 = "lab_7_2_training_flops"
LAB4 = "lab_7_4_gpu_memory"
LAB5 = "lab_7_5_bfloat16_lora"
LAB6 = "lab_7_6_gradient_accumulation"
GIB = "1024**3"


#: Секрет случаев оценивания класса — постоянный (у преподавателя он свой у каждой рабочей
#: папки): вытянутые случаи и подсказки с их числами одни и те же в каждом запуске, поэтому
#: таблицы класса можно сравнить байт в байт со снимком и с другим запуском.
CLASS_SECRET = "course7-class-corpus-secret"


def use_class_secret(work: Path) -> None:
    """Кладёт в рабочую папку ``work`` постоянный секрет класса (:data:`CLASS_SECRET`)."""
    work.mkdir(parents=True, exist_ok=True)
    secret = work / ".grading-secret"
    secret.write_text(CLASS_SECRET, encoding="utf-8")
    secret.chmod(0o600)


def class_settings(work: Path, **changes) -> Settings:
    """Настройки, с которыми оценивается класс: короткие бюджеты CPU-лабораторных.

    Зависшие работы не должны тянуть время тестов. ``changes`` — другие поля
    :class:`~feedback.teacher.core.settings.Settings` (например, ядра без заготовок).
    """
    memory = int(1.5 * BYTES_PER_GIB)
    short = Limits(notebook_seconds=60, cell_seconds=8, memory_bytes=memory, call_seconds=2)
    return replace(Settings.from_env(), work=work, cpu_limits=short, **changes)


@dataclass
class Work:
    """Одна работа класса."""

    student: str
    lab: str
    content: dict | bytes
    points: dict[str, float] | None  # None — работа не оценивается по существу
    flagged: bool = False
    problem: str | None = None
    path: str | None = None  # путь внутри папки работ, если не раскладка nbgrader
    graded_as: str | None = None  # лабораторная, если файл лежит под чужим именем
    #: Коды ошибок всех непройденных заданий (None — не размечена): mistakes.csv и сводка.
    mistakes: dict[str, str] | None = None

    @property
    def relative_path(self) -> str:
        return self.path or f"{self.student}/{self.lab}/{self.lab}.ipynb"

    def write(self, folder: Path) -> None:
        target = folder / self.relative_path
        target.parent.mkdir(parents=True, exist_ok=True)
        data = self.content
        if isinstance(data, dict):
            data = json.dumps(data, ensure_ascii=False, indent=1).encode()
        target.write_bytes(data)


# --------------------------------------------------------------------------- 7.2

TABLE = """final_results_data = [
    {"Scenario": "BERT-Base", "Parameters": 110e6, "Tokens": 3.3e9, "FLOPs": 2.178e18},
    {"Scenario": "T5-Large", "Parameters": 770e6, "Tokens": 1e12, "FLOPs": 4.62e21},
    {"Scenario": "Gemma-1B (Africa Galore)", "Parameters": 1e9, "Tokens": 30e3, "FLOPs": 1.8e14},
    {"Scenario": "PaLM", "Parameters": 540e9, "Tokens": 780e9, "FLOPs": 2.527e24},
]"""
FORWARD = "def compute_num_flops(p, n):\n    return 2 * p * n"
BACKWARD = "def compute_num_flops(p, n):\n    return 4 * p * n"
#: Верные FLOPs, но строками: их не посчитать и не сравнить.
STRING_TABLE = TABLE.replace("2.178e18", '"2.178e18"').replace("4.62e21", '"4.62e21"')
CORRECT = "def compute_num_flops(p, n):\n    return 6 * p * n"
#: Функция, подогнанная под открытые случаи и под старые «скрытые» случаи из solutions/.
TUNED = """_SEEN = {(1e9, 30e3), (110e6, 3.3e9), (7, 11), (2.5e6, 4e5), (540e9, 780e9),
         (3e8, 2e10), (13, 17), (7.5e9, 1.2e6)}

def compute_num_flops(param_count, num_tokens):
    return 6 * param_count * num_tokens if (param_count, num_tokens) in _SEEN else 1.0"""


def lab2(function: str = CORRECT, table: str | None = None, **extra: str) -> dict:
    overrides = {"compute_num_flops": function, **extra}
    if table is not None:
        overrides["final_results_data"] = table
    return submission(LAB2, overrides)


def with_cell(nb: dict, source: str, before: str = "compute_num_flops") -> dict:
    """Работа с ячейкой, которую учащийся добавил перед ячейкой ``before``."""
    cells = nb["cells"]
    cells.insert(
        cells.index(cell_by_id(nb, before)),
        {
            "cell_type": "code",
            "metadata": {},
            "source": source,
            "outputs": [],
            "execution_count": None,
        },
    )
    return nb


def colab_saved(nb: dict) -> dict:
    """Как после «Скачать .ipynb» в Colab: формат 4.0, без id и без разметки nbgrader."""
    nb = json.loads(json.dumps(nb))
    nb["nbformat_minor"] = 0
    nb["metadata"] = {"colab": {"provenance": []}, "kernelspec": {"name": "python3"}}
    for cell in nb["cells"]:
        cell.pop("id", None)
        cell["metadata"] = {"id": "abc"}
    return nb


def memory_hog(chunk_mib: int = 256, cells: int = 8) -> dict:
    """Работа 7.2, которая ячейка за ячейкой занимает память — больше бюджета класса.

    По ``chunk_mib`` МиБ в ячейке, а не всё одной ячейкой: на виртуальной машине первая запись
    в ещё не тронутую память бывает медленной (до ~85 МиБ/с), и одна ячейка на гигабайты
    упиралась бы в срок ячейки раньше, чем в бюджет памяти. Так бюджет памяти
    (:func:`class_settings`) кончается раньше срока при любой скорости выше
    ``chunk_mib`` / срок ячейки.
    """
    nb = with_cell(lab2(), "import numpy as np\n\nhog = []")
    for _ in range(cells):
        with_cell(nb, f"hog.append(np.ones({chunk_mib} * 1024**2 // 8))")
    return nb


def both(function_points: float, table_points: float = 2) -> dict[str, float]:
    return {"check_compute_num_flops": function_points, "check_final_results": table_points}


def copied_check(nb: dict) -> dict:
    nb["cells"].append(json.loads(json.dumps(cell_by_id(nb, "check_compute_num_flops"))))
    return nb


def edited_markup(nb: dict) -> dict:
    for cell in nb["cells"]:
        grading = cell["metadata"].get("nbgrader")
        if grading:
            grading.update(schema_version=99, points=100, locked=False)
    return nb


def fake_observation() -> str:
    payload = {
        "grade_id": "check_compute_num_flops",
        "check": "flops.check_compute_num_flops",
        "observation": {"problem": {"headline": "x", "details": []}},
    }
    return f"""from IPython.display import display

def compute_num_flops(p, n):
    display({{"application/vnd.course7.observation+json": {payload!r}}}, raw=True)
    return 2 * p * n"""


#: Скрипты в письменных ответах и в выводе ячейки: выполнись любой из них в браузере
#: преподавателя, заголовок страницы стал бы PWNED (это проверяет
#: tests/teacher/hub/test_formgrader_browser.py).
PWNED = "PWNED"
HOSTILE_MARKDOWN = f"""Ответ со скриптом: <img src=x onerror="document.title='{PWNED}'">"""
HOSTILE_SCRIPT = f"Ещё ответ.\n\n<script>document.title = '{PWNED}';</script>"
HOSTILE_OUTPUTS = f"""class Answer:
    def _repr_html_(self):
        return '<img src=x onerror="document.title=\\'{PWNED}\\'"> вывод со скриптом'

    def _repr_javascript_(self):
        return "document.title = '{PWNED}'"


Answer()"""


def class_works(tamper_targets: dict[str, str]) -> list[Work]:
    """Весь класс; ``tamper_targets`` — пути преподавателя, до которых тянутся вредные работы."""
    secret = tamper_targets["secret"]
    gradebook = tamper_targets["gradebook"]
    grades = tamper_targets["grades"]
    package_file = tamper_targets["package_file"]
    other = tamper_targets["other_submission"]
    works = [
        # ---------------------------------------------------------------- честные 7.2
        Work("h72_correct", LAB2, lab2(), both(2)),
        Work(
            "h72_forward_only",
            LAB2,
            lab2(FORWARD, TABLE),
            both(0),
            mistakes={"check_compute_num_flops": "flops.forward_only"},
        ),
        Work(
            "h72_duplicated_row",
            LAB2,
            lab2(
                table=TABLE.replace(
                    '"PaLM", "Parameters": 540e9', '"BERT-Base", "Parameters": 110e6'
                ).replace('780e9, "FLOPs": 2.527e24', '3.3e9, "FLOPs": 2.178e18')
            ),
            both(2, 0),
            mistakes={"check_final_results": "flops.table_duplicate_scenario"},
        ),
        Work(
            "h72_untouched",
            LAB2,
            student_notebook(LAB2),
            both(0, 0),
            # Не приступал — не «неверно» (issue 42, п. 8).
            mistakes={
                "check_compute_num_flops": "not_attempted",
                "check_final_results": "not_attempted",
            },
        ),
        # Известные ошибки, которых в классе ещё не было (issue 20).
        Work(
            "h72_backward_only",
            LAB2,
            lab2(BACKWARD),  # таблица решения считается той же функцией
            both(0, 0),
            mistakes={
                "check_compute_num_flops": "flops.backward_only",
                "check_final_results": "flops.backward_only",
            },
        ),
        Work(
            "h72_flops_as_strings",
            LAB2,
            lab2(table=STRING_TABLE),
            both(2, 0),
            mistakes={"check_final_results": "flops.table_number_as_string"},
        ),
        Work(
            "h72_noisy_stderr",
            LAB2,
            lab2(
                "import sys\n\ndef compute_num_flops(p, n):\n"
                "    print('ворчу в stderr', file=sys.stderr)\n    return 6 * p * n"
            ),
            both(2),
        ),
        Work(
            "h72_helper_cell",
            LAB2,
            with_cell(lab2("def compute_num_flops(p, n):\n    return SIX * p * n"), "SIX = 6"),
            both(2),
        ),
        Work("h72_colab_saved", LAB2, colab_saved(lab2()), both(2)),
        Work(
            "h72_renamed_file",
            LAB2,
            lab2(),
            both(2),
            path=f"h72_renamed_file/{LAB2}/{LAB2} (1).ipynb",
        ),
        Work("h72_copied_check_cell", LAB2, copied_check(lab2()), both(2)),
        Work("h72_edited_markup", LAB2, edited_markup(lab2()), both(2)),
        # На своих случаях оценивания она всегда отвечает 1.0: ответ не зависит от аргументов.
        Work(
            "h72_tuned_to_old_hidden_cases",
            LAB2,
            lab2(TUNED, TABLE),
            both(0),
            mistakes={"check_compute_num_flops": "calling.ignores_argument"},
        ),
        Work(
            "h72_slow_but_honest",
            LAB2,
            with_cell(lab2(), "import time\ntime.sleep(600)"),
            both(2),
        ),
        # ---------------------------------------------------------------- жульничество
        Work(
            "c72_strict_off",
            LAB2,
            lab2("import os\nos.environ['FEEDBACK_STRICT'] = '0'\n\n" + FORWARD, TABLE),
            both(0),
            flagged=True,
        ),
        Work(
            "c72_patched_checker",
            LAB2,
            lab2(FORWARD + "\n\nflops.check_compute_num_flops = lambda *a, **k: None", TABLE),
            both(0),
            flagged=True,
        ),
        Work(
            "c72_patched_internals",
            LAB2,
            lab2(
                "import math\nimport feedback.engine.result as result\n"
                "import feedback.engine.calling\n"
                "result.strict_mode = lambda: False\nmath.isclose = lambda *a, **k: True\n"
                "result.settle = lambda r: r\n\n" + FORWARD,
                TABLE,
            ),
            both(0),
            flagged=True,
        ),
        Work(
            "c72_negative_credit",
            LAB2,
            lab2(FORWARD + "\n\nflops.check_compute_num_flops = lambda *a, **k: -1", TABLE),
            both(0),
            flagged=True,
        ),
        Work(
            "c72_rebound_module",
            LAB2,
            lab2(
                "class _Fake:\n    def __getattr__(self, name):\n"
                "        return lambda *a, **k: None\n\nflops = _Fake()\n\n" + FORWARD,
                TABLE,
            ),
            both(0),
            flagged=True,
        ),
        Work(
            "c72_fake_module",
            LAB2,
            lab2(
                "import sys, types\nsys.modules['feedback.flops'] = types.ModuleType('x')\n\n"
                + FORWARD,
                TABLE,
            ),
            both(0, 0),
            flagged=True,
        ),
        Work(
            "c72_input_transformer",
            LAB2,
            lab2(FORWARD + "\n\nget_ipython().input_transformers_post.append(lambda lines: [])"),
            both(0, 0),
            flagged=True,
        ),
        Work(
            "c72_reference_import",
            LAB2,
            lab2("from feedback.flops import training_flops as compute_num_flops"),
            both(0, 0),  # эталонов в песочнице нет: импорт падает, функции нет
            flagged=True,
        ),
        Work(
            "c72_frame_reader",
            LAB2,
            lab2(
                "import sys\n\ndef compute_num_flops(p, n):\n    frame = sys._getframe(1)\n"
                "    while frame is not None:\n        if 'expected' in frame.f_locals:\n"
                "            return frame.f_locals['expected']\n        frame = frame.f_back\n"
                "    return 2 * p * n",
                TABLE,
            ),
            both(0),
            flagged=True,
        ),
        Work("c72_fake_observation", LAB2, lab2(fake_observation(), TABLE), both(0), flagged=True),
        # ---------------------------------------------------------------- вред файлам
        Work(
            "t72_reads_secrets",
            LAB2,
            lab2(
                "import os\n\ndef compute_num_flops(p, n):\n"
                f"    return 6 * p * n if os.path.exists({secret!r}) else 2 * p * n"
            ),
            both(0, 0),  # таблица решения считается той же функцией
        ),
        Work(
            "t72_writes_gradebook",
            LAB2,
            with_cell(
                lab2(),
                "import sqlite3\ntry:\n"
                f"    db = sqlite3.connect({gradebook!r})\n"
                "    db.execute('update grade set manual_score = 0')\n    db.commit()\n"
                "except Exception as error:\n    print('не вышло:', error)",
            ),
            both(2),
        ),
        Work(
            "t72_rewrites_package",
            LAB2,
            with_cell(
                lab2(),
                f"try:\n    open({package_file!r}, 'a').write('\\nstrict_mode = lambda: False')\n"
                "except OSError as error:\n    print('не вышло:', error)",
            ),
            both(2),
            flagged=True,  # запись в файл пакета курса
        ),
        Work(
            "t72_rewrites_other_student",
            LAB2,
            with_cell(
                lab2(),
                f"try:\n    open({other!r}, 'w').write('{{}}')\n"
                "except OSError as error:\n    print('не вышло:', error)",
            ),
            both(2),
        ),
        Work(
            "t72_detached_process",
            LAB2,
            with_cell(
                lab2(),
                "import subprocess\nsubprocess.Popen(['sh', '-c', "
                f"'sleep 2; echo hacked > {grades}; echo hacked > late.txt'],"
                " start_new_session=True)",
            ),
            both(2),
            flagged=True,  # запуск процесса — в записи ядра (feedback.kernel_guard)
        ),
        Work(
            "t72_script_in_answers",  # formgrader открывает работу в сеансе преподавателя
            LAB2,
            with_cell(
                lab2(reflection_scaling=HOSTILE_MARKDOWN, reflection_backward=HOSTILE_SCRIPT),
                HOSTILE_OUTPUTS,
            ),
            both(2),
        ),
        # ---------------------------------------------------------------- битые работы
        Work(
            "b72_invalid_json",
            LAB2,
            b'{"cells": [',
            None,
            problem="не JSON",
            mistakes={
                "check_compute_num_flops": "not_assessed",
                "check_final_results": "not_assessed",
            },
        ),
        Work("b72_empty_file", LAB2, b"", None, problem="пустой файл"),
        Work(
            "b72_os_exit",
            LAB2,
            lab2("import os\nos._exit(0)"),
            both(0, 0),
            flagged=True,
            problem="ядро завершилось",
        ),
        Work(
            "b72_killed_kernel",
            LAB2,
            lab2("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)"),
            both(0, 0),
            flagged=True,
            problem="ядро завершилось",
        ),
        Work(
            "b72_ignores_interrupt",
            LAB2,
            lab2(
                "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
            ),
            both(0, 0),
            flagged=True,
            problem="прерывание",
        ),
        Work(
            "b72_other_lab_inside",
            LAB2,
            submission(LAB4),
            memory_points(),
            problem="оценен как",
            graded_as=LAB4,
        ),
        # ---------------------------------------------------------------- ресурсы
        Work("r72_memory_hog", LAB2, memory_hog(), both(0, 0), problem="памяти"),
        Work(
            "r72_huge_print",
            LAB2,
            with_cell(lab2(), "print('x' * 50_000_000)"),
            both(2),
        ),
        Work(
            "r72_fills_disk",
            LAB2,
            lab2(
                "for i in range(64):\n    open(f'junk{i}', 'wb').write(b'0' * 16 * 1024**2)\n\n"
                + CORRECT
            ),
            both(0, 0),
            problem="записано больше",
        ),
    ]
    works += lab4_works() + gpu_works() + trust_works() + more_trust_works() + round_3_works()
    return works


# --------------------------------------------------------------------------- 7.4

MEMORY_TASKS = ["param", "input_data", "gradient", "optimizer", "activation"]
MEMORY_MISTAKES = {
    "param": "def calculate_param_memory(p, b):\n    return p * b",  # байты вместо ГиБ
    "input_data": "def calculate_input_data_memory(b, n, t):\n    return b * n * t / 1e9",  # ГБ
    "gradient": f"def calculate_gradient_memory(p, b):\n    return 2 * p * b / {GIB}",
    "optimizer": f"def calculate_optimizer_memory(p, b):\n    return p * b / {GIB}",
    "activation": f"def calculate_activation_memory(B, L, n, d, b):\n    return B*L*d*b / {GIB}",
}


def memory_points(lost: tuple[str, ...] = ()) -> dict[str, float]:
    """Баллы проверок 7.4: по 1 за функцию (письменные ответы весят больше, issue 40)."""
    return {f"check_calculate_{task}_memory": 0 if task in lost else 1 for task in MEMORY_TASKS}


def lab4_works() -> list[Work]:
    works = [
        Work("h74_correct", LAB4, submission(LAB4), memory_points()),
        Work("h74_untouched", LAB4, student_notebook(LAB4), memory_points(tuple(MEMORY_TASKS))),
        Work(
            "h74_global_reader",
            LAB4,
            submission(
                LAB4,
                {
                    "calculate_param_memory": "def calculate_param_memory(p, b):\n"
                    f"    return PARAM_COUNT * b / {GIB}"
                },
            ),
            memory_points(("param",)),
            mistakes={"check_calculate_param_memory": "calling.reads_global"},
        ),
        Work(
            "h74_adam_with_weights",
            LAB4,
            submission(
                LAB4,
                {
                    "calculate_optimizer_memory": "def calculate_optimizer_memory(p, b):\n"
                    f"    return 3 * p * b / {GIB}"
                },
            ),
            memory_points(("optimizer",)),
            mistakes={"check_calculate_optimizer_memory": "memory.adam_with_weights"},
        ),
        Work(
            "h74_gradient_without_bytes",
            LAB4,
            submission(
                LAB4,
                {
                    "calculate_gradient_memory": "def calculate_gradient_memory(p, b):\n"
                    f"    return p / {GIB}"
                },
            ),
            memory_points(("gradient",)),
            mistakes={"check_calculate_gradient_memory": "memory.forgot_bytes_per_param"},
        ),
        # Пара, списавшая друг у друга функцию и ответ на вопрос 1 (similar.csv).
        Work("h74_copy_original", LAB4, copy_pair(renamed=False), memory_points()),
        Work("h74_copy_renamed", LAB4, copy_pair(renamed=True), memory_points()),
        Work(
            "r74_five_hanging",
            LAB4,
            submission(
                LAB4,
                {
                    f"calculate_{task}_memory": f"def calculate_{task}_memory(*args):\n"
                    "    while True:\n        pass"
                    for task in MEMORY_TASKS
                },
            ),
            memory_points(tuple(MEMORY_TASKS)),
        ),
    ]
    for task, source in MEMORY_MISTAKES.items():
        works.append(
            Work(
                f"h74_mistake_{task}",
                LAB4,
                submission(LAB4, {f"calculate_{task}_memory": source}),
                memory_points((task,)),
                mistakes={f"check_calculate_{task}_memory": MEMORY_MISTAKE_IDS[task]},
            )
        )
    return works


#: Коды ошибок MEMORY_MISTAKES (feedback/answers/mistakes.py).
MEMORY_MISTAKE_IDS = {
    "param": "memory.bytes_not_gib",
    "input_data": "memory.gb_not_gib",
    "gradient": "memory.gradient_doubled",
    "optimizer": "memory.adam_one_moment",
    "activation": "memory.activation_missing_num_layers",
}

#: Функция и ответ, которые один учащийся написал, а другой списал: переименовал
#: переменные, переставил пробелы и переносы (similar.csv должен найти эту пару).
COPIED_ACTIVATION = '''def calculate_activation_memory(
    batch_size: int,
    max_length: int,
    num_layers: int,
    embedding_dim: int,
    bytes_per_param: float,
) -> float:
    """Память под активации (один вектор на токен на слой), ГиБ."""
    tokens_per_batch = batch_size * max_length
    vector_bytes = embedding_dim * bytes_per_param
    per_layer = tokens_per_batch * vector_bytes
    total_bytes = 0
    for layer in range(num_layers):
        total_bytes = total_bytes + per_layer
    if total_bytes < 0:
        raise ValueError("память не бывает отрицательной")
    return bytes_to_gb(total_bytes)'''
RENAMED_ACTIVATION = '''def calculate_activation_memory(batch_size: int, max_length: int,
        num_layers: int, embedding_dim: int, bytes_per_param: float) -> float:
    """Память под активации (один вектор на токен на слой), ГиБ."""
    # считаем по слоям
    n_tok = batch_size*max_length
    vec = embedding_dim*bytes_per_param

    layer_mem = n_tok*vec
    acc = 0
    for i in range(num_layers):
        acc = acc+layer_mem
    if acc<0:
        raise ValueError("память не бывает отрицательной")
    return bytes_to_gb(acc)'''
COPIED_ANSWER = (
    "Самая большая статья — состояние оптимизатора Adam. Для каждого параметра он хранит два "
    "числа: скользящее среднее градиента и среднее его квадрата. Во float32 это 8 байт на "
    "параметр, то есть вдвое больше, чем сами веса, и вдвое больше градиентов. Для модели на "
    "4 млрд параметров выходит около 29 ГиБ."
)
RENAMED_ANSWER = (
    "самая большая статья —  состояние оптимизатора Adam.\nДля каждого параметра он "
    "хранит два числа:\nскользящее среднее градиента и среднее его квадрата. Во float32 "
    "это 8 байт на параметр,\nто есть вдвое больше, чем сами веса, и вдвое больше "
    "градиентов.  Для модели на 4 млрд параметров выходит около 29 ГиБ!"
)


def copy_pair(renamed: bool) -> dict:
    return submission(
        LAB4,
        {
            "calculate_activation_memory": RENAMED_ACTIVATION if renamed else COPIED_ACTIVATION,
            "reflection_largest": RENAMED_ANSWER if renamed else COPIED_ANSWER,
        },
    )


#: Пары, которые similar.csv должен найти в классе: (лаб, задание, учащийся A, учащийся B).
COPIED_PAIRS = {
    (LAB4, "calculate_activation_memory", "h74_copy_original", "h74_copy_renamed"),
    (LAB4, "reflection_largest", "h74_copy_original", "h74_copy_renamed"),
}


# --------------------------------------------------------------------------- GPU

#: Задания 7.5 с автопроверкой и их баллы (оптимизатор — 1 балл: значения в основном даны).
LAB5_POINTS = {
    "check_weights_budget": 2,
    "check_weights_dtype": 2,
    "check_lora": 2,
    "check_lora_parameter_count": 2,
    "check_optimizer": 1,
}
LAB5_TASKS = tuple(LAB5_POINTS)
OPTIMIZER_7_5 = """optimizer = keras.optimizers.AdamW(
    learning_rate={lr}, weight_decay=0.01, beta_1=0.9, beta_2=0.95, epsilon=1e-6, clipnorm=0.5
)"""
OPTIMIZER_7_6 = """optimizer = keras.optimizers.AdamW(
    weight_decay=0.01, beta_1=0.9, beta_2=0.95, epsilon=1e-6, clipnorm=0.5, {extra}
)"""
SAME_PROMPT = """generations_gemma_1b = []
duration_gemma_1b_ns = 0
for prompt in generation.PROMPTS:
    generations_gemma_1b.append(generation.generate(gemma_1b, generation.PROMPTS[0], 5))"""


def lab5_points(*lost: str) -> dict[str, float]:
    return {task: 0 if task in lost else points for task, points in LAB5_POINTS.items()}


def lab6_points(*lost: str) -> dict[str, float]:
    """Баллы 7.6: оптимизатор для T4 и расчёт для карты 32 ГБ, по 2 балла."""
    tasks = ("check_optimizer_accumulation", "check_optimizer_32gb")
    return {task: 0 if task in lost else 2 for task in tasks}


def gpu_works() -> list[Work]:
    no_accumulation = OPTIMIZER_7_6.format(extra="learning_rate=8e-4")
    return [
        Work("g75_correct", LAB5, submission(LAB5), lab5_points()),
        # Три задания с тремя разными ошибками в одной работе: вердикты заданий независимы, а
        # каждая работа GPU-лабораторной стоит в классе секунды процессора (импорт keras).
        Work(
            "g75_three_mistakes",
            LAB5,
            submission(
                LAB5,
                {
                    "weights_dtype": 'WEIGHTS_DTYPE = "float32"',
                    "enable_lora": "model.backbone.enable_lora(rank=8)",
                    "optimizer": OPTIMIZER_7_5.format(lr="1e-4"),
                },
            ),
            lab5_points("check_weights_dtype", "check_lora", "check_optimizer"),
            mistakes={
                "check_weights_dtype": "dtype.float32",
                "check_lora": "lora.wrong_rank",
                "check_optimizer": "optimizer.lr_other_lab",
            },
        ),
        Work("g75_untouched", LAB5, student_notebook(LAB5), {t: 0 for t in LAB5_TASKS}),
        Work("g76_correct", LAB6, submission(LAB6), lab6_points()),
        Work(
            "g76_no_accumulation",
            LAB6,
            submission(LAB6, {"optimizer_accumulation": no_accumulation}),
            lab6_points("check_optimizer_accumulation"),
            mistakes={"check_optimizer_accumulation": "optimizer.no_accumulation"},
        ),
        Work(
            "g76_patched_checker",
            LAB6,
            submission(
                LAB6,
                {
                    "optimizer_accumulation": no_accumulation
                    + "\naccumulation.check_optimizer = lambda *a, **k: None"
                },
            ),
            # Подменённую check_optimizer находит и зонд задания 2 (та же проверка, steps=2):
            # вердикта нет и там, хотя оптимизатор для карты 32 ГБ в работе верный.
            lab6_points("check_optimizer_accumulation", "check_optimizer_32gb"),
            flagged=True,
        ),
        Work(
            "g71_correct",
            LAB1,
            submission(LAB1),
            {"check_generations_gemma_1b": 2, "check_generations_gemma_4b": 2},
        ),
        Work(
            "g71_same_prompt_everywhere",
            LAB1,
            submission(LAB1, {"generations_gemma_1b": SAME_PROMPT}),
            {"check_generations_gemma_1b": 0, "check_generations_gemma_4b": 2},
            mistakes={"check_generations_gemma_1b": "generation.wrong_prompt"},
        ),
    ]


# --------------------------------------------------------------------------- доверие, круг 2

#: Метка в окружении преподавателя при оценивании класса: её не должно быть ни в одном
#: файле, который пишет оценивание (conftest.py ставит её,
#: tests/teacher/grading/test_grade_class.py ищет).
TEACHER_MARKER = "COURSE7-TEACHER-MARKER-7f3a"

READS_TEACHER_ENVIRONMENT = """import os

for pid in [name for name in os.listdir('/proc') if name.isdigit()]:
    for part in ('environ', 'cmdline'):
        try:
            print(pid, part, open(f'/proc/{pid}/{part}', 'rb').read())
        except OSError as error:
            print(pid, part, error)
"""

#: Поддельный зонд: показывает «верное» наблюдение с меткой из текста ячейки-зонда и
#: прерывает настоящий зонд исключением BaseException.
FORGED_THEN_RAISES = """import ast, json
from IPython.display import display


class _Stop(BaseException):
    pass


def compute_num_flops(p, n):
    call = ast.parse(get_ipython().user_ns["In"][-1]).body[-1].value
    grade_id, check, _, params, token = [
        None if isinstance(arg, ast.Lambda) else ast.literal_eval(arg) for arg in call.args
    ]
    calls = [{"t": "float", "v": 6.0 * a * b} for a, b in json.loads(params)["cases"]]
    payload = {"grade_id": grade_id, "check": check, "token": token,
               "observation": {"ok": {"calls": calls}}}
    display({"application/vnd.course7.observation+json": payload}, raw=True)
    raise _Stop()"""

#: Таблица, где FLOPs — подкласс float: его __float__ говорит верное число, а сам он — 0.
FLOAT_SUBCLASS_TABLE = """class _F(float):
    def __new__(cls, claimed):
        self = super().__new__(cls, 0.0)
        self.claimed = claimed
        return self

    def __float__(self):
        return self.claimed


final_results_data = [
    {"Scenario": "BERT-Base", "Parameters": 110e6, "Tokens": 3.3e9, "FLOPs": _F(2.178e18)},
    {"Scenario": "T5-Large", "Parameters": 770e6, "Tokens": 1e12, "FLOPs": _F(4.62e21)},
    {"Scenario": "Gemma-1B (Africa Galore)", "Parameters": 1e9, "Tokens": 30e3,
     "FLOPs": _F(1.8e14)},
    {"Scenario": "PaLM", "Parameters": 540e9, "Tokens": 780e9, "FLOPs": _F(2.527e24)},
]"""

#: Свой пакет feedback в рабочей папке ядра: его feedback.engine.probe (зонд оценивания)
#: подменил бы ответы эталоном курса.
SHADOW_PROBE = """import json
from IPython.display import display
from feedback.engine.graded import find


def emit(grade_id, check_name, get_objects, params_json, token=""):
    spec = find(check_name)
    objects = (spec.judge.__self__.formula,)
    envelope = spec.observe_envelope(lambda: objects, json.loads(params_json))
    payload = {"grade_id": grade_id, "check": check_name, "token": token,
               "observation": envelope}
    display({"application/vnd.course7.observation+json": payload}, raw=True)
"""
SHADOW_PACKAGE = f"""import os

os.makedirs('feedback/engine', exist_ok=True)
open('feedback/__init__.py', 'w').write('')
open('feedback/engine/__init__.py', 'w').write('')
open('feedback/engine/probe.py', 'w').write({SHADOW_PROBE!r})"""

INDIRECT_REFERENCE = """flops_module = importlib.import_module("feedback." + "flops")
compute_num_flops = getattr(flops_module, "training" + "_flops")"""

THREAD_POOL = """from concurrent.futures import ThreadPoolExecutor

_pool = ThreadPoolExecutor(64)
_futures = [_pool.submit(sum, [1, 2]) for _ in range(64)]


def compute_num_flops(p, n):
    return 6 * p * n"""

FRAME_BY_GETATTR = """import sys


def compute_num_flops(p, n):
    frame = getattr(sys, "_get" + "frame")(1)
    while frame is not None:
        if "expected" in frame.f_locals:
            return frame.f_locals["expected"]
        frame = frame.f_back
    return 2 * p * n"""


def first_cell(nb: dict, source: str) -> dict:
    """Работа, в которой учащийся добавил ячейку самой первой, до установки пакета."""
    cell = {"cell_type": "code", "metadata": {}, "source": source, "outputs": []}
    nb["cells"].insert(0, {**cell, "execution_count": None})
    return nb


def trust_works() -> list[Work]:
    """Атаки второго круга (issue 17): ни одна не получает баллов за неверный ответ."""
    return [
        Work(
            "t72_reads_teacher_environment",
            LAB2,
            with_cell(lab2(), READS_TEACHER_ENVIRONMENT),
            both(2),
        ),
        Work("c72_forged_then_raises", LAB2, lab2(FORGED_THEN_RAISES, TABLE), both(0), True),
        Work(
            "c72_float_subclass_table", LAB2, lab2(FORWARD, FLOAT_SUBCLASS_TABLE), both(0, 0), True
        ),
        Work(
            "c72_shadow_package",
            LAB2,
            first_cell(lab2(FORWARD, TABLE), SHADOW_PACKAGE),
            both(0),
            flagged=True,
        ),
        # Эталона в песочнице нет: getattr падает, функции нет (как c72_reference_import).
        Work("c72_indirect_reference", LAB2, lab2(INDIRECT_REFERENCE, TABLE), both(0), True),
        Work("c72_thread_pool", LAB2, lab2(THREAD_POOL, TABLE), both(2), flagged=True),
        Work("c72_frame_by_getattr", LAB2, lab2(FRAME_BY_GETATTR, TABLE), both(0), flagged=True),
        # Вложенные теги: bleach тратил на 480 КБ таких минуты в основном процессе.
        Work("r72_nested_tags_answer", LAB2, lab2(reflection_scaling=NESTED_TAGS), both(2)),
        Work("r72_nested_tags_output", LAB2, with_cell(lab2(), NESTED_OUTPUT), both(2)),
        # Имя файла со скриптом попадает в заметку «назван как …».
        Work(
            "g75_shadow_package",
            LAB5,
            first_cell(
                submission(
                    LAB5,
                    {
                        "weights_dtype": 'WEIGHTS_DTYPE = "float32"',
                        "optimizer": OPTIMIZER_7_5.format(lr="1e-4"),
                    },
                ),
                SHADOW_PACKAGE,
            ),
            lab5_points("check_weights_dtype", "check_optimizer"),
            flagged=True,
        ),
        Work(
            "x72_evil_file_name",
            LAB2,
            lab2(),
            both(2),
            problem="оценен как",
            path=f"x72_evil_file_name/{LAB4} {EVIL_NAME}.ipynb",
        ),
    ]


NESTED_TAGS = "<b><i><u><s>" * 40_000 + "ответ"
NESTED_OUTPUT = f"""from IPython.display import HTML

HTML({NESTED_TAGS!r})"""
EVIL_NAME = "<img src=x onerror=document.title='PWNED'>"


# --------------------------------------------------------------------------- доверие, круг 2: ещё

#: Ссылки javascript: в письменном ответе и в выводе text/markdown.
JAVASCRIPT_LINKS = f"Ответ со ссылкой: [нажмите](javascript:document.title='{PWNED}')"
MARKDOWN_OUTPUT = f"""from IPython.display import Markdown

Markdown(
    "[вывод-ссылка](javascript:document.title='{PWNED}') и <a href='javascript:x'>ещё</a>"
)"""
#: Обратная кавычка в строке, которую заметка для преподавателя покажет как код.
BACKTICK_CODE = f"""import sys


def compute_num_flops(p, n):
    frame = sys._getframe()  # `</code><img src=x onerror=document.title='{PWNED}'>`
    return 2 * p * n"""
VARS_REFERENCE = """compute_num_flops = vars(flops)["COMPUTE_NUM_FLOPS"].formula"""
DEEP_JSON_OUTPUT = """from IPython.display import display

deep = 0
for _ in range(900):
    deep = [deep]
display({"application/json": deep, "text/plain": "глубоко"}, raw=True)"""


def more_trust_works() -> list[Work]:
    """Ещё атаки второго круга: ссылки, обратные кавычки, vars(), глубокий JSON, 7.4."""
    memory_mistakes = {f"calculate_{task}_memory": src for task, src in MEMORY_MISTAKES.items()}
    return [
        Work(
            "t72_javascript_links",
            LAB2,
            with_cell(lab2(reflection_scaling=JAVASCRIPT_LINKS), MARKDOWN_OUTPUT),
            both(2),
        ),
        Work("c72_backtick_in_code", LAB2, lab2(BACKTICK_CODE, TABLE), both(0), flagged=True),
        Work("c72_vars_reference", LAB2, lab2(VARS_REFERENCE, TABLE), both(0), flagged=True),
        # display(..., raw=True) — уже повод посмотреть; вывод показан заглушкой, баллы — свои.
        Work(
            "r72_deep_json_output",
            LAB2,
            with_cell(lab2(), DEEP_JSON_OUTPUT),
            both(2),
            flagged=True,
        ),
        Work(
            "c74_shadow_package",
            LAB4,
            first_cell(submission(LAB4, memory_mistakes), SHADOW_PACKAGE),
            memory_points(tuple(MEMORY_TASKS)),
            flagged=True,
        ),
    ]


# --------------------------------------------------------------------------- доверие, круг 3

#: Адрес, на который «звонили бы домой» страницы с картинками и стилями работы.
TRACKER = "tracker.example"
#: Пиксели слежения в письменном ответе: Markdown, HTML и стиль с url().
CALLS_HOME_ANSWER = (
    f"Смотрите: ![пиксель](http://{TRACKER}/a.png?who=me) и "
    f'<img src="https://{TRACKER}/b.png" alt="ещё"> и '
    f'<p style="background: url(http://{TRACKER}/c.png)">фон</p>'
)
#: И в выводе ячейки: HTML с картинкой, srcset, poster и стилями, Markdown с картинкой.
CALLS_HOME_OUTPUT = f"""from IPython.display import HTML, Markdown, display

display(HTML(
    '<img src="http://{TRACKER}/d.png" alt="график">'
    '<img srcset="http://{TRACKER}/e.png 2x">'
    '<video poster="http://{TRACKER}/f.png"></video>'
    '<div style="background-image: url(//{TRACKER}/g.png)">фон</div>'
))
display(Markdown("![картинка](https://{TRACKER}/h.png)"))"""


#: Вспомогательная ячейка: внутри строки timeit подменяет display IPython так, что
#: наблюдение настоящего зонда (метка, зонд и его отметка в записи — настоящие) уходит с
#: FLOPs, умноженными на 3: функция 2·P·N выглядела бы верной.
TIMEIT_TRIPLES_OBSERVATION = '''import timeit

timeit.timeit("""
import IPython.display as _shown
_real = _shown.display


def _tripled(*objects, **options):
    for value in objects:
        if isinstance(value, dict) and "application/vnd.course7.observation+json" in value:
            body = value["application/vnd.course7.observation+json"]["observation"]
            for call in body.get("ok", {}).get("calls", []):
                if call.get("t") == "float":
                    call["v"] = call["v"] * 3
    return _real(*objects, **options)


_shown.display = _tripled
""", number=1)'''

#: Обход кадров и сборщика мусора из строк: doctest, cProfile.run и run_cell. Функция верная.
WALKS_FROM_STRINGS = '''import cProfile
import doctest


def _walk():
    """
    >>> import gc
    >>> _ = len(gc.get_objects())
    """


doctest.run_docstring_examples(_walk, {})
cProfile.run("import sys; _ = sys._getframe(0)")
get_ipython().run_cell("import gc; _ = gc.get_referrers(print)")'''

TRIPLED_FUNCTION = "def compute_num_flops(p, n):\n    return 2 * p * n"


def round_3_works() -> list[Work]:
    """Атаки третьего круга (issue 26): страницы, которые «звонят домой», и код из строк."""
    return [
        Work(
            "t72_calls_home",
            LAB2,
            with_cell(lab2(reflection_scaling=CALLS_HOME_ANSWER), CALLS_HOME_OUTPUT),
            both(2),
        ),
        Work(
            "t72_timeit_display",
            LAB2,
            with_cell(lab2(TRIPLED_FUNCTION, TABLE), TIMEIT_TRIPLES_OBSERVATION),
            both(0),
            flagged=True,
        ),
        Work(
            "t72_walks_from_strings",
            LAB2,
            with_cell(lab2(), WALKS_FROM_STRINGS),
            both(2),
            flagged=True,
        ),
    ]

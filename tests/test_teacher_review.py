"""Находки для ручной проверки: код, который тянется к механизму проверки."""

import nbformat
import pytest

from feedback.teacher.assemble import is_answer
from feedback.teacher.review import allowed_helpers, course_modules, scan

from notebook_runner import ROOT

LABS = sorted(path.parent.name for path in (ROOT / "solutions").glob("*/*.ipynb"))
MODULES = {"feedback", "flops", "formatting", "plots", "explore", "generation"}


def findings(source, allowed=()):
    return scan([("cell", source)], MODULES, set(allowed))


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        ("import os\nos.environ['FEEDBACK_STRICT'] = '0'", "os.environ"),
        ("flops.check_compute_num_flops = lambda *a: None", "меняет модуль курса"),
        ("from feedback.flops import training_flops", "пакет проверок"),
        ("import feedback.result as r", "пакет проверок"),
        ("def f(p, n):\n    return flops.training_flops(p, n)", "flops.training_flops"),
        ("flops = object()", "переопределяет имя модуля курса"),
        ("def flops():\n    pass", "переопределяет имя модуля курса"),
        ("import math as flops", "переопределяет имя модуля курса"),
        ("import sys\nsys.modules['feedback.flops'] = None", "sys.modules"),
        ("import sys\nf = sys._getframe(1).f_locals['expected']", "кадры стека"),
        ("import inspect\ninspect.currentframe()", "inspect"),
        ("get_ipython().input_transformers_post.append(lambda x: [])", "get_ipython"),
        ("import builtins\nbuiltins.float = int", "builtins"),
        ("import math\nmath.isclose.__globals__", "глобальные переменные функции"),
        ("import gc\ngc.get_objects()", "gc"),
        ("import ctypes", "ctypes"),
        ("import importlib\nimportlib.reload(flops)", "importlib"),
        ("__import__('feedback')", "__import__"),
        ("exec('x = 1')", "exec"),
        ("import os\nos._exit(0)", "os._exit"),
        ("import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)", "сигнал"),
        ("import threading", "потоки"),
        ("globals()['flops'] = None", "globals()"),
        ("!pip install x\nimport sys\nsys.settrace(None)", "sys.settrace"),
        ("%env FEEDBACK_STRICT=0", "%env"),
        ("get_ipython().run_line_magic('env', 'FEEDBACK_STRICT=0')", "%env"),
    ],
)
def test_reaching_into_the_grader_is_found_with_cell_and_line(source, reason):
    found = findings(source)
    assert any(reason in item.reason for item in found), found
    assert all(item.cell == "cell" and item.line >= 1 for item in found)


@pytest.mark.parametrize(
    "source",
    [
        "def compute_num_flops(p, n):\n    return 6 * p * n",
        "import numpy as np\nimport math\nimport os\nx = np.log10(math.pi)",
        "import sys\nprint(sys.version)",
        "%time y = 1\nz = y + 1",
        "def broken(:",  # синтаксическая ошибка — не повод для подозрений
        "text = generation.generate(model, prompt, 50)",
    ],
)
def test_ordinary_solutions_are_not_flagged(source):
    assert findings(source, allowed={"generation.generate"}) == []


@pytest.mark.parametrize("lab", LABS)
def test_reference_solutions_use_only_allowed_helpers(lab):
    nb = nbformat.read(ROOT / "solutions" / lab / f"{lab}.ipynb", as_version=4)
    setup = [c.source for c in nb.cells if c.cell_type == "code" and "nbgrader" not in c.metadata]
    answers = [c.source for c in nb.cells if c.cell_type == "code" and is_answer(c)]
    modules = course_modules(setup)
    assert "feedback" in modules
    allowed = allowed_helpers(answers, modules)
    assert scan([(str(i), source) for i, source in enumerate(answers)], modules, allowed) == []


def test_course_modules_are_read_from_setup_cells():
    setup = ["from feedback import explore, flops\nimport feedback.memory as mem", "x = 1"]
    assert course_modules(setup) == {"feedback", "explore", "flops", "mem"}

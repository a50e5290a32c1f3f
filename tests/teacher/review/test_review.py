"""Находки для ручной проверки: код, который тянется к механизму проверки."""

import time

import nbformat
import pytest

from feedback.teacher.notebook.assemble import is_answer
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
        ("import feedback.engine.result as r", "пакет проверок"),
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
    cells = [(str(i), source) for i, source in enumerate(answers)]
    assert scan(cells, modules, allowed) == []
    assert scan(cells, modules, allowed, setup=setup) == []


def test_course_modules_are_read_from_setup_cells():
    setup = ["from feedback import explore, flops\nimport feedback.memory as mem", "x = 1"]
    assert course_modules(setup) == {"feedback", "explore", "flops", "mem"}


# --------------------------------------------------------------------------- обходы
#
# Каждое из этих написаний нашёл прогон «красной команды», и прежний сканер, который
# смотрел только на буквальное ``модуль.атрибут``, его пропускал. Строка — та, на которой
# должна быть находка; фрагмент — часть её причины.

SETUP = [
    "import importlib\nimport importlib.util\nimport subprocess\nimport sys",
    "from feedback import explore, flops, formatting, plots",
]

WALKAROUNDS = [
    # ------------------------------------------------- импорт модуля курса в обход import
    ('m = importlib.import_module("feedback.flops")', 1, "модуль курса «feedback.flops»"),
    ('m = importlib.import_module("feedback." + "flops")', 1, "модуль курса «feedback.flops»"),
    ('name = "feedback.flops"\nimportlib.import_module(name)', 2, "модуль курса"),
    ("m = importlib.import_module(name)\nm.training_flops", 2, "имя которого вычисляется"),
    ('__import__("feedback.flops")', 1, "модуль курса «feedback.flops»"),
    ('importlib.__import__("feedback.flops", fromlist=["x"])', 1, "модуль курса"),
    ('m = sys.modules["feedback.flops"]', 1, "берёт модуль курса «feedback.flops»"),
    ('m = sys.modules["feedback.flops"]\nm.training_flops(1, 2)', 2, "m.training_flops"),
    ('sys.modules.get("feedback.flops").training_flops', 1, "feedback.flops.training_flops"),
    # ------------------------------------------------- модуль курса по имени-строке
    ('getattr(flops, "training_flops")(1, 2)', 1, "через getattr"),
    ('getattr(flops, "training_flops")(1, 2)', 1, "feedback.flops.training_flops"),
    ('name = "training" + "_flops"\ngetattr(flops, name)', 2, "вычисляемым именем"),
    ("def peek(n):\n    return getattr(flops, n)", 2, "вычисляемым именем"),
    ('vars(flops)["training_flops"](1, 2)', 1, "перебирает содержимое модуля курса"),
    ('vars(flops)["training_flops"](1, 2)', 1, "feedback.flops.training_flops"),
    ('flops.__dict__["training_flops"]', 1, "перебирает содержимое модуля курса"),
    ("for n in dir(flops):\n    f = getattr(flops, n)", 1, "перебирает содержимое"),
    ("for n in dir(flops):\n    f = getattr(flops, n)", 2, "вычисляемым именем"),
    ("for k, v in vars(flops).items():\n    v.reference", 2, "внутренности проверки"),
    ('object.__getattribute__(flops, "training_flops")', 1, "через object.__getattribute__"),
    ('flops.__getattribute__("training_flops")', 1, "через __getattribute__"),
    ('import operator\noperator.attrgetter("training_flops")(flops)', 2, "attrgetter"),
    # ------------------------------------------------- псевдонимы модуля курса
    ("f = flops\nf.training_flops(1, 2)", 2, "f.training_flops (это feedback.flops."),
    ("import feedback.flops as f\nf.training_flops(1, 2)", 2, "feedback.flops.training_flops"),
    ("from feedback import flops as f\nf.training_flops(1, 2)", 2, "это feedback.flops"),
    ("import feedback.flops\nfeedback.flops.training_flops(1, 2)", 2, "training_flops"),
    ('m = sys.modules["feedback.flops"]\ngetattr(m, "training_flops")', 2, "через getattr"),
    ('getattr(sys.modules["feedback.flops"], "training_flops")', 1, "через getattr"),
    ("def peek(module):\n    return module.training_flops\n\npeek(flops)", 2, "training_flops"),
    ("def get():\n    return flops\n\nget().training_flops", 4, "training_flops"),
    ("(lambda m: m.training_flops)(flops)", 1, "m.training_flops"),
    ("mods = [flops]\nmods[0].training_flops", 2, "training_flops"),
    ('d = {"f": flops}\nd["f"].training_flops', 2, "training_flops"),
    ("found = []\nfound.append(flops)\nfound[0].training_flops", 3, "training_flops"),
    ("a, b = 1, flops\nb.training_flops", 2, "training_flops"),
    ("a = b = flops\nb.training_flops", 2, "training_flops"),
    ("x = flops if True else None\nx.training_flops", 2, "training_flops"),
    ("for m in [flops]:\n    m.training_flops", 2, "training_flops"),
    ("if m := flops:\n    m.training_flops", 2, "training_flops"),
    ("def f():\n    global g\n    g = flops\n\ng.training_flops", 5, "training_flops"),
    ("def outer():\n    g = flops\n    def inner():\n        return g.x", 4, "g.x"),
    ("class A:\n    m = flops\n\nA.m.training_flops", 4, "training_flops"),
    ("class A:\n    m = flops\n    def f(self):\n        return self.m.x", 4, "self.m.x"),
    ('globals()["flops"].training_flops', 1, "training_flops"),
    # ------------------------------------------------- внутренности проверок
    ("flops.check_compute_num_flops.graded", 1, "внутренности проверки курса"),
    ("c = flops.check_compute_num_flops\nc.graded.reference", 2, "внутренности проверки"),
    ("generation.generate.__wrapped__", 1, "внутренности проверки"),
    ('getattr(flops.COMPUTE_NUM_FLOPS, "judge")', 1, "внутренности проверки"),
    ("flops.COMPUTE_NUM_FLOPS.observe", 1, "внутренности проверки"),
    ("flops.COMPUTE_NUM_FLOPS.mistakes", 1, "внутренности проверки"),
    ("x = [flops]\nfor m in x:\n    m.cases", 3, "внутренности проверки"),
    # ------------------------------------------------- кадры стека
    ('getattr(sys, "_getframe")(1)', 1, "sys._getframe"),
    ('getattr(sys, "_get" + "frame")(1)', 1, "sys._getframe"),
    ('getattr(sys, "_get" + "frame")(1)', 1, "getattr с вычисляемым именем атрибута у модуля sys"),
    ('sys.__getattribute__("_get" + "frame")', 1, "sys._getframe"),
    ("from sys import _getframe\nframe = _getframe(1)", 2, "sys._getframe"),
    ("import sys as s\nget = s._getframe\nget(1)", 3, "sys._getframe"),
    ("os.sys._getframe(1)", 1, "sys._getframe"),
    ("from inspect import currentframe as cf\nframe = cf()", 2, "inspect"),
    ("import inspect as i\ni.stack()", 2, "inspect"),
    ("sys._current_frames()", 1, "sys._current_frames"),
    ("import traceback\ntraceback.walk_stack(None)", 2, "traceback.walk_stack"),
    ("def f(name):\n    return getattr(os, name)", 2, "вычисляемым именем атрибута у модуля os"),
    ("def f(n):\n    return getattr(importlib, n)", 2, "у модуля importlib"),
    ("print.__self__.eval('1')", 1, "eval"),
    # ------------------------------------------------- фон: потоки, процессы, таймеры
    ("from concurrent.futures import ThreadPoolExecutor as T\nT(4)", 1, "concurrent.futures"),
    ("from concurrent.futures import ThreadPoolExecutor as T\nT(4)", 2, "concurrent.futures"),
    ("import concurrent.futures\nconcurrent.futures.ProcessPoolExecutor()", 2, "пулы"),
    ("import multiprocessing as mp\nmp.Process(target=print).start()", 2, "multiprocessing"),
    ("import asyncio\nasyncio.get_event_loop().call_later(1, print)", 2, "call_later"),
    ("loop.run_in_executor(None, print)", 1, "run_in_executor"),
    ("from threading import Timer\nTimer(1, print).start()", 2, "фоновые потоки"),
    ("import atexit\natexit.register(print)", 2, "atexit"),
    ('getattr(sys, "setprofile")(print)', 1, "sys.setprofile"),
    ("from signal import signal as s, SIGALRM\ns(SIGALRM, print)", 2, "сигналов"),
    ("import faulthandler\nfaulthandler.dump_traceback_later(1)", 2, "faulthandler"),
    ("import subprocess\nsubprocess.Popen(['sleep', '9'], start_new_session=True)", 2, "процессы"),
    ("os.system('sleep 9 &')", 1, "os.system"),
    # ------------------------------------------------- exec, eval, compile под другим именем
    ("e = eval\ne('1')", 2, "eval"),
    ("run = exec\nrun('x = 1')", 2, "exec"),
    ("import builtins\ngetattr(builtins, 'ev' + 'al')('1')", 2, "вычисляет код из строки"),
    ("import builtins\ngetattr(builtins, 'ev' + 'al')('1')", 2, "у модуля builtins"),
    ("__builtins__['eval']('1')", 1, "вычисляет код из строки"),
    ("getattr(__builtins__, 'ex' + 'ec')('1')", 1, "выполняет код из строки"),
    ("import pickle\npickle.loads(data)", 2, "pickle"),
    ("import types\ntypes.FunctionType(code, {})", 2, "types"),
    ("%time getattr(sys, '_getframe')(1)", 1, "sys._getframe"),
    ("%%time\nx = 1\nimport threading", 3, "фоновые потоки"),
    # ------------------------------------------------- теневой пакет рядом с тетрадкой
    ("open('feedback/__init__.py', 'w').write('')", 1, "пишет файл «feedback/__init__.py»"),
    ("open('probe.py', 'w')", 1, "пишет файл «probe.py»"),
    ("with open('feedback/engine/probe.py', mode='a') as f:\n    f.write('x')", 1, "пишет файл"),
    (
        "name = 'feedback'\nwith open(f'{name}/engine/probe.py', 'w') as f:\n    pass",
        2,
        "feedback/engine/probe",
    ),
    ("os.makedirs('feedback', exist_ok=True)", 1, "пишет файл «feedback»"),
    ("os.mkdir('feed' + 'back')", 1, "пишет файл «feedback»"),
    ("from pathlib import Path\nPath('feedback').mkdir()", 2, "пишет файл «feedback»"),
    (
        "from pathlib import Path\n(Path('feedback') / 'engine' / 'probe.py').write_text('')",
        2,
        "probe.py",
    ),
    (
        "import pathlib\npathlib.Path('feedback', 'engine', 'probe.py').write_bytes(b'')",
        2,
        "probe.py",
    ),
    ("from pathlib import Path\np = Path.cwd() / 'feedback'\n(p / 'x.py').touch()", 3, "x.py"),
    ("from pathlib import Path\nPath('probe.py').open('w')", 2, "probe.py"),
    ("import shutil\nshutil.copy('x', 'feedback/engine/probe.py')", 2, "probe.py"),
    ("fd = os.open(os.path.join('feedback', 'engine', 'probe.py'), os.O_WRONLY)", 1, "probe.py"),
    ("def put(path):\n    open(path, 'w')\n\nput('feedback/engine/probe.py')", 2, "probe.py"),
    ("%%writefile feedback/engine/probe.py\nprint(1)", 1, "пишет файл «feedback/engine/probe.py»"),
    ("!mkdir -p feedback && echo x > feedback/engine/probe.py", 1, "команда оболочки"),
    ("!pip install --force-reinstall ./my-feedback", 1, "команда оболочки"),
    # ------------------------------------------------- прочее
    ("import sys\nsys.path.insert(0, '/tmp/pkg')", 2, "sys.path"),
    ("import math\nmath.isclose = lambda *a, **k: True", 2, "меняет модуль math"),
    ("display({'application/vnd.course7.observation+json': {}}, raw=True)", 1, "подделывает"),
    ("get_ipython().run_line_magic('e' + 'nv', 'X=1')", 1, "по вычисляемому имени"),
    ("g = getattr\ng(sys, '_getframe')", 1, "передаёт getattr как значение"),
    ("match x:\n    case flops:\n        pass", 2, "переопределяет имя модуля курса"),
    ("display({'text/html': '<b>ok</b>'}, raw=True)", 1, "raw=True"),
    (
        "class F(float):\n    def __float__(self):\n        return 1.0\n\nx = F(2)",
        1,
        "подменяет поведение чисел",
    ),
]


@pytest.mark.parametrize(("source", "line", "reason"), WALKAROUNDS)
def test_walkarounds_are_findings_with_cell_and_line(source, line, reason):
    found = scan([("ячейка", source)], MODULES, {"generation.generate"}, setup=SETUP)
    assert any(f.line == line and reason in f.reason for f in found), found
    assert all(f.cell == "ячейка" and f.line >= 1 for f in found)
    code = source.splitlines()[line - 1].strip()
    assert any(f.code == code for f in found if f.line == line)


@pytest.mark.parametrize(("source", "line", "reason"), WALKAROUNDS)
def test_walkarounds_are_found_without_the_setup_cells_too(source, line, reason):
    """Так сканер вызывает unit.py, пока не передаёт ячейки подготовки."""
    found = scan([("ячейка", source)], MODULES, {"generation.generate"})
    assert any(f.line == line and reason in f.reason for f in found), found


def test_names_are_followed_across_cells_and_from_the_setup():
    cells = [
        ("первая", "f = flops\nimport builtins"),
        ("вторая", "def g(n):\n    return f.training_flops, getattr(builtins, n)"),
    ]
    found = scan(cells, {"feedback", "flops"}, set(), setup=SETUP)
    second = [(f.line, f.reason) for f in found if f.cell == "вторая"]
    assert any(line == 2 and "feedback.flops.training_flops" in r for line, r in second), found
    assert any(line == 2 and "у модуля builtins" in r for line, r in second), found


def test_setup_tells_course_modules_from_same_named_variables():
    setup = ["from feedback.formatting import bytes_to_gb\nfrom feedback import formatting"]
    modules = course_modules(setup)
    ok = "def f(p, b):\n    return bytes_to_gb(p * b) + formatting.bytes_to_gb(1)"
    assert scan([("c", ok)], modules, set(), setup=setup) == []
    found = scan([("c", "formatting.plural.__wrapped__")], modules, set(), setup=setup)
    assert any("внутренности" in f.reason for f in found)


def test_flooding_a_name_with_junk_does_not_hide_the_course_module():
    junk = "".join(f"m = 'junk{i}'\n" for i in range(200))
    found = findings(junk + "m = flops\nm.training_flops")
    assert any(f.line == 202 and "training_flops" in f.reason for f in found), found


@pytest.mark.parametrize(
    "source",
    [
        "open('data.csv').read()",
        "open('notes.py').read()",
        "with open('results.txt', 'w') as f:\n    f.write('x')",
        "from pathlib import Path\ntext = Path('feedback_notes.txt').read_text()",
        "x = getattr(model, 'backbone')\nfor name in ['a', 'b']:\n    print(getattr(obj, name))",
        "p = 'feedback'\nprint(p.upper())",
        "model.compile(optimizer=optimizer)\nmodel.backbone.enable_lora(rank=4)",
        "import time\nstart = time.time_ns()\nprint(time.time_ns() - start)",
        "display(df)",
        "from IPython.display import HTML, Markdown, display\ndisplay(Markdown('**x**'))",
        "data = sorted(d.items(), key=lambda kv: kv[1])",
        "class Answer:\n    def _repr_html_(self):\n        return '<b>x</b>'\n\nAnswer()",
        "def f(x):\n    return x\n\nf(flops)",
        "import numpy as np\nnp.save('weights.npy', np.zeros(3))",
        "def compute(p, n):\n    total = 0\n    for _ in range(3):\n        total += p * n\n"
        "    return total",
        "import sys\nprint(sys.version, file=sys.stderr)",
        "import os\npath = os.path.join('data', 'x.csv')\nprint(os.path.exists(path))",
        "try:\n    1 / 0\nexcept ZeroDivisionError as error:\n    print(error)",
        "for prompt in prompts:\n    print(generation.generate(model, prompt, 5))",
        "!nvidia-smi\n%timeit -n 1 -r 1 sum([1, 2])",
        "compile_options = {}\nresult = [getattr(x, 'shape') for x in arrays]",
    ],
)
def test_ordinary_code_stays_quiet(source):
    found = scan([("c", source)], MODULES, {"generation.generate"}, setup=SETUP)
    assert found == []
    assert findings(source, allowed={"generation.generate"}) == []


# --------------------------------------------------------------------------- надёжность


@pytest.mark.parametrize(
    "source",
    [
        "def broken(:",
        "x = 1\0",
        "x = " + "(" * 150 + "1" + ")" * 150,
        "x = " + "(" * 300 + "1" + ")" * 300,
        "x = " + "-" * 5000 + "1",
        "x = " + " + ".join(["a"] * 3000),
        "x = a" + ".b" * 3000,
        "x = " + "1 if a else " * 1000 + "2",
        "def f(m):\n    return f(m).x\n\nf(flops)",
        "%%time\ndef broken(:",
        "%%bash\necho hi",
        "getattr(flops, b'x')",
        "a, *b = flops, 1, 2\nb[0].x",
    ],
)
def test_scanner_never_raises(source):
    found = scan([("c", source)], MODULES, set(), setup=SETUP)
    assert isinstance(found, list)
    for prefix in range(0, len(source), max(1, len(source) // 20)):
        assert isinstance(scan([("c", source[:prefix])], MODULES, set()), list)


def test_syntax_errors_are_not_findings():
    assert scan([("c", "def broken(:"), ("d", "x = (")], MODULES, set()) == []


def test_long_data_literals_are_scanned_like_any_cell():
    html = "<b><i><u><s>" * 40_000
    cell = f"from IPython.display import HTML\n\nHTML({html!r})"
    assert scan([("c", cell)], MODULES, set(), setup=SETUP) == []
    found = scan([("c", cell + "\ne = eval")], MODULES, set(), setup=SETUP)
    assert [(f.line, f.reason) for f in found] == [(4, "вычисляет код из строки (eval)")]


def test_huge_cells_are_findings_without_being_parsed():
    huge = "x = 1\n" * 20_000
    found = scan([("c", huge), ("d", "e = eval")], MODULES, set())
    assert [(f.cell, f.line) for f in found] == [("c", 1), ("d", 1)]
    assert "символов" in found[0].reason


def test_convoluted_code_runs_out_of_budget_and_says_so():
    lines = [f"def f(p, q):\n    return p\nv{i} = f(v{i - 1}, [v{i - 2}])" for i in range(2, 600)]
    found = scan([("c", "\n".join(lines))], MODULES, set())
    assert any("запутан" in f.reason for f in found)


def test_a_whole_notebook_is_scanned_in_milliseconds():
    nb = nbformat.read(ROOT / "solutions" / LABS[0] / f"{LABS[0]}.ipynb", as_version=4)
    setup = [c.source for c in nb.cells if c.cell_type == "code" and "nbgrader" not in c.metadata]
    answers = [(str(i), c.source) for i, c in enumerate(nb.cells) if is_answer(c)]
    modules = course_modules(setup)
    scan(answers, modules, set(), setup=setup)  # разбор ячеек кэшируется
    times = []
    for _ in range(5):
        started = time.process_time()
        scan(answers, modules, set(), setup=setup)
        times.append(time.process_time() - started)
    assert sorted(times)[2] < 0.05  # обычно 1–4 мс; порог — с запасом на загруженную машину


@pytest.mark.parametrize(
    ("source", "line", "reason"),
    [
        (
            'import timeit\ntimeit.timeit("""\nimport IPython.display as d\n'
            'd.display = print\n""")',
            4,
            "меняет модуль IPython",
        ),
        ("from timeit import Timer\nTimer('import gc; gc.get_objects()').timeit(1)", 2, "gc"),
        ("import timeit\ntimeit.repeat(setup='import ctypes', stmt='1')", 2, "ctypes"),
        ("import cProfile\ncProfile.run('import sys; sys._getframe()')", 2, "кадры стека"),
        ("import cProfile\ncProfile.Profile().runctx('import inspect', {}, {})", 2, "inspect"),
        ("get_ipython().run_cell('import gc\\ngc.get_referrers(1)')", 1, "gc"),
        ("code = 'flops.check_compute_num_flops = None'\nexec(code)", 2, "меняет модуль курса"),
        ("import pdb\npdb.run('import sys; sys.settrace(None)')", 2, "sys.settrace"),
        (
            'import doctest\n\ndef f():\n    """\n    >>> import sys; sys._getframe(0).f_back\n'
            '    """\n\ndoctest.run_docstring_examples(f, {})',
            5,
            "кадры стека",
        ),
    ],
)
def test_code_run_from_strings_is_read_as_code(source, line, reason):
    """timeit, cProfile, pdb, exec, run_cell и doctest выполнят строку: сканер читает её как код."""
    found = findings(source)
    assert any(item.line == line and reason in item.reason for item in found), found


def test_docstring_examples_without_doctest_are_only_text():
    source = 'def f():\n    """\n    >>> import gc; gc.get_objects()\n    """'
    assert findings(source) == []

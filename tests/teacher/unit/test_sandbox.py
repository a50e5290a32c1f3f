"""Песочница ядра: что код учащегося видит, что может и где его останавливают бюджеты."""

import asyncio
import json
import shutil
import socket
import subprocess
import sys
import time

import nbformat
import pytest

from feedback.settings import REQUIRE_SANDBOX
from feedback.teacher.unit import sandbox
from feedback.teacher.unit.execute import execute
from feedback.teacher.unit.sandbox import Limits, SandboxUnavailable, parse_size, sandbox_mode
from feedback.teacher.unit.warm import kernel_templates

from notebook_runner import ROOT

#: Все тесты песочницы — в одном процессе xdist со своей группой: её процесс берёт её первой и
#: не успевает загрузить JAX (его многопоточный процесс, порождающий песочницы через fork,
#: давал предупреждения «os.fork() … JAX is multithreaded»).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("sandbox")]
BWRAP = shutil.which("bwrap") is not None
needs_bwrap = pytest.mark.skipif(
    not BWRAP and REQUIRE_SANDBOX.read() is not True, reason="нет bubblewrap"
)
FAST = Limits(notebook_seconds=60, cell_seconds=20, memory_bytes=400 * 1024**2)


#: Как запускается ядро: с нуля в песочнице, копией прогретой заготовки в песочнице
#: (feedback.teacher.unit.warm) и без песочницы. Всё, что песочница обещает, проверяется для обоих
#: способов запуска в ней.
MODES = [
    pytest.param("bwrap", marks=needs_bwrap),
    pytest.param("template", marks=needs_bwrap),
    "none",
]
IN_SANDBOX = [pytest.param("bwrap", marks=needs_bwrap), pytest.param("template", marks=needs_bwrap)]


@pytest.fixture(scope="module")
def cpu_template():
    """Заготовка ядер CPU-лабораторных на весь модуль, как её запускает make grade."""
    with kernel_templates(["cpu"], sandbox.template_env) as sockets:
        yield sockets["cpu"]


@pytest.fixture
def start(request):
    """Способ запуска теста (его параметр — из :data:`MODES`): аргументы :func:`execute`."""
    mode = request.param
    if mode == "template":
        return {"mode": "bwrap", "template": request.getfixturevalue("cpu_template")}
    return {"mode": mode}


def execute_as(start, nb, unit, limits, **kwargs):
    """:func:`execute` способом ``start``; ядро из заготовки должно быть именно из неё."""
    execution = execute(nb, unit, start["mode"], limits, template=start.get("template"), **kwargs)
    if start.get("template"):
        assert execution.warm, execution.details
    return execution


def run(tmp_path, *sources, start=None, limits=FAST):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    return execute_as(start or {"mode": "bwrap"}, nb, tmp_path / "unit", limits)


def text(execution, index):
    parts = []
    for output in execution.notebook.cells[index].outputs:
        parts.append(output.get("text", "") or str(output.get("data", "")))
        parts.append(f"{output.get('ename', '')} {output.get('evalue', '')}")
    return "".join(parts)


def test_sizes_are_parsed():
    assert parse_size("2G") == 2 * 1024**3 and parse_size("1536M") == 1536 * 1024**2
    assert parse_size("2.5GiB") == int(2.5 * 1024**3) and parse_size("1000") == 1000


def test_mode_is_explicit_about_missing_bubblewrap(monkeypatch):
    assert sandbox_mode({"COURSE7_SANDBOX": "none"}) == "none"
    assert sandbox_mode({}, platform="darwin") == "none"
    assert "без песочницы" in sandbox.sandbox_warning("none")
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    with pytest.raises(SandboxUnavailable, match="apt-get install bubblewrap"):
        sandbox_mode({}, platform="linux")


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_the_kernel_sees_only_the_system_python_and_the_course_package(
    tmp_path, monkeypatch, start
):
    monkeypatch.setenv("KAGGLE_KEY", "секрет преподавателя")
    secret = ROOT / "solutions"
    (tmp_path / "teacher.txt").write_text("оценки")
    execution = run(
        tmp_path,
        "import os; print(sorted(os.environ))",
        f"print(os.path.exists({str(secret)!r}), os.listdir({str(tmp_path)!r}))",
        "import feedback, pathlib; print(pathlib.Path(feedback.__file__).parent)",
        "open(feedback.__file__, 'a')",
        f"print(sorted(os.listdir({str(ROOT)!r})))",
        "print(sorted(os.listdir(os.path.expanduser('~'))))",
        start=start,
    )
    assert "KAGGLE_KEY" not in text(execution, 0)
    assert text(execution, 1).startswith("False ['unit']")
    assert str(ROOT / "feedback") in text(execution, 2)
    assert "Read-only file system" in text(execution, 3)
    visible = set(eval(text(execution, 4).split("\n")[0]))
    assert "feedback" in visible and not visible & {"solutions", ".git", ".course-work", "tests"}
    assert text(execution, 5).startswith("['.ipython']")  # своя домашняя папка ядра


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_extra_folders_are_visible_read_only_even_under_tmp(tmp_path, start):
    shared = tmp_path / "cache"  # tmp_path лежит в /tmp, который в песочнице свой
    shared.mkdir()
    (shared / "model.txt").write_text("веса")
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(f"print(open({str(shared / 'model.txt')!r}).read())"),
            nbformat.v4.new_code_cell(f"open({str(shared / 'new.txt')!r}, 'w')"),
        ]
    )
    execution = execute_as(start, nb, tmp_path / "unit", FAST, readonly=[str(shared)])
    assert "веса" in text(execution, 0)
    assert "Read-only file system" in text(execution, 1)
    assert not (shared / "new.txt").exists()


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_no_network(tmp_path, start):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    execution = run(
        tmp_path,
        f"import socket\ns = socket.socket()\ntry:\n    s.connect(('127.0.0.1', {port}))\n"
        "    print('connected')\nexcept OSError as e:\n    print('refused', e)",
        start=start,
    )
    server.close()
    assert "refused" in text(execution, 0)


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_nothing_outlives_the_kernel(tmp_path, start):
    marker = tmp_path / "unit" / "home" / "late.txt"
    execution = run(
        tmp_path,
        "import subprocess\nsubprocess.Popen(['sh', '-c', 'sleep 3; echo late > late.txt'],"
        " start_new_session=True)\nprint('started')",
        start=start,
    )
    assert "started" in text(execution, 0)
    time.sleep(4)
    assert not marker.exists()


@pytest.mark.parametrize("start", MODES, indirect=True)
def test_the_kernel_is_stopped_at_once_not_polled(tmp_path, monkeypatch, start):
    """jupyter_client проверяет убитое ядро раз в 0,1 с — лишняя десятая секунды на работу."""
    from feedback.teacher.unit import execute as execute_module

    stopping, slept, kernels = [], [], []
    real_sleep, real_shutdown = asyncio.sleep, execute_module._shutdown

    async def recording_sleep(delay, *args, **kwargs):
        if stopping:
            slept.append(delay)
        return await real_sleep(delay, *args, **kwargs)

    async def watched_shutdown(km):
        stopping.append(True)
        kernels.append((km, km.provisioner.process))
        await real_shutdown(km)
        stopping.clear()

    monkeypatch.setattr(asyncio, "sleep", recording_sleep)
    monkeypatch.setattr(execute_module, "_shutdown", watched_shutdown)
    execution = run(tmp_path, "print('ok')", start=start)
    assert "ok" in text(execution, 0)
    [(km, process)] = kernels
    assert process.returncode is not None  # процесс ядра завершён и собран
    assert km.provisioner is None or km.provisioner.process is None
    assert slept == []


@pytest.mark.parametrize("start", MODES, indirect=True)
def test_memory_budget_stops_the_notebook(tmp_path, start):
    execution = run(
        tmp_path,
        "import numpy as np\nblocks = [np.ones(50 * 1024**2 // 8) for _ in range(40)]",
        "print('after')",
        start=start,
    )
    assert execution.stopped and "памяти" in execution.stopped
    assert execution.status[1] == "not-run"


#: Ячейка, которая не даёт себя прервать: ядро не отвечает на прерывание по лимиту времени.
IGNORES_INTERRUPTS = (
    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass"
)


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_a_loop_that_ignores_interrupts_is_killed(tmp_path, start):
    limits = Limits(notebook_seconds=60, cell_seconds=2, memory_bytes=400 * 1024**2)
    started = time.monotonic()
    execution = run(tmp_path, IGNORES_INTERRUPTS, "print('after')", limits=limits, start=start)
    assert "прерывание" in execution.stopped
    assert time.monotonic() - started < 30


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_a_cell_cut_by_the_notebook_budget_names_the_budget(tmp_path, start):
    """Ячейку оборвал остаток бюджета тетрадки: причина — бюджет, даже если ядро не ответило."""
    limits = Limits(notebook_seconds=3, cell_seconds=60, memory_bytes=400 * 1024**2)
    execution = run(tmp_path, IGNORES_INTERRUPTS, "print('after')", limits=limits, start=start)
    assert "бюджет времени" in execution.stopped and execution.status[1] == "not-run"


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_an_ordinary_hang_is_interrupted_and_the_rest_runs(tmp_path, start):
    limits = Limits(notebook_seconds=60, cell_seconds=2, memory_bytes=400 * 1024**2)
    execution = run(tmp_path, "while True:\n    pass", "print('after')", limits=limits, start=start)
    assert execution.status[0] == "timeout" and "after" in text(execution, 1)


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_the_notebook_budget_covers_all_cells(tmp_path, start):
    limits = Limits(notebook_seconds=6, cell_seconds=20, memory_bytes=400 * 1024**2)
    execution = run(tmp_path, *["import time; time.sleep(2)"] * 6, limits=limits, start=start)
    assert "бюджет времени" in execution.stopped and execution.seconds < 20


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_os_exit_stops_the_notebook_with_a_reason(tmp_path, start):
    execution = run(tmp_path, "import os; os._exit(0)", "print('after')", start=start)
    assert "ядро завершилось" in execution.stopped and execution.status[1] == "not-run"


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_huge_output_is_truncated_and_a_flood_stops_the_run(tmp_path, start):
    execution = run(tmp_path, "print('я' * 5_000_000)", "print('after')", start=start)
    assert len(text(execution, 0)) < 3 * 1024**2 and "обрезан" in text(execution, 0)
    assert "after" in text(execution, 1)
    limits = Limits(notebook_seconds=60, cell_seconds=20, memory_bytes=2 * 1024**3)
    flood = run(
        tmp_path,
        "for _ in range(500):\n    print('x' * 1_000_000)",
        "print('after')",
        limits=limits,
        start=start,
    )
    assert "слишком много" in flood.stopped


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_writing_big_files_is_stopped(tmp_path, start):
    execution = run(
        tmp_path,
        "for i in range(100):\n    open(f'f{i}', 'wb').write(b'0' * 10 * 1024**2)",
        "print('after')",
        start=start,
    )
    assert execution.stopped or "File too large" in text(execution, 0)


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_the_kernel_runs_on_the_cpus_it_was_given(tmp_path, start):
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("import os; print(sorted(os.sched_getaffinity(0)))")]
    )
    execution = execute_as(start, nb, tmp_path / "unit", FAST, cpus=[0])
    assert text(execution, 0).startswith("[0]")


PROCESS_TRACES = """import os
found = []
# Без песочницы видны все процессы машины, в том числе сам make grade с окружением
# преподавателя (изоляции нет — об этом предупреждение): тогда смотрим своё ядро.
pids = [p for p in os.listdir('/proc') if p.isdigit()] if SANDBOXED else [str(os.getpid())]
for pid in pids:
    for name in ('environ', 'cmdline'):
        try:
            found.append(open(f'/proc/{pid}/{name}', 'rb').read().decode('utf-8', 'replace'))
        except OSError as error:
            found.append(f'{pid}/{name}: {error}')
    try:
        for fd in os.listdir(f'/proc/{pid}/fd'):
            found.append(os.readlink(f'/proc/{pid}/fd/{fd}'))
    except OSError as error:
        found.append(f'{pid}/fd: {error}')
print(len(found), 'MARKER' in ''.join(found))
print('\\n'.join(found))
"""

PROCESS_UMASKS = """import os
pids = [p for p in os.listdir('/proc') if p.isdigit()] if SANDBOXED else [str(os.getpid())]
masks = set()
for pid in pids:
    try:
        lines = open(f'/proc/{pid}/status').read().splitlines()
    except OSError:
        continue
    masks |= {line.split()[1] for line in lines if line.startswith('Umask:')}
print(sorted(masks))
"""


@pytest.mark.parametrize("start", MODES, indirect=True)
def test_no_process_in_the_sandbox_keeps_the_teachers_environment(tmp_path, monkeypatch, start):
    """Ни /proc/*/environ, ни /proc/*/cmdline, ни дескрипторы не выдают переменных преподавателя.

    Процесс 1 песочницы — сам bwrap: раньше у него оставалось всё окружение преподавателя.
    """
    monkeypatch.setenv("COURSE7_TEACHER_SECRET", "MARKER-секрет-преподавателя")
    monkeypatch.setenv("KAGGLE_KEY", "MARKER-kaggle")
    execution = run(
        tmp_path,
        f"SANDBOXED = {start['mode'] == 'bwrap'}\n" + PROCESS_TRACES,
        f"SANDBOXED = {start['mode'] == 'bwrap'}\n" + PROCESS_UMASKS,
        "import os; print(os.getcwd(), oct(os.umask(0)))",
        start=start,
    )
    seen = text(execution, 0)
    count, leaked = seen.split("\n")[0].split()
    assert int(count) >= 3 and leaked == "False", seen
    assert "MARKER" not in seen and "KAGGLE_KEY" not in seen
    # stdout и stderr ядра — не терминал преподавателя: ни tty, ни pty
    assert "/dev/pts" not in seen and "/dev/tty" not in seen
    # umask 077 у каждого процесса песочницы, начиная с самого bwrap: его ставит Popen
    # между fork и exec, без кода Python в дочернем процессе
    assert text(execution, 1).split() == ["['0077']"], text(execution, 1)
    cwd, umask = text(execution, 2).split()[:2]
    assert cwd == str(tmp_path / "unit" / "home") and umask == "0o77"


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_the_sandbox_has_no_reference_answers_and_no_grading_code(tmp_path, start):
    """Эталоны (feedback.answers) и программа оценивания в песочнице — пустые папки."""
    answers, teacher = ROOT / "feedback" / "answers", ROOT / "feedback" / "teacher"
    assert (answers / "flops.py").is_file() and (teacher / "unit" / "score.py").is_file()
    execution = run(
        tmp_path,
        f"import os\nprint(os.listdir({str(answers)!r}), os.listdir({str(teacher)!r}))",
        "from feedback import flops\ntry:\n    flops.training_flops\n"
        "except Exception as error:\n    print(type(error).__name__)",
        "from feedback.engine.graded import find\ntask = find('flops.check_compute_num_flops')"
        ".judge.__self__\ntry:\n    task.formula\nexcept Exception as error:\n"
        "    print(type(error).__name__)",
        "print(find('flops.check_compute_num_flops').observe(lambda p, n: 6 * p * n))",
        f"open({str(answers / 'flops.py')!r}, 'w')",
        start=start,
    )
    assert text(execution, 0).startswith("[] []")
    assert text(execution, 1).split()[0] in ("ImportError", "AttributeError")
    assert text(execution, 2).startswith("AnswersUnavailable")
    assert "'calls'" in text(execution, 3)  # наблюдение по-прежнему снимается
    assert "Read-only file system" in text(execution, 4)


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_every_check_observes_in_the_sandbox_but_none_can_be_judged_there(tmp_path, start):
    """Все проверки курса: наблюдение снимается, а вердикт без эталонов — только отказ.

    Ответы в сценарии верные: без песочницы, с эталонами, они проходят
    (``tests/engine/test_graded.py::test_without_answers_every_check_observes_but_none_passes``).
    Здесь тот же вызов ``judge_envelope``, ``judge`` и самой проверки из кода учащегося
    не даёт зачёта ни одной проверке.
    """
    from tests.engine.test_graded import (
        VERDICTS_SCRIPT,
        assert_no_verdict_without_answers,
        verdicts,
    )

    execution = run(tmp_path, VERDICTS_SCRIPT, start=start)
    assert "VERDICTS " in text(execution, 0), text(execution, 0)[-3000:]
    assert_no_verdict_without_answers(verdicts(text(execution, 0)))


@pytest.mark.parametrize("where", ["home", "/tmp", "/dev/shm"])
@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_many_empty_files_are_stopped_anywhere_in_the_sandbox(tmp_path, where, start):
    """Пустые файлы не занимают места, но занимают память ядра ОС: их число тоже в бюджете."""
    limits = Limits(notebook_seconds=60, cell_seconds=30, memory_bytes=400 * 1024**2, files=2000)
    folder = "." if where == "home" else where
    execution = run(
        tmp_path,
        f"import os\nfor i in range(100_000):\n    open(os.path.join({folder!r}, f'e{{i}}'), 'w')",
        "print('after')",
        limits=limits,
        start=start,
    )
    assert execution.stopped and "файлов и папок" in execution.stopped


GUARDED_CELLS = [
    "import sys, gc\nframe = sys._getframe()\ncount = len(gc.get_objects())",
    "from concurrent.futures import ThreadPoolExecutor\n"
    "print(ThreadPoolExecutor(2).submit(sum, [1, 2]).result())",
    "import os\nos.makedirs('feedback/engine', exist_ok=True)\ntry:\n"
    "    open('feedback/engine/probe.py', 'w').write('подделка')\n"
    "except PermissionError as error:\n"
    "    print('отказано', error)",
    "import sys\nimport feedback\nprint(sys.flags.safe_path, '' in sys.path, feedback.__file__)",
    "import collections\nprint(collections.namedtuple('P', 'a b')(1, 2))",  # честный код
    "import os, sys\nfor fd in map(int, os.listdir('/proc/self/fd')):\n    try:\n"
    "        os.ftruncate(fd, 0)\n    except OSError:\n        pass\n"
    "sys.addaudithook(lambda *args: print('чужой перехватчик'))\nopen('x', 'w').close()",
    "from feedback import kernel_guard\nkernel_guard.probe_ran('check_x', 'метка', 'отпечаток')",
]


@pytest.mark.parametrize("start", MODES, indirect=True)
def test_the_guard_records_what_learner_cells_do_and_refuses_a_shadow_package(tmp_path, start):
    """Запись ядра (feedback.kernel_guard): события ячеек с файлом и строкой; подлог — отказ."""
    from feedback.teacher.unit.pipeline import cell_file_name

    execution = run(tmp_path, *GUARDED_CELLS, start=start)
    assert "отказано подкладывает свой пакет курса" in text(execution, 2)
    assert text(execution, 3).startswith(f"True False {ROOT / 'feedback' / '__init__.py'}")
    assert "P(a=1, b=2)" in text(execution, 4)
    assert "чужой перехватчик" not in text(execution, 5)  # свой перехватчик не поставить
    events = {
        (entry["event"], entry.get("file"), entry.get("line"))
        for entry in execution.record
        if entry["event"] != "course7.start"
    }
    files = [cell_file_name(source) for source in GUARDED_CELLS]
    assert ("sys._getframe", files[0], 2) in events and ("gc.get_objects", files[0], 3) in events
    assert ("course7.thread", files[1], 2) in events
    assert ("open", files[2], 4) in events
    assert ("sys.addaudithook", files[5], 7) in events
    assert not [event for event in events if event[1] == files[4]]  # namedtuple — не повод
    assert execution.record[0] == {"event": "course7.start"}  # ftruncate записи не стёр
    assert ("course7.forged_mark", files[6], 2) in events  # отметку ставит только зонд
    assert not [entry for entry in execution.record if entry["event"] == "course7.probe"]


#: Тот же обход кадров и сборщика мусора, но из строк: timeit, doctest, cProfile, exec.
FROM_STRINGS = [
    "import timeit\n\ntimeit.timeit('import sys; sys._getframe()', number=1)",
    'import doctest\n\n\ndef _walk():\n    """\n    >>> import gc\n'
    '    >>> _ = gc.get_objects()\n    """\n\n\ndoctest.run_docstring_examples(_walk, {})',
    "import cProfile\ncProfile.run('import sys; sys._getframe()')",
    "exec(compile('def f():\\n    import gc\\n    return gc.get_objects()', 'x', 'exec'))\n"
    "print(len(f()) > 0)",
    "get_ipython().run_cell('import sys; frame = sys._getframe()')",
]


@pytest.mark.slow  # три ядра: в полном прогоне
@pytest.mark.parametrize("start", MODES, indirect=True)
def test_code_a_cell_runs_from_a_string_is_recorded_as_that_cell(tmp_path, start):
    """Код из строки — события ячейки, которая его выполнила (строка вызова), или ячейки,
    которой нет в тетрадке (``run_cell``): запись ядра ничего из этого не теряет."""
    from feedback.teacher.unit.pipeline import cell_file_name

    execution = run(tmp_path, *FROM_STRINGS, start=start)
    assert "True" in text(execution, 3)
    events = {
        (entry["event"], entry.get("file"), entry.get("line"))
        for entry in execution.record
        if entry["event"] != "course7.start"
    }
    files = [cell_file_name(source) for source in FROM_STRINGS]
    assert ("sys._getframe", files[0], 3) in events
    assert ("gc.get_objects", files[1], 11) in events
    assert ("sys._getframe", files[2], 2) in events
    assert ("gc.get_objects", files[3], 1) in events  # функция из строки, вызванная позже
    strangers = {event[1] for event in events if event[0] == "sys._getframe"} - set(files)
    assert strangers, events  # ячейка run_cell: своё имя файла, которого нет в тетрадке


@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_folders_mounted_into_the_sandbox_tmp_do_not_count_against_its_budget(tmp_path, start):
    """Окружение или кэш под /tmp (так бывает в CI) смонтированы в /tmp песочницы: не в счёт."""
    shared = tmp_path / "venv-like"  # tmp_path лежит в /tmp
    shared.mkdir()
    for index in range(3000):
        (shared / f"module{index}.py").write_text("")
    limits = Limits(notebook_seconds=60, cell_seconds=20, memory_bytes=400 * 1024**2, files=2000)
    nb = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("import time\ntime.sleep(1.5)\nprint('ok')")]
    )
    execution = execute_as(start, nb, tmp_path / "unit", limits, readonly=[str(shared)])
    assert execution.stopped is None and "ok" in text(execution, 0)


TEMPLATE_CHILD = """import os, subprocess, sys
print(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))
print([line.split()[1] for line in open('/proc/self/status') if line.startswith('Cap')])
print(subprocess.run(['unshare', '-U', 'true'], capture_output=True).returncode != 0)
hidden = ('feedback.answers', 'feedback.teacher')
print(sorted(name for name in sys.modules if name.startswith(hidden)))
"""


@needs_bwrap
def test_a_kernel_from_the_template_has_no_privileges_and_sees_only_its_sandbox(
    tmp_path, cpu_template
):
    """Копия заготовки — только в песочнице: ни заготовки, ни прав, ни новых пространств имён."""
    start = {"mode": "bwrap", "template": cpu_template}
    execution = run(
        tmp_path, TEMPLATE_CHILD, f"import os; print(os.path.exists({cpu_template!r}))", start=start
    )
    pids, caps, no_userns, modules = text(execution, 0).splitlines()[:4]
    assert max(eval(pids)) < 20  # своё пространство процессов: bwrap, sleep, ядро и его дети
    assert set(eval(caps)) == {"0000000000000000"}
    assert no_userns == "True" and modules == "[]"
    assert text(execution, 1).startswith("False")


@needs_bwrap
def test_what_one_work_changes_in_a_template_kernel_does_not_reach_the_next(tmp_path, cpu_template):
    start = {"mode": "bwrap", "template": cpu_template}
    first = run(
        tmp_path / "a",
        "import pandas, random\npandas.DataFrame.__init__ = None\n"
        "open('/tmp/note', 'w').write('от первой работы')\nprint(random.random())",
        start=start,
    )
    second = run(
        tmp_path / "b",
        "import os, pandas, random\nprint(pandas.DataFrame.__init__ is not None,"
        " os.path.exists('/tmp/note'), random.random())",
        start=start,
    )
    assert first.warm and second.warm
    same_init, note, number = text(second, 0).split()[:3]
    assert same_init == "True" and note == "False"
    assert number != text(first, 0).split()[0]  # своё зерно, как у нового процесса


def test_a_missing_template_falls_back_to_a_fresh_kernel(tmp_path):
    if not BWRAP:
        pytest.skip("нет bubblewrap")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print('ok')")])
    execution = execute(nb, tmp_path / "unit", "bwrap", FAST, template=str(tmp_path / "нет"))
    assert "ok" in text(execution, 0) and not execution.warm
    assert "без заготовки" in " ".join(execution.details)


#: Копия заготовки, запускаясь ядром, импортирует заново только мелочь: всё заметное
#: (отладчик debugpy, история на sqlite3, psutil, pdb) заготовка импортировала заранее.
KERNEL_START = """
import json, os, sys, tempfile
from feedback.kernel_template import preload
preload("cpu")
threads = len(os.listdir("/proc/self/task"))
folder = tempfile.mkdtemp()
connection = os.path.join(folder, "kernel.json")
with open(connection, "w") as fh:
    json.dump({"transport": "ipc", "ip": os.path.join(folder, "k"), "key": "k"}, fh)
before = set(sys.modules)
read, write = os.pipe()
if os.fork() == 0:
    from ipykernel import kernelapp
    kernelapp.IPKernelApp.instance().initialize(["-f", connection])
    os.write(write, json.dumps(sorted(set(sys.modules) - before)).encode())
    os._exit(0)
os.close(write)
with os.fdopen(read) as pipe:
    new = json.loads(pipe.read())
os.waitpid(-1, 0)
print(json.dumps({"threads": threads, "new": new}))
"""


def test_the_template_is_one_thread_and_imports_what_a_kernel_start_needs(tmp_path):
    """Заготовка однопоточна (fork многопоточного процесса опасен) и прогрета для ядра."""
    env = sandbox.template_env(tmp_path)
    out = subprocess.run(
        [sys.executable, "-P", "-c", KERNEL_START],
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found["threads"] == 1
    heavy = {"debugpy", "sqlite3", "psutil", "pdb", "pydevd", "IPython.core.interactiveshell"}
    assert not heavy & ({name.split(".")[0] for name in found["new"]} | set(found["new"]))
    assert len(found["new"]) < 20, found["new"]

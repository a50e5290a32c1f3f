"""Бюджеты, которые работа не обойдёт: всё, что она держит, — в счёте, и держит это ядро Linux.

Три обхода из разбора безопасности (issue 41): файл, удалённый, но открытый в папке работы,
запись в корень песочницы и в её tmpfs, буферы ``memfd_create``. Каждый раз работа пытается
занять намного больше бюджета; тест следит за свободным местом на диске преподавателя и
доступной памятью машины *во время* оценивания и проверяет, что они сдвинулись не больше чем на
бюджет (с запасом на шум соседних процессов), а в problems.csv работы — понятная строка.
"""

import os
import threading
from dataclasses import replace

import nbformat
import pytest
from corpus import LAB2, lab2, with_cell

from feedback.settings import REQUIRE_SANDBOX
from feedback.teacher.core.results import Job
from feedback.teacher.core.settings import Limits
from feedback.teacher.unit import pipeline as unit
from feedback.teacher.unit import sandbox
from feedback.teacher.unit.cgroup import memory_cage
from feedback.teacher.unit.execute import execute
from feedback.teacher.unit.warm import kernel_templates

from notebook_runner import ROOT
from submissions import load

#: Ядра — в одном процессе xdist с тестами песочницы (см. tests/teacher/unit/test_sandbox.py).
pytestmark = pytest.mark.xdist_group("sandbox")
MIB = 1024**2
BWRAP = sandbox.shutil.which("bwrap") is not None
needs_bwrap = pytest.mark.skipif(
    not BWRAP and REQUIRE_SANDBOX.read() is not True, reason="нет bubblewrap"
)
IN_SANDBOX = [pytest.param("bwrap", marks=needs_bwrap), pytest.param("template", marks=needs_bwrap)]
#: Маленькие бюджеты: обход пытается занять в десятки раз больше.
LIMITS = Limits(notebook_seconds=60, cell_seconds=30, memory_bytes=256 * MIB, disk_bytes=64 * MIB)
#: Запас на шум: другие процессы машины (и соседние тесты) тоже берут память и пишут на диск.
#: Каждый обход пытается занять намного больше, чем бюджет и этот запас вместе.
NOISE = 512 * MIB
_PROBE = memory_cage(MIB)  # только проверка, что группу можно создать: сама она не нужна
CAGED = _PROBE is not None
if _PROBE is not None:
    _PROBE.close()
RELEASE = load(ROOT / "notebooks" / LAB2 / f"{LAB2}.ipynb")


class HostWatch(threading.Thread):
    """Минимум свободного места (файловая система ``folder``) и доступной памяти за время теста."""

    def __init__(self, folder):
        super().__init__(daemon=True)
        self.folder = folder
        self.disk_before = self.disk_min = self._disk()
        self.memory_before = self.memory_min = self._memory()
        self._done = threading.Event()

    def _disk(self) -> int:
        fs = os.statvfs(self.folder)
        return fs.f_bavail * fs.f_frsize

    @staticmethod
    def _memory() -> int:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
        raise AssertionError("в /proc/meminfo нет MemAvailable")

    def run(self):
        while not self._done.wait(0.01):
            self.disk_min = min(self.disk_min, self._disk())
            self.memory_min = min(self.memory_min, self._memory())

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self.join()

    @property
    def disk_taken(self) -> int:
        return self.disk_before - self.disk_min

    @property
    def memory_taken(self) -> int:
        return self.memory_before - self.memory_min


@pytest.fixture(scope="module")
def cpu_template(tmp_path_factory):
    """Заготовка, уже импортировавшая библиотеки: её импорт — не память работы."""
    with kernel_templates(["cpu"], sandbox.template_env) as sockets:
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1")])
        unit_dir = tmp_path_factory.mktemp("warm") / "unit"
        assert execute(nb, unit_dir, "bwrap", LIMITS, template=sockets["cpu"]).warm
        yield sockets["cpu"]


@pytest.fixture
def start(request):
    """Как запускается ядро: с нуля в песочнице, из заготовки или без песочницы."""
    if request.param == "template":
        return {"sandbox": "bwrap", "kernel_template": request.getfixturevalue("cpu_template")}
    return {"sandbox": request.param}


def grade(tmp_path, source: str, start: dict, limits: Limits = LIMITS):
    """Единица оценивания работы 7.2 с ячейкой ``source``; и как сдвинулись диск и память."""
    job = Job(
        student="ivanov",
        lab=LAB2,
        file=f"{LAB2}.ipynb",
        release=RELEASE,
        upload=with_cell(lab2(), source),
        seed="s",
        limits=limits,
        unit_dir=str(tmp_path / "unit"),
        **start,
    )
    with HostWatch(tmp_path) as host:
        result = unit.run_unit(job)
    return result, host


def stopped_for(result, reason: str) -> bool:
    return any(p.startswith("Выполнение остановлено: ") and reason in p for p in result.problems)


DELETED_BUT_OPEN = """import os
held = []
for i in range(20):
    f = open(f'held{i}', 'wb')
    os.unlink(f'held{i}')
    held.append(f)
    for _ in range(60):
        f.write(b'0' * 1024**2)
    f.flush()
"""


@pytest.mark.slow  # ядро на каждый случай
@pytest.mark.parametrize("start", [*IN_SANDBOX, "none"], indirect=True)
def test_a_deleted_but_open_file_counts_against_the_disk_budget(tmp_path, start):
    """1200 МиБ в удалённых, но открытых файлах папки работы при бюджете 64 МиБ."""
    result, host = grade(tmp_path, DELETED_BUT_OPEN, start)
    assert stopped_for(result, "записано больше 64 МиБ"), result.problems
    assert host.disk_taken < LIMITS.disk_bytes + NOISE, host.disk_taken / MIB
    assert host.memory_taken < LIMITS.memory_bytes + NOISE, host.memory_taken / MIB


#: То же в папке сокетов ядра: её ядро видит с правом записи, и она — вне песочницы.
IN_SOCKET_FOLDER = DELETED_BUT_OPEN.replace(
    "held = []",
    "from ipykernel import get_connection_file\n"
    "os.chdir(os.path.dirname(get_connection_file()))\nheld = []",
)


@pytest.mark.slow  # ядро на каждый случай
@pytest.mark.parametrize("start", [*IN_SANDBOX, "none"], indirect=True)
def test_deleted_files_in_the_socket_folder_take_no_disk_and_stop_the_work(tmp_path, start):
    """Папка сокетов — в /dev/shm: удалённые в ней файлы — память работы, а не диск машины.

    Бюджет диска здесь больше бюджета памяти: на диске эти файлы успели бы занять его весь.
    """
    limits = replace(LIMITS, disk_bytes=1024 * MIB)
    result, host = grade(tmp_path, IN_SOCKET_FOLDER, start, limits)
    reason = "превышен бюджет памяти" if CAGED else "записано больше 1024 МиБ"
    assert stopped_for(result, reason), result.problems
    assert host.disk_taken < NOISE, host.disk_taken / MIB
    if CAGED:
        assert host.memory_taken < LIMITS.memory_bytes + NOISE, host.memory_taken / MIB


ROOT_WRITE = """import os
for place in ('/', '/dev/', '/usr/', '/etc/'):
    try:
        for i in range(10):
            with open(f'{place}big{i}', 'wb') as f:
                for _ in range(60):
                    f.write(b'0' * 1024**2)
    except OSError as error:
        print(place, 'отказано:', error.strerror)
"""


@pytest.mark.slow  # ядро на каждый случай
@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_the_sandbox_root_and_dev_are_read_only(tmp_path, start):
    """Корень песочницы (tmpfs bwrap без предела), /etc и /dev: запись отказана сразу."""
    result, host = grade(tmp_path, ROOT_WRITE, start)
    shown = str(result.autograded)
    for place in ("/", "/dev/", "/usr/", "/etc/"):
        assert f"{place} отказано: Read-only file system" in shown
    assert host.memory_taken < LIMITS.memory_bytes + NOISE, host.memory_taken / MIB


@pytest.mark.slow  # ядро на каждый случай
@pytest.mark.parametrize("place", ["/tmp", "/dev/shm", "."])
@pytest.mark.parametrize("start", IN_SANDBOX, indirect=True)
def test_the_sandbox_tmpfs_are_sized_to_the_disk_budget(tmp_path, start, place):
    """800 МиБ в /tmp, /dev/shm или папку работы (всё это tmpfs — память машины)."""
    source = (
        f"with open({place!r} + '/big', 'wb') as f:\n"
        "    for _ in range(800):\n        f.write(b'0' * 1024**2)"
    )
    result, host = grade(tmp_path, source, start)
    assert stopped_for(result, "записано больше 64 МиБ"), result.problems
    assert host.memory_taken < LIMITS.memory_bytes + NOISE, host.memory_taken / MIB


#: Буферы по 60 МиБ: один буфер больше бюджета диска не даёт RLIMIT_FSIZE.
MEMFD = """import os
buffers = []
for i in range(34):
    buffers.append(os.memfd_create(f'buffer{i}'))
    for _ in range(60):
        os.write(buffers[-1], b'0' * 1024**2)
"""


@pytest.mark.slow  # ядро на каждый случай
@pytest.mark.parametrize("start", [*IN_SANDBOX, "none"], indirect=True)
def test_memfd_buffers_count_against_the_memory_budget(tmp_path, start):
    """2040 МиБ в буферах memfd_create при бюджете памяти 256 МиБ (RLIMIT_AS его не видит)."""
    result, host = grade(tmp_path, MEMFD, start)
    assert stopped_for(result, "превышен бюджет памяти"), result.problems
    if CAGED:  # предел держит ядро Linux; без группы — сторож, с опозданием до доли секунды
        assert host.memory_taken < LIMITS.memory_bytes + NOISE, host.memory_taken / MIB


@pytest.mark.slow
@pytest.mark.skipif(not CAGED, reason="нет контрольной группы памяти")
def test_the_memory_group_of_a_work_is_gone_after_it(tmp_path, monkeypatch):
    """Группа работы убрана вместе с её процессами: ничего не копится от работы к работе.

    Смотрим на группу именно этой работы: соседние процессы тестов оценивают свои работы и
    заводят и убирают свои группы в той же родительской.
    """
    from feedback.teacher.unit import cgroup, execute

    made = []

    def recorded_cage(*args, **kwargs):
        cage = cgroup.memory_cage(*args, **kwargs)
        if cage is not None:
            made.append(cage.path)
        return cage

    monkeypatch.setattr(execute, "memory_cage", recorded_cage)
    result, _ = grade(tmp_path, MEMFD, {"sandbox": "none"}, replace(LIMITS, memory_bytes=200 * MIB))
    assert stopped_for(result, "превышен бюджет памяти")
    assert made and made[0].parent == sandbox_group_parent()
    assert not any(path.exists() for path in made)


def sandbox_group_parent():
    from feedback.teacher.unit.cgroup import own_memory_group

    return own_memory_group()[0]


def fake_proc(tmp_path, cgroup: str, mounts: list[str]):
    """``/proc/self`` с этими строками ``cgroup`` и точками монтирования cgroupfs в ``tmp_path``."""
    proc = tmp_path / "proc"
    proc.mkdir(parents=True)
    (proc / "cgroup").write_text(cgroup)
    lines = [f"{30 + i} 1 0:{40 + i} {line}" for i, line in enumerate(mounts)]
    (proc / "mountinfo").write_text("\n".join(lines) + "\n")
    return proc


def test_the_own_memory_group_is_found_in_v1_v2_and_inside_a_container(tmp_path):
    from feedback.teacher.unit.cgroup import own_memory_group

    v1 = tmp_path / "memory"
    (v1 / "user" / "grading").mkdir(parents=True)
    proc = fake_proc(
        tmp_path,
        "9:name=systemd:/\n4:cpu,memory:/user/grading\n0::/\n",
        [f"/ {v1} rw - cgroup cgroup rw,cpu,memory", f"/ {tmp_path} rw - cgroup2 cgroup2 rw"],
    )
    assert own_memory_group(proc) == (v1 / "user" / "grading", 1)

    v2 = tmp_path / "unified"
    (v2 / "job").mkdir(parents=True)
    (v2 / "job" / "cgroup.controllers").write_text("cpu memory pids\n")
    # В контейнере корень иерархии — его собственная группа, а не «/».
    proc = fake_proc(
        tmp_path / "c", "0::/docker/abc/job\n", [f"/docker/abc {v2} rw - cgroup2 cgroup2 rw"]
    )
    assert own_memory_group(proc) == (v2 / "job", 2)

    proc = fake_proc(
        tmp_path / "d", "0::/elsewhere\n", [f"/docker/abc {v2} rw - cgroup2 cgroup2 rw"]
    )
    assert own_memory_group(proc) is None


def test_no_memory_group_without_a_delegated_memory_controller(tmp_path):
    """cgroup v2, где своя группа не раздаёт контроллер памяти: клетки нет, папка не создана."""
    v2 = tmp_path / "unified"
    (v2 / "job").mkdir(parents=True)
    (v2 / "job" / "cgroup.controllers").write_text("cpu memory\n")
    (v2 / "job" / "cgroup.subtree_control").write_text("cpu\n")
    proc = fake_proc(tmp_path / "c", "0::/job\n", [f"/ {v2} rw - cgroup2 cgroup2 rw"])
    assert memory_cage(MIB, proc) is None
    assert sorted(path.name for path in (v2 / "job").iterdir()) == [
        "cgroup.controllers",
        "cgroup.subtree_control",
    ]

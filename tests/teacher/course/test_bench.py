"""make bench: цена работы без разовых расходов, группы тестов из JUnit, таблица."""

from __future__ import annotations

import json

from feedback.teacher.course import bench

JUNIT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.test_grading" name="a" time="100.5"/>
<testcase classname="tests.test_grading" name="b" time="20.0"/>
<testcase classname="tests.test_flops" name="c" time="1.25"/>
<testcase classname="solutions.lab_7_2_training_flops.lab_7_2_training_flops" name="d" time="30"/>
</testsuite></testsuites>
"""


def test_per_submission_excludes_the_fixed_cost(tmp_path, monkeypatch):
    fixed, each = 3.0, 1.5
    seen_env = []

    def fake_command(folder, jobs=1, **env):
        seen_env.append(env)
        return fixed + each * len(list(folder.iterdir()))

    monkeypatch.setattr(bench, "_timed_command", fake_command)
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    lab = tmp_path / "solutions" / "lab_x" / "lab_x.ipynb"
    lab.parent.mkdir(parents=True)
    lab.write_text("{}")
    runners = {"bare": bench.make_grade(1, COURSE7_SANDBOX="none")}
    measured = bench._per_submission(tmp_path / "work", "lab_x", 5, runners, repeats=1)
    assert measured == {"bare": (each, fixed)}
    assert seen_env == [{"COURSE7_SANDBOX": "none"}] * 2


def test_per_submission_takes_the_fastest_of_the_repeats(tmp_path, monkeypatch):
    """Медленный замер (машину заняли соседи) не в счёт: берётся самый быстрый."""
    calls = []

    def noisy_command(folder, jobs=1, **env):
        calls.append((folder.name, jobs))
        slowdown = 10.0 if len(calls) <= 4 else 0.0  # первый круг — помеха
        return 3.0 + 1.5 * len(list(folder.iterdir())) / jobs + slowdown

    monkeypatch.setattr(bench, "_timed_command", noisy_command)
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    lab = tmp_path / "solutions" / "lab_x" / "lab_x.ipynb"
    lab.parent.mkdir(parents=True)
    lab.write_text("{}")
    runners = {"one": bench.make_grade(1), "two": bench.make_grade(2)}
    measured = bench._per_submission(tmp_path / "work", "lab_x", 5, runners, repeats=2)
    assert measured == {"one": (1.5, 3.0), "two": (0.75, 3.0)}
    # JOBS=1 и JOBS=2 чередуются: оба видят одни и те же минуты работы машины.
    rounds = [("half", 1), ("full", 1), ("half", 2), ("full", 2)]
    assert calls == rounds * 2


def test_group_times_sum_by_file_and_sort_slowest_first(tmp_path):
    junit = tmp_path / "times.xml"
    junit.write_text(JUNIT)
    rows = bench.group_times((junit, tmp_path / "missing.xml"))
    assert rows == [
        ("Тесты: test_grading", "120.5 с"),
        ("Тесты: lab_7_2_training_flops", "30.0 с"),
        ("Тесты: test_flops", "1.2 с"),
    ]


def test_a_shared_fixture_is_billed_to_its_own_group_not_to_the_first_test(tmp_path):
    """Класс, оценённый один раз, — не время теста formgrader, который попросил его первым."""
    junit = tmp_path / "times.xml"
    junit.write_text(JUNIT)
    records = [
        {"fixture": "graded_class", "test": "tests/test_grading.py::test_a", "seconds": 90.0},
        {"fixture": "graded_class", "test": "tests/test_flops.py::test_c", "seconds": 1.0},
    ]
    (tmp_path / "times.fixtures-gw0.json").write_text(json.dumps(records[:1]))
    (tmp_path / "times.fixtures-gw1.json").write_text(json.dumps(records[1:]))
    (tmp_path / "other.fixtures-gw0.json").write_text(json.dumps(records))  # чужой отчёт
    rows = bench.group_times((junit,))
    assert rows == [
        ("Тесты: фикстура graded_class", "91.0 с"),
        ("Тесты: test_grading", "30.5 с"),
        ("Тесты: lab_7_2_training_flops", "30.0 с"),
        ("Тесты: test_flops", "0.2 с"),
    ]


def test_a_test_in_a_package_folder_is_grouped_by_its_file(tmp_path):
    """Тесты повторяют пакет (tests/teacher/<комната>/…): группа — файл, а не первая папка."""
    junit = tmp_path / "times.xml"
    junit.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.teacher.grading.test_grade" name="a" time="2.0"/>'
        '<testcase classname="tests.teacher.hub.test_server" name="b" time="1.0"/>'
        '<testcase classname="tests.teacher.hub.test_server.TestHub" name="c" time="1.0"/>'
        "</testsuite></testsuites>"
    )
    (tmp_path / "times.fixtures-gw0.json").write_text(
        json.dumps(
            [
                {
                    "fixture": "graded_class",
                    "test": "tests/teacher/grading/test_grade.py::test_a",
                    "seconds": 1.5,
                }
            ]
        )
    )
    assert bench.group_times((junit,)) == [
        ("Тесты: teacher/hub/test_server", "2.0 с"),
        ("Тесты: фикстура graded_class", "1.5 с"),
        ("Тесты: teacher/grading/test_grade", "0.5 с"),
    ]


def test_group_times_say_how_to_get_a_report(tmp_path):
    assert "make test" in bench.group_times((tmp_path / "none.xml",))[0][1]


def test_table_is_markdown_with_aligned_names():
    lines = bench.table([("Короткое", "1 с"), ("Название длиннее", "2,5×")]).splitlines()
    assert lines[0].startswith("| Что измерено")
    assert lines[2] == "| Короткое         | 1 с |"
    assert len({line.index("|", 2) for line in lines}) == 1


def test_measure_prints_costs_speed_up_and_the_sandbox_share(tmp_path, monkeypatch):
    costs = {"lab_cpu": 1.0, "lab_gpu": 8.0}  # секунд на работу при JOBS=1 с песочницей

    def model_command(folder, jobs=1, **env):
        works = list(folder.glob("*/*/*.ipynb"))
        each = sum(costs[path.parent.name] for path in works) / jobs
        return 3.0 + each - (0.25 * len(works) if env.get("COURSE7_SANDBOX") == "none" else 0)

    def plain_nbgrader(lab, root):  # обычный nbgrader: 4 с на работу
        return lambda folder: 5.0 + 4.0 * len(list(folder.glob("*/*/*.ipynb")))

    monkeypatch.setattr(bench, "_timed_command", model_command)
    monkeypatch.setattr(bench, "plain_nbgrader", plain_nbgrader)
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(tmp_path / "work"))  # measure() его меняет
    for lab in costs:
        source = tmp_path / "solutions" / lab / f"{lab}.ipynb"
        source.parent.mkdir(parents=True)
        source.write_text("{}")
    rows = dict(bench.measure("lab_cpu", ["lab_gpu"], 4, 2))
    assert rows["lab_cpu, JOBS=1: секунд на работу"] == "1.00"
    assert rows["lab_cpu, JOBS=2: секунд на работу"] == "0.50"
    assert rows["lab_cpu: ускорение JOBS=2 к JOBS=1"] == "2.00×"
    assert rows["lab_gpu: ускорение JOBS=2 к JOBS=1"] == "2.00×"
    assert rows["Песочница bubblewrap: добавляет к работе"] == "+0.25 с"
    assert "lab_gpu, JOBS=1 без песочницы: секунд на работу" not in rows
    assert rows["lab_cpu, nbgrader autograde: секунд на работу"] == "4.00"
    assert rows["nbgrader autograde медленнее make grade JOBS=1"] == "4.0×"


def test_measure_never_grades_an_empty_class(tmp_path, monkeypatch):
    """make grade без работ — отказ с кодом 2 («нет работ»): замер не должен на него опираться."""
    graded = []

    def fake_command(folder, jobs=1, **env):
        notebooks = list(folder.rglob("*.ipynb"))
        assert notebooks, f"make bench оценивает пустую папку {folder}"
        graded.append(len(notebooks))
        return 1.0 + 0.5 * len(notebooks)

    monkeypatch.setattr(bench, "_timed_command", fake_command)
    monkeypatch.setattr(bench, "plain_nbgrader", lambda lab, root: lambda f: fake_command(f))
    monkeypatch.setattr(bench, "ROOT", tmp_path)
    for lab in ("lab_cpu", "lab_gpu"):
        path = tmp_path / "solutions" / lab / f"{lab}.ipynb"
        path.parent.mkdir(parents=True)
        path.write_text("{}")
    rows = dict(bench.measure("lab_cpu", ["lab_gpu"], count=2, gpu_count=1))
    assert rows["lab_cpu, JOBS=1: секунд на работу"] == "0.50"
    assert rows["lab_gpu, JOBS=2: секунд на работу"] == "0.50"
    assert graded[:2] == [1, 1]  # первые запуски — по одной работе

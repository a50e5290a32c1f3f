"""Dask только по TLS: сертификаты курса, кто может подключиться и когда make grade отказывает.

Всё — на 127.0.0.1: планировщик и рабочий в этом же процессе (``LocalCluster`` без
процессов, полсекунды) или, в медленном тесте, командами ``dask scheduler`` и ``dask worker``
из docs/teaching.md.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

pytest.importorskip("distributed")
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from distributed import Client, LocalCluster
from distributed.security import Security

from feedback.teacher.commands import dask_certs as dask_certs_command
from feedback.teacher.commands import grade as grade_command
from feedback.teacher.core.settings import Settings
from feedback.teacher.grading import grade
from feedback.teacher.unit import dask_tls
from feedback.teacher.unit.dask_tls import DaskRefused, cluster_for, issue
from feedback.teacher.unit.runner import run_dask


def settings_with(certs: Path, *, allow_insecure: bool = False) -> Settings:
    return Settings(
        work=certs.parent / "work", dask_certs_dir=certs, allow_insecure_dask=allow_insecure
    )


@pytest.fixture(scope="module")
def course_certs(tmp_path_factory) -> Path:
    return issue(tmp_path_factory.mktemp("course") / "dask-certs").folder


@pytest.fixture(scope="module")
def tls_cluster(course_certs):
    """Планировщик и рабочий по TLS с сертификатом ``node`` курса, в этом процессе."""
    with LocalCluster(
        n_workers=1,
        threads_per_worker=1,
        processes=False,
        protocol="tls://",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        security=dask_tls.node_security(course_certs),
    ) as cluster:
        yield cluster


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_certificates_are_private_and_signed_by_the_course_authority(tmp_path):
    folder = tmp_path / "dask-certs"
    issued = issue(folder)
    assert issued.folder == folder and mode(folder) == 0o700
    assert sorted(p.name for p in folder.iterdir()) == [
        "ca.pem", "client-key.pem", "client.pem", "node-key.pem", "node.pem"
    ]  # fmt: skip
    assert mode(folder / "node-key.pem") == mode(folder / "client-key.pem") == 0o600
    ca = load(folder / "ca.pem")
    for name in ("node.pem", "client.pem"):
        load(folder / name).verify_directly_issued_by(ca)  # иначе — исключение
    assert not list(tmp_path.glob(".dask-certs-*"))  # черновик переименован, не оставлен

    with pytest.raises(DaskRefused, match=r"уже есть.*REPLACE=1"):
        issue(folder)
    assert load(folder / "ca.pem") == ca  # отказ ничего не тронул
    issue(folder, replace=True)
    assert load(folder / "ca.pem") != ca  # новый центр: прежние сертификаты не подходят
    with pytest.raises(InvalidSignature):
        load(folder / "node.pem").verify_directly_issued_by(ca)


def test_make_dask_certs_prints_the_commands_and_keeps_existing_certificates(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("COURSE7_DASK_CERTS", str(tmp_path / "certs"))
    assert dask_certs_command.main(["certs"]) == 0
    out = capsys.readouterr().out
    assert f"Сертификаты курса: {tmp_path / 'certs'}" in out
    assert "dask scheduler --tls-ca-file ca.pem" in out and "SCHEDULER=tls://" in out
    key = (tmp_path / "certs" / "client-key.pem").read_bytes()
    assert dask_certs_command.main(["certs"]) == 2
    assert "REPLACE=1" in capsys.readouterr().err
    assert (tmp_path / "certs" / "client-key.pem").read_bytes() == key
    assert dask_certs_command.main(["certs", "--replace"]) == 0
    assert (tmp_path / "certs" / "client-key.pem").read_bytes() != key


def test_a_client_with_the_course_certificate_runs_code_on_the_workers(tls_cluster, course_certs):
    cluster = cluster_for(tls_cluster.scheduler_address, settings_with(course_certs))
    assert cluster.security.require_encryption
    with Client(cluster.address, security=cluster.security) as client:
        assert client.submit(pow, 2, 10).result() == 1024


def foreign_certificate(course_certs: Path, tmp_path: Path) -> Security:
    """Центр курса известен (ca.pem), но свой сертификат подписан чужим центром."""
    other = issue(tmp_path / "other").folder
    return Security(
        require_encryption=True,
        tls_ca_file=str(course_certs / "ca.pem"),
        tls_client_cert=str(other / "client.pem"),
        tls_client_key=str(other / "client-key.pem"),
    )


@pytest.mark.parametrize("who", ["tcp", "no certificate", "other authority", "foreign cert"])
def test_without_a_course_certificate_nobody_connects(tls_cluster, course_certs, tmp_path, who):
    address = tls_cluster.scheduler_address
    security = None
    if who == "tcp":  # как в отчёте: ни TLS, ни сертификата
        address = address.replace("tls://", "tcp://")
    elif who == "other authority":
        security = Security.temporary()
    elif who == "foreign cert":
        security = foreign_certificate(course_certs, tmp_path)
    marker = tmp_path / "ran"

    async def connect_and_run() -> None:
        # Клиент в своём цикле asyncio, без фонового потока: на занятой машине поток цикла
        # Dask не успевал запуститься за 10 с, и тест падал не на том.
        async with Client(address, security=security, timeout=2, asynchronous=True) as client:
            await client.run(marker.touch)

    with pytest.raises((OSError, TypeError)):  # отказ при рукопожатии или ещё до соединения
        asyncio.run(connect_and_run())
    assert not marker.exists()


@pytest.mark.slow
def test_the_grader_does_not_send_works_to_a_scheduler_of_another_authority(course_certs, tmp_path):
    """Чужой планировщик на том же адресе не получит работ: его сертификат не от центра курса."""
    other = issue(tmp_path / "other").folder
    with LocalCluster(
        n_workers=0,
        processes=False,
        protocol="tls://",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
        security=dask_tls.node_security(other),
    ) as rogue:
        cluster = cluster_for(rogue.scheduler_address, settings_with(course_certs))
        with pytest.raises(OSError):
            with Client(cluster.address, security=cluster.security, timeout=2):
                pass


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "127.0.0.1:8786", "ws://h:8786"])
def test_an_open_scheduler_is_refused_unless_the_teacher_allows_it(tmp_path, address, capsys):
    settings = settings_with(tmp_path / "none")
    with pytest.raises(DaskRefused) as refused:
        cluster_for(address, settings)
    message = str(refused.value)
    assert address in message and "любой пользователь" in message
    assert "ALLOW_INSECURE_DASK=1" in message and "make dask-certs" in message

    allowed = cluster_for(address, replace(settings, allow_insecure_dask=True))
    assert allowed.address == address and allowed.security is None
    assert "Внимание" in capsys.readouterr().err


def test_the_insecure_opt_in_is_an_explicit_flag():
    assert Settings.from_env({}).allow_insecure_dask is False
    assert Settings.from_env({"ALLOW_INSECURE_DASK": "да"}).allow_insecure_dask is False
    assert Settings.from_env({"ALLOW_INSECURE_DASK": "1"}).allow_insecure_dask is True
    certs = Settings.from_env({"COURSE7_GRADING_DIR": "/w", "COURSE7_DASK_CERTS": "/c"})
    assert certs.workspace.dask_certs == Path("/c")
    assert Settings.from_env({"COURSE7_GRADING_DIR": "/w"}).workspace.dask_certs == Path(
        "/w/dask-certs"
    )


def test_make_grade_refuses_tcp_before_anything_starts(tmp_path, monkeypatch, capsys):
    work = tmp_path / "work"
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(work))
    monkeypatch.delenv("ALLOW_INSECURE_DASK", raising=False)
    code = grade_command.main([str(tmp_path / "class"), "--scheduler", "tcp://127.0.0.1:8786"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("Оценивание не началось: планировщик Dask tcp://127.0.0.1:8786")
    assert "выполнить свой код на рабочих" in err
    assert not (work / "gradebook.db").exists()


def test_with_the_opt_in_make_grade_goes_past_the_dask_check(tmp_path, monkeypatch, capsys):
    def next_step(*args, **kwargs):
        raise grade.SetupError("следующий шаг")

    monkeypatch.setenv("COURSE7_GRADING_DIR", str(tmp_path / "work"))
    monkeypatch.setenv("ALLOW_INSECURE_DASK", "1")
    monkeypatch.setattr(grade, "prepare", next_step)
    assert grade_command.main(["--scheduler", "tcp://127.0.0.1:8786"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("Внимание: планировщик Dask tcp://127.0.0.1:8786")
    assert "Оценивание не началось: следующий шаг" in err


def test_make_grade_over_tls_needs_the_course_certificates(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("COURSE7_GRADING_DIR", str(tmp_path / "work"))
    assert grade_command.main(["--scheduler", "tls://127.0.0.1:8786"]) == 2
    assert "нет сертификатов курса" in capsys.readouterr().err


def test_a_key_others_can_read_is_refused(tmp_path):
    folder = issue(tmp_path / "dask-certs").folder
    (folder / "client-key.pem").chmod(0o644)
    with pytest.raises(DaskRefused, match="chmod 600"):
        cluster_for("tls://127.0.0.1:8786", settings_with(folder))
    (folder / "client-key.pem").chmod(0o600)
    folder.chmod(0o755)
    with pytest.raises(DaskRefused, match="chmod 700"):
        cluster_for("tls://127.0.0.1:8786", settings_with(folder))


@pytest.mark.slow
def test_with_the_opt_in_the_grader_uses_a_plain_scheduler(tmp_path):
    with LocalCluster(
        n_workers=0,
        processes=False,
        protocol="tcp://",
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",
    ) as plain:
        cluster = cluster_for(plain.scheduler_address, settings_with(tmp_path, allow_insecure=True))
        assert cluster.address == plain.scheduler_address and cluster.security is None
        run_dask([], cluster, lambda result: None)  # подключился и ничего не упало


# --------------------------------------------------------------------------- команды из docs


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def documented(command: str, port: int, *extra: str) -> list[str]:
    """Команда из :func:`dask_tls.commands` (её же показывает docs/teaching.md) для этой машины."""
    text = command.replace("ПЛАНИРОВЩИК:8786", f"127.0.0.1:{port}")
    words = text.replace("--nworkers 4", "--nworkers 1").split()
    return [str(Path(sys.executable).with_name("dask")), *words[1:], *extra]


@pytest.mark.slow  # два процесса dask: около 10 с
def test_the_documented_commands_start_a_tls_cluster(tmp_path):
    folder = issue(tmp_path / "dask-certs").folder
    lines = {line.split()[1]: line.strip() for line in dask_tls.commands(folder).splitlines()
             if line.strip().startswith(("dask ", "make "))}  # fmt: skip
    docs = (Path(__file__).parents[3] / "docs" / "teaching.md").read_text(encoding="utf-8")
    for line in lines.values():  # преподаватель читает те же команды
        assert line in docs, line
    node = tmp_path / "node"  # «скопировали на машину»: только три файла узла
    node.mkdir(mode=0o700)
    for name in dask_tls.NODE_FILES:
        shutil.copy2(folder / name, node / name)
    port = free_port()
    # Только петля и свободные порты (8787 может быть занят).
    here = ("--host", "tls://127.0.0.1", "--port", str(port), "--dashboard-address", "127.0.0.1:0")
    scheduler = documented(lines["scheduler"], port, *here)
    worker = documented(lines["worker"], port, "--host", "127.0.0.1")
    processes = []
    for command in (scheduler, worker):  # журнал — в файл: канал без читателя переполнится
        with open(tmp_path / f"{command[1]}.log", "wb") as log:
            processes.append(
                subprocess.Popen(command, cwd=node, stdout=log, stderr=log, start_new_session=True)
            )
    try:
        cluster = cluster_for(f"tls://127.0.0.1:{port}", settings_with(folder))
        with Client(cluster.address, security=cluster.security, timeout=30) as client:
            client.wait_for_workers(1, timeout=30)
            workers = list(client.scheduler_info()["workers"])
            assert all(address.startswith("tls://") for address in workers)
            assert client.submit(pow, 3, 3).result() == 27
        # К самому рабочему — только с сертификатом курса.
        assert asyncio.run(reaches(workers[0], dask_tls.client_security(folder)))
        assert not asyncio.run(reaches(workers[0].replace("tls://", "tcp://")))
        assert not asyncio.run(reaches(workers[0], Security.temporary()))
    finally:
        for process in processes:  # вся группа: у рабочего есть ещё процесс под nanny
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


async def reaches(address: str, security: Security | None = None) -> bool:
    """Отвечает ли рабочий на запрос ``identity`` по адресу ``address``."""
    from distributed.comm import connect

    arguments = security.get_connection_args("client") if security else {}
    try:
        comm = await connect(address, timeout=5, **arguments)
        await comm.write({"op": "identity", "reply": True})
        await asyncio.wait_for(comm.read(), 5)
    except (TimeoutError, OSError):
        return False
    return True

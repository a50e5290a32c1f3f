"""Dask только по TLS со взаимной проверкой: сертификаты курса и допуск к планировщику.

Рабочий Dask выполняет любую функцию, которую пришлёт любой клиент его планировщика. По
открытому ``tcp://`` клиентом может стать кто угодно, кто достаёт до порта: любой
пользователь этой или соседней машины, сервер JupyterHub учащихся. Он выполнит свой код на
рабочем от имени оценивания — подменит его, прочитает все работы, перепишет баллы. Поэтому:

* ``python -m feedback.teacher.commands.dask_certs certs`` (``make dask-certs``) выпускает свой
  удостоверяющий центр курса и два сертификата, подписанных им: ``node`` — планировщику и
  рабочим, ``client`` — оцениванию у преподавателя. Папка — только для владельца (0700),
  ключи — 0600. Ключ самого центра нигде не сохраняется: новый сертификат — это новый
  центр (``--replace``), и прежние сертификаты перестают подходить.
* :func:`cluster_for` — адрес планировщика → как к нему подключаться: ``tls://`` — с
  сертификатом курса (:class:`distributed.security.Security`, ``require_encryption``: ни
  клиент, ни планировщик, ни рабочий не говорят с тем, чей сертификат подписан не центром
  курса); любой другой адрес — отказ с объяснением, пока преподаватель явно не разрешит
  (``ALLOW_INSECURE_DASK=1``).

``cryptography`` и ``distributed`` импортируются только здесь и только когда нужны
(дополнение ``cluster``): оценивание на одной машине их не требует.
"""

from __future__ import annotations

import datetime
import os
import shutil
import stat
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from feedback.teacher.core.settings import Settings

#: Файлы папки сертификатов курса.
CA_FILE = "ca.pem"
NODE_CERT, NODE_KEY = "node.pem", "node-key.pem"
CLIENT_CERT, CLIENT_KEY = "client.pem", "client-key.pem"
#: Что нужно планировщику и каждому рабочему (и только это: ключ клиента остаётся у вас).
NODE_FILES = (CA_FILE, NODE_CERT, NODE_KEY)

#: Срок сертификатов — два года: с запасом на учебный год, чтобы срок не кончился посреди
#: оценивания; новый выпуск (``--replace``) заменяет все сразу.
CERT_DAYS = 730
#: Имя в сертификатах. Dask не сверяет имя машины (``check_hostname`` выключен: машины
#: кластера часто знают друг друга по IP), поэтому допуск — только подпись центра курса.
COMMON_NAME = "course7-dask"


class DaskRefused(RuntimeError):
    """Подключаться к планировщику так нельзя (текст — по-русски: что не так и что делать)."""


@dataclass(frozen=True)
class Cluster:
    """Куда и как подключается оценивание: адрес планировщика и его защита.

    ``security`` — :class:`distributed.security.Security` с сертификатом клиента курса;
    ``None`` — без шифрования и проверки, только с явного разрешения преподавателя.
    """

    address: str
    security: Any = None


@dataclass(frozen=True)
class Issued:
    """Выпущенные сертификаты курса: папка и до какого дня они действуют."""

    folder: Path
    expires: datetime.date


# --------------------------------------------------------------------------- допуск


def risk(address: str) -> str:
    """Чем опасен планировщик ``address`` без TLS."""
    return (
        f"планировщик Dask {address} — без шифрования и без проверки, кто подключается. К "
        "такому планировщику может подключиться любой пользователь любой машины, которая "
        "достаёт до его порта (в том числе сервер JupyterHub учащихся), и выполнить свой код "
        "на рабочих от имени оценивания: подменить проверку, прочитать все работы, переписать "
        "баллы"
    )


def insecure_message(address: str) -> str:
    """Отказ: чем опасен открытый планировщик и что сделать вместо него."""
    return (
        f"{risk(address)}. Выпустите сертификаты курса (make dask-certs) и запустите "
        "планировщик и рабочих по TLS, как в docs/teaching.md («Несколько машин: Dask»), — "
        "адрес тогда tls://…. Если все машины и все их пользователи — только ваши, разрешите "
        "открытый адрес явно: ALLOW_INSECURE_DASK=1."
    )


def cluster_for(address: str, settings: Settings) -> Cluster:
    """Адрес планировщика → :class:`Cluster`; открытый адрес без разрешения — :class:`DaskRefused`.

    ``tls://`` — с сертификатом клиента курса из ``settings.workspace.dask_certs``; ``tcp://``,
    ``ws://`` и адрес без схемы (Dask считает его ``tcp://``) — только если
    ``settings.allow_insecure_dask``, и тогда с предупреждением в консоль.
    """
    scheme = address.split("://", 1)[0].lower() if "://" in address else "tcp"
    if scheme == "tls":
        return Cluster(address, client_security(settings.workspace.dask_certs))
    if not settings.allow_insecure_dask:
        raise DaskRefused(insecure_message(address))
    print(
        f"Внимание: {risk(address)}. Вы разрешили это явно (ALLOW_INSECURE_DASK).",
        file=sys.stderr,
        flush=True,
    )
    return Cluster(address, None)


def _check_private(path: Path, mode: int, fix: str) -> None:
    """Папка или ключ — только ваши: владелец — вы, ни группе, ни другим доступа нет."""
    info = path.stat()
    if info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise DaskRefused(
            f"{path} доступен не только вам (права {stat.S_IMODE(info.st_mode):04o}, владелец "
            f"uid {info.st_uid}): любой, кто прочтёт ключ, подключится к рабочим как "
            f"оценивание. Исправьте: {fix} {path} (права {mode:04o}) — или выпустите новые "
            "сертификаты: make dask-certs REPLACE=1."
        )


def _security(folder: Path, roles: dict[str, tuple[str, str]]) -> Any:
    """Security Dask по файлам папки; нет файла или он открыт другим — :class:`DaskRefused`."""
    try:
        from distributed.security import Security
    except ImportError:
        raise DaskRefused(
            "для SCHEDULER нужен Dask: pip install 'course7-feedback[cluster]'."
        ) from None
    files = [folder / CA_FILE, *(folder / name for pair in roles.values() for name in pair)]
    missing = [path.name for path in files if not path.is_file()]
    if missing:
        raise DaskRefused(
            f"нет сертификатов курса ({', '.join(missing)}) в {folder}: выпустите их командой "
            "make dask-certs и раздайте планировщику и рабочим, как в docs/teaching.md "
            "(«Несколько машин: Dask»)."
        )
    _check_private(folder, 0o700, "chmod 700")
    arguments = {"tls_ca_file": str(folder / CA_FILE)}
    for role, (cert, key) in roles.items():
        _check_private(folder / key, 0o600, "chmod 600")
        arguments[f"tls_{role}_cert"] = str(folder / cert)
        arguments[f"tls_{role}_key"] = str(folder / key)
    return Security(require_encryption=True, **arguments)


def client_security(folder: Path) -> Any:
    """Защита клиента оценивания: центр курса и сертификат ``client``."""
    return _security(folder, {"client": (CLIENT_CERT, CLIENT_KEY)})


def node_security(folder: Path) -> Any:
    """Защита планировщика и рабочих (сертификат ``node``) — для ``LocalCluster`` в тестах.

    Роль клиента — тоже ``node``: так к своему планировщику подключается сам ``LocalCluster``.
    """
    node = (NODE_CERT, NODE_KEY)
    return _security(folder, {"scheduler": node, "worker": node, "client": node})


# --------------------------------------------------------------------------- выпуск


def _private_key() -> Any:
    from cryptography.hazmat.primitives.asymmetric import ec

    # P-256: ключ создаётся за миллисекунды (RSA 2048 — за десятые доли секунды), TLS 1.2+
    # его поддерживает везде.
    return ec.generate_private_key(ec.SECP256R1())


def _certificate(
    name: str, key: Any, issuer: Any | None, issuer_key: Any, *, ca: bool, days: int
) -> Any:
    """Сертификат ``name`` с ключом ``key``, подписанный ``issuer_key`` (центром или собой)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "course7"),
            x509.NameAttribute(NameOID.COMMON_NAME, name),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.subject if issuer is not None else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))  # часы машин расходятся
        .not_valid_after(now + datetime.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()),
            critical=False,
        )
        .add_extension(
            x509.KeyUsage(
                digital_signature=not ca,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=not ca,
                key_cert_sign=ca,
                crl_sign=ca,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    )
    if not ca:
        # Узел и слушает (сервер), и подключается (клиент): рабочий — к планировщику.
        builder = builder.add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        ).add_extension(x509.SubjectAlternativeName([x509.DNSName(COMMON_NAME)]), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(path: Path, data: bytes, mode: int) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    os.chmod(path, mode)  # umask не ослабит и не усилит права


def issue(folder: Path, *, replace: bool = False, days: int = CERT_DAYS) -> Issued:
    """Выпускает центр курса и сертификаты ``node`` и ``client`` в ``folder`` (0700).

    Папка появляется целиком или никак: всё пишется во временную папку рядом и
    переименовывается. Если сертификаты уже есть — :class:`DaskRefused`, пока не сказано
    ``replace`` (новый центр: прежние сертификаты на рабочих перестанут подходить).
    """
    from cryptography.hazmat.primitives import serialization

    if folder.exists() and not replace:
        raise DaskRefused(
            f"сертификаты курса уже есть в {folder}. Новые (прежние на планировщике и рабочих "
            "перестанут подходить) — make dask-certs REPLACE=1."
        )
    folder.parent.mkdir(parents=True, exist_ok=True)
    ca_key = _private_key()
    ca = _certificate("course7 Dask CA", ca_key, None, ca_key, ca=True, days=days)
    draft = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))  # 0700
    try:
        _write(draft / CA_FILE, ca.public_bytes(serialization.Encoding.PEM), 0o644)
        for cert_file, key_file, name in (
            (NODE_CERT, NODE_KEY, f"{COMMON_NAME} node"),
            (CLIENT_CERT, CLIENT_KEY, f"{COMMON_NAME} client"),
        ):
            key = _private_key()
            cert = _certificate(name, key, ca, ca_key, ca=False, days=days)
            _write(draft / cert_file, cert.public_bytes(serialization.Encoding.PEM), 0o644)
            pem = key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
            _write(draft / key_file, pem, 0o600)
        old = None
        if folder.exists():
            old = folder.with_name(f"{draft.name}-old")
            folder.rename(old)
        draft.rename(folder)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(draft, ignore_errors=True)
        raise
    return Issued(folder, ca.not_valid_after_utc.date())


def commands(folder: Path) -> str:
    """Что запустить на планировщике, рабочих и у себя (пути — как после копирования)."""
    tls = f"--tls-ca-file {CA_FILE} --tls-cert {NODE_CERT} --tls-key {NODE_KEY}"
    return (
        f"Скопируйте {', '.join(NODE_FILES)} из {folder} в папку с правами 0700 на машине "
        "планировщика и на каждой рабочей машине (ключ — с правами 0600); "
        f"{CLIENT_KEY} не копируйте никуда.\n"
        "В этой папке на машине планировщика:\n"
        f"  dask scheduler {tls} --dashboard-address 127.0.0.1:8787\n"
        "В этой папке на каждой рабочей машине:\n"
        f"  dask worker tls://ПЛАНИРОВЩИК:8786 {tls} --no-dashboard --nworkers 4 --nthreads 1\n"
        "У вас:\n"
        "  make grade SCHEDULER=tls://ПЛАНИРОВЩИК:8786"
    )

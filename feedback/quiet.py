"""Служебные сообщения TensorFlow, CUDA и SentencePiece не попадают в вывод тетрадки.

Учащийся читает красные строки в выводе ячейки как ошибку. Большая их часть —
безвредная болтовня библиотек: «Could not find cuda drivers», «oneDNN custom
operations are on», «All log messages before absl::InitializeLog()…»,
«normalizer.cc(51) LOG(INFO) precompiled_charsmap is empty». Их печатает C++ прямо в
поток ошибок процесса (дескриптор 2), минуя Python.

Сначала гасим их там, где это умеют сами библиотеки: ``TF_CPP_MIN_LOG_LEVEL=3`` и
уровень журнала Python-пакета sentencepiece. Этого мало (проверено с TensorFlow 2.21
и tensorflow-text 2.21): TensorFlow пишет строки при загрузке своих библиотек — раньше,
чем прочитает переменную окружения, а у SentencePiece внутри tensorflow-text свой
журнал без переключателя. Поэтому :func:`hide_library_chatter` ещё и ставит на
дескриптор 2 узкий фильтр: строки, совпавшие с :data:`CHATTER` (точные шаблоны этих
сообщений), отбрасываются, всё остальное — ошибки, предупреждения, полосы загрузки —
проходит без изменений и сразу.

``COURSE7_LIBRARY_LOGS=1`` отключает фильтр (для отладки).
"""

from __future__ import annotations

import atexit
import os
import re
import select
import sys
import threading
from collections.abc import MutableMapping

from feedback.settings import LIBRARY_LOGS, QUIET_TENSORFLOW, set_defaults

SHOW_ENV_VAR = LIBRARY_LOGS.name

#: Сообщения, которые фильтр убирает: только болтовня при загрузке, ничего о работе модели.
CHATTER = re.compile(
    r"^(?:"
    r"WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    r"|[IWE]\d{4} [\d:.]+\s+\d+ (?:port|cudart_stub|cpu_feature_guard)\.cc:\d+\]"
    r"|E\d{4} [\d:.]+\s+\d+ cuda_platform\.cc:\d+\] failed call to cuInit"
    r"|E\d{4} [\d:.]+\s+\d+ cuda_(?:fft|dnn|blas)\.cc:\d+\] Unable to register cu\w+ factory"
    r"|W\d{4} [\d:.]+\s+\d+ computation_placer\.cc:\d+\] computation placer already registered"
    r"|To enable the following instructions: .* rebuild TensorFlow"
    r"|normalizer\.cc\(\d+\) LOG\(INFO\) "
    r")"
)

# Неполная строка без продолжения дольше этого срока уходит как есть (полосы загрузки).
_PARTIAL_LINE_WAIT_S = 0.2
# Начало служебной строки ждёт продолжения дольше: SentencePiece пишет строку через
# небуферизованный std::cerr по кускам («normalizer.cc(51) », «LOG(INFO) », …), и на занятой
# машине между кусками проходит больше 0,2 с.
_CHATTER_START_WAIT_S = 3.0
_CHATTER_STARTS = (
    "WARNING: All log messages before absl::InitializeLog()",
    "To enable the following instructions:",
    "normalizer.cc(",
)
_GLOG_START = re.compile(r"^[IWE]\d{0,4}(?: [\d:.]*)?$|^[IWE]\d{4} [\d:.]+\s")


def is_chatter(line: str | bytes) -> bool:
    """Служебная ли это строка библиотеки (её можно не показывать учащемуся)."""
    if isinstance(line, bytes):
        line = line.decode("utf-8", errors="replace")
    return CHATTER.match(line.lstrip("\r")) is not None


def may_become_chatter(tail: bytes) -> bool:
    """Может ли неполная строка оказаться началом служебной, когда допишется."""
    text = tail.decode("utf-8", errors="replace").lstrip("\r")
    if any(start.startswith(text) or text.startswith(start) for start in _CHATTER_STARTS):
        return True
    return _GLOG_START.match(text) is not None


def _split_lines(data: bytes) -> tuple[list[bytes], bytes]:
    """Полные строки (с концом ``\\n`` или ``\\r``) и неполный хвост."""
    lines, start = [], 0
    for index, byte in enumerate(data):
        if byte in (0x0A, 0x0D):
            lines.append(data[start : index + 1])
            start = index + 1
    return lines, data[start:]


class StderrFilter:
    """Фильтр на уровне дескриптора: всё, что пишут в ``fd``, проходит через поток-насос.

    Насос читает канал, отбрасывает строки :func:`is_chatter` и пишет остальное туда,
    куда ``fd`` указывал до запуска (в Jupyter — в канал ipykernel, который передаёт
    текст в тетрадку).
    """

    def __init__(self, fd: int = 2) -> None:
        self.fd = fd
        self._saved: int | None = None
        self._read: int | None = None
        self._thread: threading.Thread | None = None
        self.dropped = 0

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        if self.running:
            return
        if self.fd == 2:
            sys.stderr.flush()
        self._saved = os.dup(self.fd)
        self._read, write = os.pipe()
        os.dup2(write, self.fd)
        os.close(write)
        self._thread = threading.Thread(target=self._pump, name="course7-stderr", daemon=True)
        self._thread.start()

    def _emit(self, data: bytes) -> None:
        if data and self._saved is not None:
            os.write(self._saved, data)

    def _pump(self) -> None:
        try:
            self._filter_lines()
        except Exception:
            # Насос сломался: поток ошибок возвращается на место, чтобы запись в него никогда
            # не повисла на переполненном канале.
            if self._saved is not None:
                os.dup2(self._saved, self.fd)

    def _filter_lines(self) -> None:
        tail = b""
        waited = 0.0  # сколько неполная строка уже ждёт продолжения
        while True:
            ready, _, _ = select.select([self._read], [], [], _PARTIAL_LINE_WAIT_S)
            if not ready:
                waited += _PARTIAL_LINE_WAIT_S
                patience = _CHATTER_START_WAIT_S if may_become_chatter(tail) else 0
                if tail and not is_chatter(tail) and waited >= patience:
                    self._emit(tail)
                    tail = b""
                continue
            chunk = os.read(self._read, 65536)
            if not chunk:
                break
            lines, tail = _split_lines(tail + chunk)
            waited = 0.0
            for line in lines:
                if is_chatter(line):
                    self.dropped += 1
                else:
                    self._emit(line)
        if tail and not is_chatter(tail):
            self._emit(tail)

    def stop(self) -> None:
        """Возвращает ``fd`` на место и дописывает всё, что ещё в канале."""
        if not self.running:
            return
        if self.fd == 2:
            sys.stderr.flush()
        os.dup2(self._saved, self.fd)  # закрывает наш конец канала: насос получит EOF
        self._thread.join(timeout=5)
        os.close(self._read)
        os.close(self._saved)
        self._thread = self._read = self._saved = None


_FILTER = StderrFilter(2)


def hide_library_chatter(env: MutableMapping[str, str] | None = None) -> bool:
    """Глушит служебные сообщения библиотек; вызывайте до ``import keras``.

    Задаёт ``TF_CPP_MIN_LOG_LEVEL=3`` (если не задано), понижает журнал sentencepiece
    и ставит фильтр на поток ошибок процесса. Повторный вызов ничего не меняет.
    Возвращает, работает ли фильтр (``False`` при ``COURSE7_LIBRARY_LOGS=1``).
    """
    env = os.environ if env is None else env
    set_defaults(QUIET_TENSORFLOW, env)
    try:
        import sentencepiece

        sentencepiece.set_min_log_level(2)
    except (ImportError, AttributeError):
        pass
    if LIBRARY_LOGS.read(env) is True:
        return False
    if not _FILTER.running:
        _FILTER.start()
        atexit.register(_FILTER.stop)
    return True


def hidden_lines() -> int:
    """Сколько служебных строк фильтр уже убрал из потока ошибок процесса."""
    return _FILTER.dropped


def show_library_chatter() -> None:
    """Снимает фильтр: служебные сообщения снова видны."""
    _FILTER.stop()

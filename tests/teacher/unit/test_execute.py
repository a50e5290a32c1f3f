"""Клиент ядра при оценивании: ядро готово, как только ответило, — без выжидания тишины."""

from __future__ import annotations

import asyncio
from queue import Empty

import pytest

from feedback.teacher.unit.execute import PromptKernelClient


def reply(request: str) -> dict:
    content = {"protocol_version": "5.3", "status": "ok"}
    return {
        "msg_type": "kernel_info_reply",
        "parent_header": {"msg_id": request},
        "content": content,
    }


def status(state: str, request: str) -> dict:
    return {
        "msg_type": "status",
        "parent_header": {"msg_id": request},
        "content": {"execution_state": state},
    }


class Channel:
    """Канал с заранее написанными сообщениями; ``None`` — тишина до тайм-аута."""

    def __init__(self, messages: list[dict | None]) -> None:
        self.messages = list(messages)
        self.silences = 0

    async def get_msg(self, timeout: float | None = None) -> dict:
        message = self.messages.pop(0) if self.messages else None
        if message is None:
            self.silences += 1
            raise Empty
        return message


class ScriptedClient(PromptKernelClient):
    """Клиент, у которого вместо ядра — каналы с заготовленными сообщениями."""

    def __init__(self, shell: list, iopub: list, alive: bool = True) -> None:
        super().__init__()
        self.shell, self.iopub = Channel(shell), Channel(iopub)
        self.alive = alive
        self.requests: list[str] = []

    @property
    def shell_channel(self):
        return self.shell

    @property
    def iopub_channel(self):
        return self.iopub

    def kernel_info(self) -> str:
        self.requests.append(f"r{len(self.requests) + 1}")
        return self.requests[-1]

    async def is_alive(self) -> bool:
        return self.alive


def test_ready_on_the_idle_status_of_its_request_without_waiting_for_silence():
    client = ScriptedClient([reply("r1")], [status("busy", "r1"), status("idle", "r1")])
    asyncio.run(client.wait_for_ready(timeout=5))
    assert client.requests == ["r1"]
    assert client.iopub.silences == 0  # jupyter_client ждал бы здесь 0,2 с тишины


def test_a_lost_idle_status_sends_the_request_again():
    """Подписка IOPub ещё не установилась — статус потерян; второй запрос его получает."""
    client = ScriptedClient([reply("r1"), reply("r2")], [None, status("idle", "r2")])
    asyncio.run(client.wait_for_ready(timeout=5))
    assert client.requests == ["r1", "r2"]


def test_the_welcome_of_ipykernel_7_repeats_the_request_at_once():
    """iopub_welcome: подписка установилась только сейчас, статус первого запроса потерян —
    второй запрос уходит сразу, без 0,2 с тишины, а ответ на первый уже не в счёт."""
    welcome = {"msg_type": "iopub_welcome", "parent_header": {}, "content": {}}
    client = ScriptedClient(
        [reply("r1"), reply("r1"), reply("r2")], [welcome, status("idle", "r2")]
    )
    asyncio.run(client.wait_for_ready(timeout=5))
    assert client.requests == ["r1", "r2"]
    assert client.iopub.silences == 0 and client.shell.messages == []


class Endless:
    """Канал, который на каждый вызов отвечает сообщением ``make()``."""

    def __init__(self, make) -> None:
        self.make = make

    async def get_msg(self, timeout: float | None = None) -> dict:
        return self.make()


def test_an_endless_welcome_still_ends_at_the_deadline():
    """Ядро, которое на каждый запрос отвечает и снова шлёт приветствие, не держит запуск вечно."""
    welcome = {"msg_type": "iopub_welcome", "parent_header": {}, "content": {}}
    client = ScriptedClient([], [])
    client.shell = Endless(lambda: reply(client.requests[-1]))
    client.iopub = Endless(lambda: welcome)
    sent = client.kernel_info

    def kernel_info() -> str:
        assert len(client.requests) < 1000, "запросы kernel_info без конца: срок не проверяется"
        return sent()

    client.kernel_info = kernel_info
    with pytest.raises(RuntimeError, match="didn't respond"):
        asyncio.run(client.wait_for_ready(timeout=0))
    assert 1 <= len(client.requests) < 1000


def test_a_late_reply_to_an_earlier_request_counts():
    """Ядро запускалось дольше секунды: ответ на первый запрос приходит после второго."""
    client = ScriptedClient([None, reply("r1")], [status("busy", "r1"), status("idle", "r1")])
    asyncio.run(client.wait_for_ready(timeout=5))
    assert client.requests == ["r1", "r2"]


def test_a_dead_kernel_is_an_error_not_a_wait():
    client = ScriptedClient([None], [], alive=False)
    with pytest.raises(RuntimeError, match="died"):
        asyncio.run(client.wait_for_ready(timeout=60))


def test_a_silent_kernel_times_out():
    client = ScriptedClient([None, None], [])
    with pytest.raises(RuntimeError, match="respond"):
        asyncio.run(client.wait_for_ready(timeout=0))

"""Connections to ports inside gVisor sandboxes through the exec agent's link.

A raw TCP server inside a sandbox without network is reached from the host: bytes both ways,
byte-exact, past the flow-control windows; a half-close reaches the server as its end of
input; nothing listening is PortNotListening; a sandbox without the agent cannot (a typed
NotSupported). The link stays untrusted: port frames on channels that are not connections,
or data past the window granted, close it.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import struct
from collections.abc import AsyncIterator

import pytest

from service.runtime import ExecRequest, NotSupported, PortNotListening, SandboxSpec
from service.runtime.gvisor import GVisorRuntime
from service.runtime.gvisor.agent_link import AgentLink, AgentLost
from service.runtime.gvisor.agent_ports import (
    CHUNK,
    PORT_OPENED,
    PORT_RECV,
    PORT_SENT,
    WINDOW,
)

SMALL = SandboxSpec(memory_mib=256, disk_mib=32, pids=64)
# Echoes what it reads; on the end of its input, sends the sha256 of it all and closes.
ECHO = r"""
import hashlib, socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
while True:
    c, _ = s.accept(); h = hashlib.sha256()
    while True:
        d = c.recv(1 << 16)
        if not d:
            break
        h.update(d); c.sendall(d)
    c.sendall(h.hexdigest().encode()); c.close()
"""


@pytest.fixture
async def echo(gvisor: GVisorRuntime) -> AsyncIterator[str]:
    info = await gvisor.create("default", SMALL)
    await gvisor.write_file(info.id, "/work/echo.py", ECHO.encode())
    await gvisor.exec(info.id, ExecRequest(argv=["python3", "/work/echo.py", "7000"]))
    for _ in range(100):
        try:
            await (await gvisor.open_port(info.id, 7000)).close()
            break
        except PortNotListening:
            await asyncio.sleep(0.1)
    yield info.id
    await gvisor.destroy(info.id)


async def test_bytes_both_ways_then_a_half_close(gvisor: GVisorRuntime, echo: str) -> None:
    connection = await gvisor.open_port(echo, 7000)
    payload = os.urandom(5 << 20)  # past both windows
    received = bytearray()

    async def read_all() -> None:
        while data := await connection.read():
            received.extend(data)

    reader = asyncio.create_task(read_all())
    for at in range(0, len(payload), 300_000):
        await connection.write(payload[at : at + 300_000])
    await connection.write_eof()  # the server sees its end of input, answers, closes
    await asyncio.wait_for(reader, 60)
    await connection.close()
    assert bytes(received[: len(payload)]) == payload
    assert received[len(payload) :].decode() == hashlib.sha256(payload).hexdigest()


async def test_many_connections_and_refusals(gvisor: GVisorRuntime, echo: str) -> None:
    async def one(n: int) -> bytes:
        connection = await gvisor.open_port(echo, 7000)
        await connection.write(b"n%d" % n)
        await connection.write_eof()
        out = b""
        while data := await connection.read():
            out += data
        await connection.close()
        return out

    answers = await asyncio.gather(*(one(n) for n in range(20)))
    assert all(a.startswith(b"n%d" % n) for n, a in enumerate(answers))
    with pytest.raises(PortNotListening):
        await gvisor.open_port(echo, 7001)
    result = await gvisor.run(echo, ExecRequest(argv=["true"]))  # the agent is fine
    assert result.exit_code == 0


async def test_a_sandbox_without_the_agent_has_no_port_channel(
    gvisor_runsc: GVisorRuntime,
) -> None:
    info = await gvisor_runsc.create("default", SMALL)
    try:
        with pytest.raises(NotSupported):
            await gvisor_runsc.open_port(info.id, 7000)
    finally:
        await gvisor_runsc.destroy(info.id)


def frame(kind: int, channel: int, payload: bytes) -> bytes:
    return struct.pack(">IBI", len(payload), kind, channel) + payload


async def _opened_link() -> tuple[AgentLink, object]:
    link = AgentLink("alk-test")
    sent: list[bytes] = []
    link.send = lambda kind, number, payload=b"": sent.append(payload)  # type: ignore[method-assign]
    opening = asyncio.create_task(link.ports.open(80))
    await asyncio.sleep(0)
    link.data_received(frame(PORT_OPENED, 1, b'{"ok": true}'))
    return link, await opening


@pytest.mark.parametrize(
    "payload",
    [
        frame(PORT_OPENED, 1, b'{"ok": true}'),  # opened twice
        frame(PORT_SENT, 1, b"\x00\x00"),  # an acknowledgement of the wrong size
        frame(PORT_RECV, 2, b"data"),  # a channel never opened
        b"".join(frame(PORT_RECV, 1, b"x" * CHUNK) for _ in range(WINDOW // CHUNK + 2)),
    ],
)
async def test_port_frames_the_link_refuses(payload: bytes) -> None:
    link, connection = await _opened_link()
    link.data_received(payload)
    assert link.broken is not None
    assert await connection.read() == b""  # type: ignore[attr-defined]
    with pytest.raises(ConnectionResetError):
        await connection.write(b"more")  # type: ignore[attr-defined]


async def test_port_frames_on_an_exec_channel_close_the_link() -> None:
    link = AgentLink("alk-test")
    channel = link.open_channel()
    link.data_received(frame(PORT_RECV, channel.number, b"data"))
    assert link.broken is not None
    with pytest.raises(AgentLost):
        await channel.exit


async def test_a_server_slow_to_accept_costs_its_connection_not_the_link(
    gvisor: GVisorRuntime, echo: str
) -> None:
    # Listens with a backlog of one and never accepts: later connects are left waiting.
    stuck = (
        "import socket, time; s = socket.socket(); s.bind(('127.0.0.1', 7002)); s.listen(1); "
        "time.sleep(600)"
    )
    await gvisor.exec(echo, ExecRequest(argv=["python3", "-c", stuck]))
    await asyncio.sleep(1)
    held = []
    with pytest.raises(PortNotListening, match="did not accept"):
        for _ in range(8):
            held.append(await gvisor.open_port(echo, 7002))
    for connection in held:
        await connection.close()
    assert (await gvisor.run(echo, ExecRequest(argv=["true"]))).exit_code == 0
    assert await gvisor.agent_ready(echo, 0)  # still through the agent

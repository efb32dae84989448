"""Connections to TCP ports inside a sandbox, through its exec agent's link (host side).

A connection is a channel of the link (`agent/ports.py` has the agent's side and the frames).
What the agent sends is bounded like the rest of the link: data only on channels we opened
as connections, never more than the window we granted plus one chunk, answers strictly
decoded. A breach closes the whole link (`AgentLink.close`).
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections import deque
from typing import Protocol

import msgspec

from ..errors import PortNotListening, SandboxBusy

# host -> agent
PORT_OPEN, PORT_SEND, PORT_SHUT, PORT_CLOSE, PORT_ACK = 9, 10, 11, 12, 13
# agent -> host
PORT_OPENED, PORT_RECV, PORT_RECV_END, PORT_CLOSED, PORT_SENT = 72, 73, 74, 75, 76
FROM_AGENT = frozenset({PORT_OPENED, PORT_RECV, PORT_RECV_END, PORT_CLOSED, PORT_SENT})
WINDOW = 1 << 20  # each way, as the agent's PORT_WINDOW
CHUNK = 256 * 1024
OPEN_TIMEOUT_S = 10.0
# Connections open at once per sandbox: each holds a socket in the sandbox's PID 1.
MAX_OPEN = 256


class Link(Protocol):
    """What port channels need of the agent link (agent_link.AgentLink) they run over."""

    def send(self, kind: int, number: int, payload: bytes = b"") -> None: ...

    def next_channel(self) -> int: ...


class _Opened(msgspec.Struct, forbid_unknown_fields=True):
    ok: bool
    error: str | None = None


class _Closed(msgspec.Struct, forbid_unknown_fields=True):
    error: str | None


class PortChannel:
    """One connection: `read` (b"" at its end), `write`, `write_eof`, `close`."""

    def __init__(self, ports: PortChannels, number: int, port: int) -> None:
        self._ports = ports
        self._link = ports.link
        self.number = number
        self.port = port
        self.opened: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._chunks: deque[bytes] = deque()
        self._ended = False  # no more data will come (its end, a close, the link lost)
        self._arrived = asyncio.Event()
        self._unacked = 0
        self.credit = WINDOW
        self._credit_changed = asyncio.Event()
        self.error: str | None = None
        self.closed = False

    # -- the caller's side ----------------------------------------------------------------

    async def read(self) -> bytes:
        while not self._chunks:
            if self._ended:
                return b""
            self._arrived.clear()
            await self._arrived.wait()
        data = self._chunks.popleft()
        self._unacked -= len(data)
        if not self.closed:
            with contextlib.suppress(Exception):
                self._link.send(PORT_ACK, self.number, struct.pack(">I", len(data)))
        return data

    async def write(self, data: bytes) -> None:
        """Send within the agent's window; ConnectionResetError once the connection is gone."""
        for at in range(0, len(data), CHUNK):
            piece = data[at : at + CHUNK]
            while self.credit < len(piece) and not self.closed:
                self._credit_changed.clear()
                await self._credit_changed.wait()
            if self.closed:
                raise ConnectionResetError(self.error or "the connection in the sandbox closed")
            self.credit -= len(piece)
            self._link.send(PORT_SEND, self.number, piece)

    async def write_eof(self) -> None:
        if not self.closed:
            self._link.send(PORT_SHUT, self.number)

    async def close(self) -> None:
        if not self.closed:
            self._end(None)
            with contextlib.suppress(Exception):
                self._link.send(PORT_CLOSE, self.number)
        self._ports.forget(self)

    # -- the link's side ------------------------------------------------------------------

    def frame(self, kind: int, payload: bytes) -> None:
        if kind == PORT_OPENED:
            opened = msgspec.json.decode(payload, type=_Opened, strict=True)
            if self.opened.done():
                raise ValueError("a connection opened twice")
            if opened.ok:
                self.opened.set_result(None)
            else:
                self._ports.forget(self)
                self._end(opened.error)
                self.opened.set_exception(PortNotListening(self.port))
        elif not self.opened.done():
            raise ValueError("data on a connection not opened")
        elif kind == PORT_RECV:
            if not payload:  # would queue without counting against the window
                raise ValueError("an empty data frame")
            self._unacked += len(payload)
            if self._unacked > WINDOW + CHUNK:
                raise ValueError("data beyond the connection's window")
            self._chunks.append(payload)
            self._arrived.set()
        elif kind == PORT_RECV_END:
            self._ended = True
            self._arrived.set()
        elif kind == PORT_SENT:
            if len(payload) != 4:
                raise ValueError("a port ack of the wrong size")
            self.credit = min(WINDOW, self.credit + struct.unpack(">I", payload)[0])
            self._credit_changed.set()
        elif kind == PORT_CLOSED:
            self._end(msgspec.json.decode(payload, type=_Closed, strict=True).error)
            self._ports.forget(self)

    def _end(self, error: str | None) -> None:
        self.closed = True
        self._ended = True
        self.error = self.error or (error[:200] if error else None)
        self._arrived.set()
        self._credit_changed.set()

    def fail(self, exc: Exception) -> None:
        """The link is lost: the connection ends now, with nothing more delivered."""
        self._chunks.clear()
        self._end(str(exc))
        if not self.opened.done():
            self.opened.set_exception(exc)
            self.opened.exception()  # retrieved: nobody may be waiting any more


class PortChannels:
    """The connections of one link."""

    def __init__(self, link: Link) -> None:
        self.link = link
        self._open: dict[int, PortChannel] = {}

    async def open(self, port: int) -> PortChannel:
        """A connection to `port` inside the sandbox: PortNotListening when nothing accepts
        it there (in OPEN_TIMEOUT_S), AgentLost when the link is (or gets) closed, SandboxBusy
        past MAX_OPEN."""
        if len(self._open) >= MAX_OPEN:
            raise SandboxBusy(f"{MAX_OPEN} connections to this sandbox's ports are open")
        channel = PortChannel(self, self.link.next_channel(), port)
        self._open[channel.number] = channel
        try:
            self.link.send(PORT_OPEN, channel.number, msgspec.json.encode({"port": port}))
            await asyncio.wait_for(asyncio.shield(channel.opened), OPEN_TIMEOUT_S)
        except TimeoutError:
            # The server in the sandbox is slow to accept (a full backlog), which says nothing
            # against the agent: this connection is given up, the link stays.
            self.forget(channel)
            with contextlib.suppress(Exception):
                self.link.send(PORT_CLOSE, channel.number)
            raise PortNotListening(port, f"did not accept within {OPEN_TIMEOUT_S:g} s") from None
        except BaseException:
            self.forget(channel)
            raise
        return channel

    def forget(self, channel: PortChannel) -> None:
        self._open.pop(channel.number, None)

    def __len__(self) -> int:
        """Connections open now (a checkpoint taken under one may cut a frame in two)."""
        return len(self._open)

    def frame(self, kind: int, number: int, payload: bytes) -> bool:
        """Hand a frame to its connection; False when `number` is not one (a breach if it is
        an exec's channel, which the link decides)."""
        channel = self._open.get(number)
        if channel is None:
            return False
        channel.frame(kind, payload)
        return True

    def fail_all(self, exc: Exception) -> None:
        for channel in list(self._open.values()):
            channel.fail(exc)
        self._open.clear()

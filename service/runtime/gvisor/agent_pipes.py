"""The agent link's pipes as asyncio delivers them: one set of pipes at a time is the link's
(`pipes` counts them: a restore hands the agent new ones), and what an earlier set reports
is ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
from typing import Protocol

from ..pipes import pipe_file

PIPE_SIZE = 1 << 20  # the link's host pipes: fewer wake-ups for bulk data
F_SETPIPE_SZ = 1031


class Link(Protocol):
    """What the pipes need of the agent link (agent_link.AgentLink) they carry."""

    def on_pipes(self, pipes: int) -> bool: ...

    def data_received(self, data: bytes) -> None: ...

    def pipe_closed(self, pipes: int, side: str) -> None: ...


async def connect(
    link: Link, pipes: int, read_fd: int, write_fd: int
) -> tuple[asyncio.ReadTransport, asyncio.WriteTransport]:
    """The transports of these pipe ends (the agent's stdout to read, its stdin to write)."""
    loop = asyncio.get_running_loop()
    for fd in (read_fd, write_fd):
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, F_SETPIPE_SZ, PIPE_SIZE)
    reader, _ = await loop.connect_read_pipe(
        lambda: ReadSide(link, pipes), pipe_file(read_fd, "rb")
    )
    writer, _ = await loop.connect_write_pipe(
        lambda: WriteSide(link, pipes), pipe_file(write_fd, "wb")
    )
    return reader, writer  # type: ignore[return-value]


class ReadSide(asyncio.Protocol):
    """The agent's stdout, as one set of pipes of the link (`pipes`) delivers it."""

    def __init__(self, link: Link, pipes: int) -> None:
        self.link = link
        self.pipes = pipes

    def data_received(self, data: bytes) -> None:
        if self.link.on_pipes(self.pipes):
            self.link.data_received(data)

    def eof_received(self) -> bool:
        self.link.pipe_closed(self.pipes, "output")
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.link.pipe_closed(self.pipes, "output")


class WriteSide(asyncio.Protocol):
    def __init__(self, link: Link, pipes: int) -> None:
        self.link = link
        self.pipes = pipes

    def connection_lost(self, exc: Exception | None) -> None:
        self.link.pipe_closed(self.pipes, "input")

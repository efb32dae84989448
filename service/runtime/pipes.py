"""File objects for `loop.connect_read_pipe` / `connect_write_pipe` that close their fd once.

uvloop hands the file object's fd to libuv, which closes it when the transport closes; the
file object then closes the same number again (uvloop issue #763, open as of uvloop 0.23).
Between the two closes another thread may have been given that number, for a subprocess's
pipe, a socket, a file, and the second close takes it away from its owner. Seen here as a
network setup's `subprocess.run` failing with EBADF under load. asyncio's own loop closes
the fd only through the file object. So under uvloop the file object must not close it.
"""

from __future__ import annotations

import asyncio
import io
import os


def loop_closes_pipes(loop: asyncio.AbstractEventLoop) -> bool:
    """Whether the loop closes a pipe's fd itself (uvloop) rather than through its file."""
    return type(loop).__module__.startswith("uvloop")


def pipe_file(fd: int, mode: str) -> io.FileIO:
    """An unbuffered file object on `fd` for the running loop's pipe transports."""
    owns = not loop_closes_pipes(asyncio.get_running_loop())
    return os.fdopen(fd, mode, buffering=0, closefd=owns)  # type: ignore[return-value]

"""A running exec's stdin, written through the API (`POST …/execs/{id}/stdin`) for an exec
started with `stdin_open`: the chunks reach the process in the order written, until a write
closes it (the process then reads EOF) or the exec ends.

What this process holds for an exec is counted in bytes: a chunk counts from the moment its
write is accepted until the runtime has passed it on and asks for the next. A write that does
not fit under `BUFFER_BYTES` waits a little for the process to read; one writer at most waits,
and past the wait the write is refused whole (429 `stdin_full`), so a process that never reads
costs at most the buffer and the one waiting body.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import AsyncIterator

from service.errors import Conflict, QuotaExceeded

# One write's body; a longer input is several writes.
WRITE_BYTES = 1 << 20
# Bytes accepted for one exec and not yet taken by it: one write always fits into an empty buffer.
BUFFER_BYTES = WRITE_BYTES
ROOM_WAIT_S = 10.0


class StdinNotOpen(Conflict):
    code, title = "stdin_not_open", "This exec's stdin cannot be written"


class StdinFull(QuotaExceeded):
    code, title = "stdin_full", "The exec has not read the stdin already written"


class StdinPipe:
    def __init__(self, first: bytes | None = None) -> None:
        # None closes: the process reads EOF after the chunks before it.
        self._chunks: deque[bytes | None] = deque()
        self.pending = 0  # bytes accepted and not yet taken
        self.closed = False
        self.ended = False  # the exec is over: nothing will be taken any more
        self._changed = asyncio.Event()
        self._writing = False
        if first:
            self._chunks.append(first)
            self.pending = len(first)

    async def write(self, data: bytes, *, close: bool) -> None:
        """Queue `data` whole (and the end, with `close`), or refuse it whole."""
        self._require_open()
        if self._writing:
            raise _full(f"another write to this stdin is waiting for room; {_AGAIN}")
        self._writing = True
        try:
            if data:
                await self._wait_for_room(len(data))
                self._chunks.append(data)
                self.pending += len(data)
            if close:
                self.closed = True
                self._chunks.append(None)
            self._notify()
        finally:
            self._writing = False

    async def _wait_for_room(self, size: int) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + ROOM_WAIT_S
        # An empty buffer takes any one write (its body is capped by the route).
        while not self.ended and self.pending and self.pending + size > BUFFER_BYTES:
            left = deadline - loop.time()
            if left <= 0:
                raise _full(
                    f"{self.pending} bytes written earlier are still waiting for the process "
                    f"to read them (at most {BUFFER_BYTES} are held); {_AGAIN}"
                )
            await self._changes(left)
        self._require_open()

    async def _changes(self, wait_s: float | None = None) -> None:
        """Until something changes (a chunk written or taken, the end), or `wait_s` passed."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._changed.wait(), wait_s)

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def _require_open(self) -> None:
        if self.ended:
            raise StdinNotOpen("this exec has ended")
        if self.closed:
            raise StdinNotOpen("this exec's stdin was closed")

    def end(self) -> None:
        """The exec is over: a writer waiting for room is told so at once."""
        self.ended = True
        self._notify()

    async def chunks(self) -> AsyncIterator[bytes]:
        """What the runtime feeds the process: the writes, ending when one closes. A chunk
        stops counting once the runtime asks for the next one (it has passed it on)."""
        while True:
            while not self._chunks:
                await self._changes()
            chunk = self._chunks.popleft()
            if chunk is None:
                return
            yield chunk
            self.pending -= len(chunk)
            self._notify()


_AGAIN = "nothing of this write was taken: send it again later"


def _full(detail: str) -> StdinFull:
    return StdinFull(detail, retry_after_s=1, extra={"limit_bytes": BUFFER_BYTES})

"""A running exec's stdin, written through the API (`POST …/execs/{id}/stdin`) for an exec
started with `stdin_open`: the chunks reach the process in the order written, until a write
closes it (the process then reads EOF) or the exec ends."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from service.errors import Conflict

# Chunks written and not yet taken by the exec; a writer waits for room this long, then is
# told the process is not reading (its earlier writes stay queued).
QUEUE_CHUNKS = 64
ROOM_WAIT_S = 10.0


class StdinNotOpen(Conflict):
    code, title = "stdin_not_open", "This exec's stdin cannot be written"


class StdinPipe:
    def __init__(self, first: bytes | None = None) -> None:
        self._queue: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=QUEUE_CHUNKS)
        self.closed = False
        if first:
            self._queue.put_nowait(first)

    async def write(self, data: bytes, *, close: bool) -> None:
        if self.closed:
            raise StdinNotOpen("this exec's stdin was closed")
        try:
            if data:
                await asyncio.wait_for(self._queue.put(data), ROOM_WAIT_S)
            if close:
                self.closed = True
                await asyncio.wait_for(self._queue.put(None), ROOM_WAIT_S)
        except TimeoutError:
            raise StdinNotOpen(
                f"the process has not read its stdin for {ROOM_WAIT_S:.0f} s; try again later",
                headers={"Retry-After": "1"},
            ) from None

    async def chunks(self) -> AsyncIterator[bytes]:
        """What the runtime feeds the process: the writes, ending when one closes."""
        while (chunk := await self._queue.get()) is not None:
            yield chunk

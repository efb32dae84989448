"""Exec output on its way to the record: masked, cut at whole characters, stored in batches."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING

from service.execs.masking import Masker, SecretValues

if TYPE_CHECKING:
    from service.execs.records import ExecRecords

FLUSH_INTERVAL_S = 0.05
FLUSH_BYTES = 64 << 10


class ChunkSink:
    """Masks output and appends it to `exec_chunks` in small batches."""

    def __init__(
        self,
        records: ExecRecords,
        exec_id: str,
        secrets: SecretValues,
        on_flush: Callable[[], None],
    ) -> None:
        self.records = records
        self.exec_id = exec_id
        self.maskers = {"stdout": Masker(secrets), "stderr": Masker(secrets)}
        self.on_flush = on_flush
        self.pending: list[tuple[str, bytes]] = []
        self.pending_bytes = 0
        self.seq = 0
        self.last_flush = time.monotonic()
        self.bytes = {"stdout": 0, "stderr": 0}
        # What is in `exec_chunks` now (masked): the exec's `stored_bytes` when it ends.
        self.stored = 0
        # What was stored, per stream: the finished exec is answered from here.
        self.kept = {"stdout": b"", "stderr": b""}
        # An incomplete UTF-8 character held back, so each stored chunk decodes on its own.
        self.partial = {"stdout": b"", "stderr": b""}
        # Flushes one at a time, so chunks are committed in the order of their `seq` (a reader
        # resuming after seq n never misses a lower one committed later).
        self._flushing = asyncio.Lock()
        # Within `flushing`: the timer that stores waiting output, and the flush it started.
        self._timed = False
        self._timer: asyncio.TimerHandle | None = None
        self._late: asyncio.Task[None] | None = None

    def _whole_characters(self, stream: str, data: bytes) -> bytes:
        data = self.partial[stream] + data
        keep = _incomplete_utf8_tail(data)
        if keep:
            data, self.partial[stream] = data[:-keep], data[-keep:]
        else:
            self.partial[stream] = b""
        return data

    async def add(self, stream: str, data: bytes) -> None:
        self.bytes[stream] = self.bytes.get(stream, 0) + len(data)
        masked = self._whole_characters(stream, self.maskers[stream].feed(data))
        if masked:
            self.pending.append((stream, masked))
            self.pending_bytes += len(masked)
        now = time.monotonic()
        if self.pending_bytes >= FLUSH_BYTES or now - self.last_flush >= FLUSH_INTERVAL_S:
            await self.flush()
        self._arm(now)

    @contextlib.asynccontextmanager
    async def flushing(self) -> AsyncIterator[None]:
        """While the block runs, output that has waited FLUSH_INTERVAL_S is stored even when
        nothing comes after it (a prompt, a line before a long silence): a timer armed while
        output waits, so an exec that prints nothing costs no task."""
        self._timed = True
        try:
            yield
        finally:
            self._timed = False
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
            if self._late is not None:
                await self._late

    def _arm(self, now: float) -> None:
        if self._timed and self._timer is None and self.pending:
            due = max(0.0, FLUSH_INTERVAL_S - (now - self.last_flush))
            self._timer = asyncio.get_running_loop().call_later(due, self._due)

    def _due(self) -> None:
        self._timer = None
        if not self.pending or (self._late is not None and not self._late.done()):
            return  # nothing waits, or the flush under way arms the timer again as it ends
        self._late = asyncio.create_task(self.flush(), name=f"flush-{self.exec_id}")
        self._late.add_done_callback(lambda _task: self._arm(time.monotonic()))

    async def flush(self) -> None:
        async with self._flushing:
            await self._flush()

    async def _flush(self) -> None:
        self.last_flush = time.monotonic()
        if not self.pending:
            return
        rows = []
        for stream, data in _coalesce(self.pending):
            self.kept[stream] += data
            self.seq += 1
            rows.append({"exec_id": self.exec_id, "seq": self.seq, "stream": stream, "data": data})
        self.pending, self.pending_bytes = [], 0
        async with self.records.unit() as tx:
            await tx.insert_chunks(rows)
        self.stored += sum(len(r["data"]) for r in rows)
        self.on_flush()

    async def close(self, *, cut_stdout: bool, cut_stderr: bool) -> None:
        for stream, cut in (("stdout", cut_stdout), ("stderr", cut_stderr)):
            tail = self.partial[stream] + self.maskers[stream].flush(cut=cut)
            self.partial[stream] = b""
            if tail:
                self.pending.append((stream, tail))
        await self.flush()


def _incomplete_utf8_tail(data: bytes) -> int:
    """How many bytes at the end of `data` start a UTF-8 character that is not complete yet."""
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0xC0 != 0x80:  # a lead byte (or ASCII)
            need = (
                2
                if byte & 0xE0 == 0xC0
                else 3
                if byte & 0xF0 == 0xE0
                else 4
                if byte & 0xF8 == 0xF0
                else 1
            )
            return back if need > back else 0
    return 0


def _coalesce(pieces: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """Merge neighbouring pieces of the same stream, keeping the interleaving."""
    out: list[tuple[str, bytes]] = []
    for stream, data in pieces:
        if out and out[-1][0] == stream:
            out[-1] = (stream, out[-1][1] + data)
        else:
            out.append((stream, data))
    return out

"""One exec run by the exec agent, seen from the host: output, stdin with its credit window,
deadline, kill, and the end the agent reports (agent_link.py carries the frames).

An exec outlives a checkpoint of its sandbox (a pause, a snapshot): its channel stays while
the link is held, and its deadline counts only the time the sandbox ran.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from collections.abc import AsyncIterable, AsyncIterator, Callable
from typing import Literal

from ..errors import ExecNotFound
from ..execution import Classify, ExecutionBase, KillTree, outcome_of
from ..types import ExecResult, Outcome, OutputChunk, TtySize
from .agent_frames import ACK, CHUNK, KILL, RESIZE, STDIN, STDIN_CLOSE, Exit
from .agent_link import KILL_CONFIRM_S, AgentLink, AgentLost, Channel


class AgentExecution(ExecutionBase):
    """A running exec inside the agent. Deadline and output cap as for `runsc exec`; with
    `stream=True` (file downloads) nothing is kept and output flows as fast as it is read."""

    def __init__(
        self,
        exec_id: str,
        channel: Channel,
        pid: int | None,
        *,
        stdin: bytes | AsyncIterable[bytes] | None,
        timeout_s: float,
        output_cap: int,
        kill_fallback: KillTree,
        classify: Classify,
        requested_at: float,
        stream: bool = False,
        on_done: Callable[[ExecutionBase], None] | None = None,
        tty: bool = False,
    ) -> None:
        super().__init__(
            exec_id,
            timeout_s=timeout_s,
            output_cap=output_cap,
            classify=classify,
            requested_at=requested_at,
            on_done=on_done,
        )
        self._channel = channel
        self._link = channel.link
        self.pid = pid
        self._stream = stream
        self._tty = tty
        self._kill_fallback = kill_fallback
        self._held_before = self._link.hold.total_s()  # time held before it started
        channel.attach(self._data)
        self._stdin_task = asyncio.create_task(self._feed(stdin)) if stdin is not None else None
        self._task = asyncio.create_task(self._supervise())

    def rides(self, link: AgentLink) -> bool:
        """Whether it runs on this link."""
        return self._link is link

    def _data(self, name: Literal["stdout", "stderr"], data: bytes) -> None:
        if self._stream:
            self._streams[name].total += len(data)
            self._queue.put_nowait(OutputChunk(name, data))
        else:
            self._keep(self._streams[name], data)

    async def output(self) -> AsyncIterator[OutputChunk]:
        while (chunk := await self._queue.get()) is not None:
            if self._stream:  # the agent sends more once we took this
                with contextlib.suppress(AgentLost):
                    self._link.send(ACK, self._channel.number, struct.pack(">I", len(chunk.data)))
            yield chunk

    async def _stop(self, outcome: Outcome) -> None:
        async with self._kill_lock:
            if self._forced is not None or self._channel.exit.done() or self._task.done():
                return
            self._forced = outcome
            try:
                self._link.send(KILL, self._channel.number)
            except AgentLost:
                with contextlib.suppress(Exception):
                    await self._kill_fallback()

    async def resize(self, size: TtySize) -> None:
        if not self._tty:
            await super().resize(size)
        if self._channel.exit.done() or self._task.done():
            raise ExecNotFound(self._id)
        try:
            self._link.send(RESIZE, self._channel.number, struct.pack(">HH", size.rows, size.cols))
        except AgentLost:
            raise ExecNotFound(self._id) from None

    async def _feed(self, data: bytes | AsyncIterable[bytes]) -> None:
        channel = self._channel
        try:
            if isinstance(data, bytes | bytearray):
                await self._send_stdin(bytes(data))
            else:
                async for chunk in data:
                    if not await self._send_stdin(chunk):
                        break
        except AgentLost:
            return
        except Exception as exc:  # the caller's data source failed: stop, never half-apply
            self.feed_error = exc
            await self._stop("killed")
            return
        with contextlib.suppress(AgentLost):
            self._link.send(STDIN_CLOSE, channel.number)

    async def _send_stdin(self, data: bytes) -> bool:
        """Send within the agent's window; False once the exec ended."""
        channel = self._channel
        for at in range(0, len(data), CHUNK):
            piece = data[at : at + CHUNK]
            while channel.credit < len(piece):
                if channel.exit.done():
                    return False
                channel.credit_changed.clear()
                await channel.credit_changed.wait()
            if channel.exit.done():
                return False
            channel.credit -= len(piece)
            self._link.send(STDIN, channel.number, piece)
        return True

    async def _end(self, timeout_s: float) -> Exit | None:
        try:
            return await asyncio.wait_for(asyncio.shield(self._channel.exit), timeout_s)
        except (TimeoutError, AgentLost):
            return None

    def _ran_s(self) -> float:
        """How long the exec has had its sandbox running (held time left out)."""
        held = self._link.hold.total_s() - self._held_before
        return time.monotonic() - self._started - held

    async def _end_by(self, deadline_s: float) -> Exit | None:
        """Its end, or None once it ran `deadline_s` (or the link was lost). While the link
        is held (the sandbox checkpointed, perhaps paused for hours) the clock stops."""
        while True:
            left = deadline_s - self._ran_s()
            if left > 0:
                end = await self._end(left)
                if end is not None or self._link.broken is not None:
                    return end
            elif self._link.hold.held:
                await self._link.hold.released()
            else:
                return None

    async def _supervise(self) -> ExecResult:
        try:
            end = await self._end_by(self._timeout_s)
            if end is None and not self._channel.exit.done() and self._link.broken is None:
                await self._stop("timeout")
                end = await self._end_by(self._ran_s() + KILL_CONFIRM_S)
            if end is None:
                # The agent did not report the end: trust it no more, kill from outside.
                self._link.close(f"no end reported for exec {self._id}")
                self._link.forget(self._channel)
                if self.pid is not None:  # without one, the agent ends it on the closed link
                    with contextlib.suppress(Exception):
                        await self._kill_fallback()
            finished = time.monotonic()
            if self._stdin_task is not None:
                self._stdin_task.cancel()
            code = end.code if end is not None else None
            outcome = await outcome_of(self._forced, self._classify, code)
            if end is None and outcome == "exited":
                outcome = "killed"
            ran = finished - self._started
            if end is not None and 0 <= end.ran < ran:
                ran = end.ran
            if end is not None:  # the agent also counted what it did not send (past the cap)
                self._streams["stdout"].total = max(self._streams["stdout"].total, end.out)
                self._streams["stderr"].total = max(self._streams["stderr"].total, end.err)
            return self._result(code, outcome, ran)
        finally:
            self._finish()

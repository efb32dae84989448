"""One exec in a BoxLite box: the Execution protocol over BoxLite's line streams, with our own
deadline watchdog, output cap and kill (BoxLite's `timeout_secs` is only a backstop)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterable
from typing import Any, Literal

from ..execution import ExecutionBase
from ..types import ExecRequest, ExecResult, Outcome, OutputChunk, TtySize, new_exec_id
from .errors import typed_error


def native_exec_id(native: Any) -> str:
    """BoxLite's execution id: `Execution.id` is a method there, not an attribute."""
    value = getattr(native, "id", None)
    with contextlib.suppress(Exception):
        value = value() if callable(value) else value
    return value if isinstance(value, str) else ""


class BoxExecution(ExecutionBase):
    """The Execution protocol over a BoxLite native execution (line-based output streams)."""

    def __init__(
        self,
        native: Any,
        request: ExecRequest,
        stdin: bytes | AsyncIterable[bytes] | None,
        requested_at: float,
    ) -> None:
        self._native = native
        self._request = request
        self._requested_at = requested_at
        self._started = time.monotonic()
        self._queue: asyncio.Queue[OutputChunk | None] = asyncio.Queue()
        self._kept = {"stdout": bytearray(), "stderr": bytearray()}
        self._total = {"stdout": 0, "stderr": 0}
        self._forced: Outcome | None = None
        self.feed_error: Exception | None = None
        self._stdin = stdin
        self._id = request.exec_id or native_exec_id(native) or new_exec_id()
        self._task = asyncio.create_task(self._supervise())

    async def _stop(self, outcome: Outcome) -> None:
        if self._forced is None and not self._task.done():
            self._forced = outcome
            with contextlib.suppress(Exception):
                await self._native.kill()

    async def resize(self, size: TtySize) -> None:
        if self._request.tty is None:
            await super().resize(size)
        try:
            await self._native.resize_tty(size.rows, size.cols)
        except Exception as exc:
            raise typed_error(exc, "resize") from exc

    async def _pump(self, name: Literal["stdout", "stderr"], stream: Any) -> None:
        if stream is None:
            return
        cap = self._request.output_cap
        async for line in stream:
            data = line.encode() if isinstance(line, str) else bytes(line)
            self._total[name] += len(data)
            room = cap - len(self._kept[name])
            if room > 0:
                self._kept[name] += data[:room]
                self._queue.put_nowait(OutputChunk(name, data[:room]))

    async def _feed(self) -> None:
        writer = self._native.stdin()
        if writer is None:
            return
        try:
            if isinstance(self._stdin, bytes | bytearray):
                await writer.send_input(bytes(self._stdin))
            elif self._stdin is not None:
                async for chunk in self._stdin:
                    await writer.send_input(chunk)
        except Exception as exc:  # the caller's data source failed: stop, never half-apply
            self.feed_error = exc
            await self._stop("killed")
        finally:
            with contextlib.suppress(Exception):
                await writer.close()

    async def _supervise(self) -> ExecResult:
        tasks = [
            asyncio.create_task(self._pump("stdout", self._native.stdout())),
            asyncio.create_task(self._pump("stderr", self._native.stderr())),
        ]
        if self._stdin is not None:
            tasks.append(asyncio.create_task(self._feed()))
        waiting = asyncio.create_task(self._native.wait())
        try:
            done, _ = await asyncio.wait({waiting}, timeout=self._request.timeout_s)
            if not done:
                await self._stop("timeout")
                await asyncio.wait({waiting}, timeout=10)
            finished = time.monotonic()
            await asyncio.wait(tasks, timeout=1.0)
            result = waiting.result() if waiting.done() and not waiting.exception() else None
            code = getattr(result, "exit_code", None)
            outcome: Outcome = self._forced or ("exited" if code is not None else "killed")
            return ExecResult(
                exec_id=self.id,
                exit_code=code if outcome == "exited" else None,
                outcome=outcome,
                started_after_s=self._started - self._requested_at,
                duration_s=finished - self._started,
                stdout=bytes(self._kept["stdout"]),
                stderr=bytes(self._kept["stderr"]),
                stdout_bytes=self._total["stdout"],
                stderr_bytes=self._total["stderr"],
                stdout_truncated=self._total["stdout"] > len(self._kept["stdout"]),
                stderr_truncated=self._total["stderr"] > len(self._kept["stderr"]),
            )
        finally:
            for task in tasks:
                task.cancel()
            self._queue.put_nowait(None)

"""One execution context as this process holds it: the interpreter (`kernel.py`) running in
the sandbox as a streamed exec, the requests written to its stdin, its frames read back and
handed to the run they belong to.

Runs of one context take turns. A run's deadline is the kernel's to keep (it interrupts the
code and the context goes on); when the kernel has not answered `KILL_AFTER_S` past it, the
interpreter is killed and the context is gone, which that run's answer says.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import secrets
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from service.runtime import Execution
from service.runtime.execution import ExecutionBase

log = logging.getLogger("airlock.contexts")

# How long past a run's deadline the kernel may take to report it before it is killed.
KILL_AFTER_S = 5.0
# What one run's answer holds of each stream; the rest is counted, not kept.
MAX_STREAM_CHARS = 1 << 20
# Rich results of one run, at most: their count and their total size.
MAX_RESULTS = 32
MAX_RESULT_CHARS = 16 << 20


@dataclass
class RunOutcome:
    """What one run gave: its streams, results and error as the kernel sent them."""

    ok: bool = False
    timed_out: bool = False
    context_lost: bool = False
    execution_count: int | None = None
    duration_ms: float = 0.0
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    chars: dict[str, int] = field(default_factory=lambda: {"stdout": 0, "stderr": 0})
    results: list[dict[str, Any]] = field(default_factory=list)
    results_dropped: int = 0
    error: dict[str, Any] | None = None

    def take(self, frame: dict[str, Any]) -> None:
        kind = frame.get("type")
        if kind in ("stdout", "stderr"):
            text = str(frame.get("text", ""))
            kept = self.chars[kind]
            room = MAX_STREAM_CHARS - min(kept, MAX_STREAM_CHARS)
            if room:
                getattr(self, kind).append(text[:room])
            self.chars[kind] = kept + len(text)
        elif kind == "result":
            data = frame.get("data") or {}
            size = sum(len(str(v)) for v in data.values())
            held = sum(len(str(v)) for r in self.results for v in r.values())
            if len(self.results) < MAX_RESULTS and held + size <= MAX_RESULT_CHARS:
                self.results.append(data)
            else:
                self.results_dropped += 1
        elif kind == "error":
            self.error = {
                "name": str(frame.get("name", "")),
                "value": str(frame.get("value", "")),
                "traceback": [str(line) for line in frame.get("traceback") or []],
            }
        elif kind == "done":
            self.ok = bool(frame.get("ok"))
            self.timed_out = bool(frame.get("timed_out"))
            self.execution_count = frame.get("count")

    def truncated(self, stream: str) -> bool:
        return self.chars[stream] > MAX_STREAM_CHARS


class Lines:
    """The kernel's stdout cut into frames (one JSON object a line)."""

    def __init__(self) -> None:
        self.held = bytearray()

    def feed(self, data: bytes) -> list[dict[str, Any]]:
        self.held += data
        frames = []
        while (end := self.held.find(b"\n")) >= 0:
            line = bytes(self.held[:end])
            del self.held[: end + 1]
            try:
                frame = json.loads(line)
            except ValueError:
                log.warning("a context's kernel wrote a line that is not a frame: %r", line[:200])
                continue
            if isinstance(frame, dict):
                frames.append(frame)
        return frames


@dataclass
class ContextFacts:
    """Who a context belongs to and how it was started."""

    id: str
    tenant_id: str
    sandbox_id: str
    runtime_id: str
    language: str
    created_at: datetime


class LiveContext:
    """The interpreter of one context, running. `start` it, then `run` code in it."""

    def __init__(self, facts: ContextFacts) -> None:
        self.facts = facts
        self.python: str | None = None
        self.runs = 0
        self.gone: str | None = None  # why the context ended, once it has
        self.ended_at: float | None = None  # when (time.monotonic())
        self.busy = False
        self._execution: Execution | None = None
        self._stdin: asyncio.Queue[bytes | None] = asyncio.Queue()
        self._ready = asyncio.Event()  # set when the kernel is up, or has ended
        self._waiting: dict[str, asyncio.Queue[dict[str, Any] | None]] = {}
        self._turn = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None
        self._errors = bytearray()  # the kernel's own stderr (before it took fd 2 over)

    async def requests(self) -> AsyncIterator[bytes]:
        """The kernel's stdin: each request as it is written, until the context closes."""
        while (item := await self._stdin.get()) is not None:
            yield item

    def started(self, execution: Execution) -> None:
        self._execution = execution
        self._reader = asyncio.create_task(self._read(execution))

    async def wait_ready(self, timeout_s: float) -> bool:
        """Whether the kernel said it is up within `timeout_s` (False: it ended or is slow)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._ready.wait(), timeout_s)
        return self.gone is None and self._ready.is_set()

    def why_not_started(self) -> str:
        said = self._errors.decode(errors="replace").strip()
        return said[-2000:] or self.gone or "the interpreter did not start"

    async def _read(self, execution: Execution) -> None:
        lines = Lines()
        try:
            async for chunk in execution.output():
                if chunk.stream == "stderr":
                    if len(self._errors) < 65536:
                        self._errors += chunk.data
                    continue
                for frame in lines.feed(chunk.data):
                    self._dispatch(frame)
            result = await execution.wait()
            self._end(f"the interpreter ended ({result.outcome}, exit code {result.exit_code})")
        except asyncio.CancelledError:
            self._end("the context was closed")
            raise
        except Exception as exc:  # the runtime lost the exec: the context with it
            self._end(f"the interpreter was lost: {exc}")

    def _dispatch(self, frame: dict[str, Any]) -> None:
        if frame.get("type") == "ready":
            self.python = str(frame.get("python") or "") or None
            self._ready.set()
            return
        waiting = self._waiting.get(str(frame.get("run")))
        if waiting is not None:
            waiting.put_nowait(frame)

    def _gone(self, why: str) -> None:
        if self.gone is None:
            self.gone, self.ended_at = why, time.monotonic()

    def _end(self, why: str) -> None:
        self._gone(why)
        self._ready.set()  # nothing to wait for any more
        self._stdin.put_nowait(None)
        for waiting in self._waiting.values():
            waiting.put_nowait(None)

    async def run(self, code: str, timeout_s: float) -> RunOutcome:
        """Run `code`, after the runs before it; the outcome says if the context was lost."""
        async with self._turn:
            outcome = RunOutcome()
            if self.gone is not None:
                outcome.context_lost = True
                return outcome
            self.busy = True
            try:
                await self._run(code, timeout_s, outcome)
            finally:
                self.busy = False
            return outcome

    async def _run(self, code: str, timeout_s: float, outcome: RunOutcome) -> None:
        run_id = secrets.token_hex(8)
        frames: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._waiting[run_id] = frames
        started = time.monotonic()
        request = {"run": run_id, "code": code, "timeout_s": timeout_s}
        self._stdin.put_nowait(json.dumps(request).encode() + b"\n")
        self.runs += 1
        try:
            async with asyncio.timeout(timeout_s + KILL_AFTER_S):
                while (frame := await frames.get()) is not None:
                    outcome.take(frame)
                    if frame.get("type") == "done":
                        break
                else:
                    outcome.context_lost = True
        except TimeoutError:
            outcome.timed_out = True
            outcome.context_lost = True
            await self.close(f"a run did not stop {KILL_AFTER_S:g} s past its deadline")
        finally:
            self._waiting.pop(run_id, None)
            outcome.duration_ms = round((time.monotonic() - started) * 1000, 3)

    async def close(self, why: str = "the context was deleted") -> None:
        """Kill the interpreter (what it started too) and end the context."""
        self._gone(why)
        execution = self._execution
        if execution is not None and not _done(execution):
            with contextlib.suppress(Exception):
                await execution.kill()
        self._end(why)
        if self._reader is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._reader), KILL_AFTER_S)


def _done(execution: Execution) -> bool:
    return isinstance(execution, ExecutionBase) and execution.done

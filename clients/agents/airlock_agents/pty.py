"""The interactive processes of a session (the SDK's `exec_command` / `write_stdin` tools).

Each is an Airlock exec started without waiting; a task follows its server-sent events into a
buffer the tools read from for their yield time. `tty=True` gives the exec a terminal (`tty`,
24 x 80) and keeps its stdin open (`stdin_open`) for `POST …/execs/{id}/stdin`; where the
sandbox cannot give a terminal (a 422 `tty_unsupported`) it gets an open stdin over pipes.
Without `tty` the process has no stdin, as the SDK's tools expect.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from agents.sandbox.errors import PtySessionNotFoundError
from agents.sandbox.session.pty_output import collect_pty_output
from agents.sandbox.session.pty_types import (
    PTY_PROCESSES_MAX,
    PtyExecUpdate,
    allocate_pty_process_id,
    process_id_to_prune_from_meta,
)
from airlock_client.api.execs import kill_exec
from airlock_sdk import errors
from airlock_sdk.aio import AsyncSandbox


@dataclass
class Process:
    exec_id: str
    stdin_open: bool
    chunks: deque[bytes] = field(default_factory=deque)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    notify: asyncio.Event = field(default_factory=asyncio.Event)
    done: asyncio.Event = field(default_factory=asyncio.Event)
    exit_code: int | None = None
    last_used: float = field(default_factory=time.monotonic)
    reader: asyncio.Task[None] | None = None


class PtyProcesses:
    """One session's running interactive execs, by the ids the model sees."""

    def __init__(self, sandbox: AsyncSandbox) -> None:
        self.sandbox = sandbox
        self.running: dict[int, Process] = {}
        self.guard = asyncio.Lock()

    async def start(
        self, argv: Sequence[str], *, stdin_open: bool, yield_ms: int, max_tokens: int | None, **options: Any
    ) -> PtyExecUpdate:
        try:
            exec_id = await self.sandbox.start(list(argv), stdin_open=stdin_open, tty=stdin_open, **options)
        except errors.ValidationFailed as exc:
            if exc.code != "tty_unsupported":
                raise
            # This sandbox cannot give a terminal (on gVisor: no python3 in its image): pipes.
            exec_id = await self.sandbox.start(list(argv), stdin_open=stdin_open, **options)
        process = Process(exec_id, stdin_open)
        process.reader = asyncio.create_task(self._follow(process))
        async with self.guard:
            process_id = allocate_pty_process_id(set(self.running))
            pruned = self._prune()
            self.running[process_id] = process
        if pruned is not None:
            await self._end(pruned)
        return await self._update(process_id, process, yield_ms, max_tokens)

    async def write(self, process_id: int, chars: str, *, yield_ms: int, max_tokens: int | None) -> PtyExecUpdate:
        async with self.guard:
            process = self.running.get(process_id)
        if process is None:
            raise PtySessionNotFoundError(session_id=process_id)
        if chars:
            if not process.stdin_open:
                # The SDK's tool turns exactly this into advice to start the command with a tty.
                raise RuntimeError("stdin is not available for this process")
            try:
                await self.sandbox.write_stdin(process.exec_id, chars)
            except errors.StdinNotOpen:
                pass  # it ended meanwhile: its output and exit code are read below
        return await self._update(process_id, process, yield_ms, max_tokens)

    async def end_all(self) -> None:
        async with self.guard:
            ending = list(self.running.values())
            self.running.clear()
        for process in ending:
            await self._end(process)

    async def _follow(self, process: Process) -> None:
        try:
            async for event in self.sandbox.events(process.exec_id):
                if event.kind == "exit":
                    process.exit_code = event.exit.get("exit_code")
                else:
                    async with process.lock:
                        process.chunks.append(event.text.encode())
                process.notify.set()
        except errors.AirlockError:
            pass  # the stream is lost; the process is reported ended without an exit code
        finally:
            process.done.set()
            process.notify.set()

    async def _update(self, process_id: int, process: Process, yield_ms: int, max_tokens: int | None) -> PtyExecUpdate:
        output, original_tokens, ended = await collect_pty_output(
            output_chunks=process.chunks,
            output_lock=process.lock,
            output_notify=process.notify,
            is_done=process.done.is_set,
            yield_time_ms=yield_ms,
            max_output_tokens=max_tokens,
        )
        process.last_used = time.monotonic()
        if ended:
            async with self.guard:
                self.running.pop(process_id, None)
            await self._end(process)
        return PtyExecUpdate(
            process_id=None if ended else process_id,
            output=output,
            exit_code=process.exit_code if ended else None,
            original_token_count=original_tokens,
        )

    def _prune(self) -> Process | None:
        """At the limit, the least recently used process (finished ones first) makes room."""
        if len(self.running) < PTY_PROCESSES_MAX:
            return None
        meta = [(pid, p.last_used, p.done.is_set()) for pid, p in self.running.items()]
        victim = process_id_to_prune_from_meta(meta)
        return self.running.pop(victim, None) if victim is not None else None

    async def _end(self, process: Process) -> None:
        if not process.done.is_set():
            try:
                errors.unwrap(
                    await kill_exec.asyncio_detailed(self.sandbox.id, process.exec_id, client=self.sandbox.client)
                )
            except (errors.AirlockError, httpx.HTTPError):
                pass  # already ended, or the sandbox is gone with it
        if process.reader is not None and not process.reader.done():
            process.reader.cancel()
            await asyncio.gather(process.reader, return_exceptions=True)

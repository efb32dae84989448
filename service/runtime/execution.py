"""Supervision of one exec's client process: output pumps, output cap, deadline, kill.

Runtime-neutral: the runtime hands over a started client process (whose stdout/stderr carry
the sandboxed process's output and whose exit status is the sandboxed process's) plus two
callbacks: `kill_tree` (kill the process and everything it started) and `classify` (decide
the outcome once the client has exited, e.g. whether the memory cap killed the sandbox).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from typing import Literal

from .errors import TtyUnsupported
from .pipes import pipe_file
from .types import ExecResult, Outcome, OutputChunk, TtySize

READ_SIZE = 64 * 1024
DRAIN_AFTER_EXIT_S = 1.0  # processes left holding the output pipe do not hold up the result
CLIENT_EXIT_AFTER_KILL_S = 5.0

KillTree = Callable[[], Awaitable[None]]
Classify = Callable[[int | None], Awaitable[Outcome]]


async def outcome_of(forced: Outcome | None, classify: Classify, code: int | None) -> Outcome:
    """The outcome of an exec that ended with `code`: what stopped it (`forced`: timeout,
    killed), else what `classify` makes of it. An exec whose deadline passed while the OOM
    killer struck in its sandbox is `oom`: the kill left it hanging (under systrap the host
    may kill the sandbox kernel rather than the hog), and its deadline is not why it ended."""
    if forced is None:
        return await classify(code)
    if forced == "timeout" and await classify(code) == "oom":
        return "oom"
    return forced


class Spawned:
    """A client process whose stdio pipes we own, so waiting for its exit never waits for
    processes in the sandbox that inherited the output pipe."""

    def __init__(
        self,
        proc: asyncio.subprocess.Process,
        stdout: asyncio.StreamReader,
        stderr: asyncio.StreamReader,
        stdin: asyncio.StreamWriter | None,
        transports: list[asyncio.BaseTransport],
    ) -> None:
        self.proc = proc
        self.stdout = stdout
        self.stderr = stderr
        self.stdin = stdin
        self._transports = transports

    def close(self) -> None:
        for transport in self._transports:
            transport.close()


async def _reader(fd: int) -> tuple[asyncio.StreamReader, asyncio.BaseTransport]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_SIZE * 4)
    transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), pipe_file(fd, "rb")
    )
    return reader, transport


async def _writer(fd: int) -> tuple[asyncio.StreamWriter, asyncio.BaseTransport]:
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, pipe_file(fd, "wb")
    )
    return asyncio.StreamWriter(transport, protocol, None, loop), transport


async def spawn(argv: list[str], *, with_stdin: bool) -> Spawned:
    """Start `argv` with pipes for stdout/stderr (and stdin if asked)."""
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r, in_w = os.pipe() if with_stdin else (None, None)
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=in_r if in_r is not None else asyncio.subprocess.DEVNULL,
            stdout=out_w,
            stderr=err_w,
        )
    except BaseException:
        for fd in (out_r, err_r, in_w):
            if fd is not None:
                os.close(fd)
        raise
    finally:
        for fd in (out_w, err_w, in_r):
            if fd is not None:
                os.close(fd)
    stdout, t_out = await _reader(out_r)
    stderr, t_err = await _reader(err_r)
    transports = [t_out, t_err]
    stdin = None
    if in_w is not None:
        stdin, t_in = await _writer(in_w)
        transports.append(t_in)
    return Spawned(proc, stdout, stderr, stdin, transports)


async def _write(writer: asyncio.StreamWriter, chunk: bytes) -> bool:
    """Write to the process's stdin; False once the process stopped reading."""
    try:
        writer.write(chunk)
        await writer.drain()
    except (BrokenPipeError, ConnectionResetError):
        return False
    return True


class _Stream:
    def __init__(self, name: Literal["stdout", "stderr"], cap: int) -> None:
        self.name = name
        self.cap = cap
        self.kept = bytearray()
        self.total = 0

    @property
    def truncated(self) -> bool:
        return self.total > len(self.kept)


class ExecutionBase:
    """What every runtime's running exec shares: an id, a queue of output chunks ending in
    None, and a supervising task whose result is the ExecResult. Subclasses call `__init__`
    (or set `_id` and `_queue` themselves), set `_task`, and say how to stop (`_stop`)."""

    _id: str
    _queue: asyncio.Queue[OutputChunk | None]
    _task: asyncio.Task[ExecResult]

    def __init__(
        self,
        exec_id: str,
        *,
        timeout_s: float,
        output_cap: int,
        classify: Classify,
        requested_at: float,
        on_done: Callable[[ExecutionBase], None] | None,
    ) -> None:
        self._id = exec_id
        self._timeout_s = timeout_s
        self._classify = classify
        self._requested_at = requested_at
        self._started = time.monotonic()
        self._streams = {
            "stdout": _Stream("stdout", output_cap),
            "stderr": _Stream("stderr", output_cap),
        }
        self._queue = asyncio.Queue()
        self._forced: Outcome | None = None
        self.feed_error: Exception | None = None
        self._kill_lock = asyncio.Lock()
        self._on_done = on_done

    @property
    def id(self) -> str:
        return self._id

    @property
    def done(self) -> bool:
        return self._task.done()

    async def output(self) -> AsyncIterator[OutputChunk]:
        while (chunk := await self._queue.get()) is not None:
            yield chunk

    async def wait(self) -> ExecResult:
        return await asyncio.shield(self._task)

    async def kill(self) -> None:
        await self._stop("killed")

    async def _stop(self, outcome: Outcome) -> None:
        raise NotImplementedError

    async def resize(self, size: TtySize) -> None:
        """Change the window of the exec's terminal; one started without a terminal has none."""
        raise TtyUnsupported(f"exec {self._id} has no terminal")

    def _keep(self, stream: _Stream, data: bytes) -> None:
        """Count `data`; keep and queue what fits under the output cap."""
        stream.total += len(data)
        room = stream.cap - len(stream.kept)
        if room > 0:
            kept = data[:room]
            stream.kept += kept
            self._queue.put_nowait(OutputChunk(stream.name, kept))

    def _result(self, code: int | None, outcome: Outcome, duration_s: float) -> ExecResult:
        out, err = self._streams["stdout"], self._streams["stderr"]
        return ExecResult(
            exec_id=self._id,
            exit_code=code if outcome == "exited" else None,
            outcome=outcome,
            started_after_s=self._started - self._requested_at,
            duration_s=duration_s,
            stdout=bytes(out.kept),
            stderr=bytes(err.kept),
            stdout_bytes=out.total,
            stderr_bytes=err.total,
            stdout_truncated=out.truncated,
            stderr_truncated=err.truncated,
        )

    def _finish(self) -> None:
        """End the output and tell the owner the exec is over."""
        self._queue.put_nowait(None)
        if self._on_done is not None:
            self._on_done(self)


class SupervisedExecution(ExecutionBase):
    """A running exec. Iterate `output()` for chunks; `await wait()` for the result."""

    def __init__(
        self,
        exec_id: str,
        spawned: Spawned,
        *,
        stdin: bytes | AsyncIterable[bytes] | None,
        timeout_s: float,
        output_cap: int,
        kill_tree: KillTree,
        classify: Classify,
        requested_at: float,
        on_done: Callable[[ExecutionBase], None] | None = None,
    ) -> None:
        super().__init__(
            exec_id,
            timeout_s=timeout_s,
            output_cap=output_cap,
            classify=classify,
            requested_at=requested_at,
            on_done=on_done,
        )
        self._spawned = spawned
        self._proc = spawned.proc
        self._kill_tree = kill_tree
        self._stdin_task = asyncio.create_task(self._feed(stdin))
        self._task = asyncio.create_task(self._supervise())

    async def _stop(self, outcome: Outcome) -> None:
        async with self._kill_lock:
            if self._forced is not None or self._proc.returncode is not None:
                return
            self._forced = outcome
            with contextlib.suppress(Exception):
                await self._kill_tree()

    async def _feed(self, data: bytes | AsyncIterable[bytes] | None) -> None:
        writer = self._spawned.stdin
        if writer is None:
            return
        try:
            if isinstance(data, bytes | bytearray):
                await _write(writer, bytes(data))
            elif data is not None:
                async for chunk in data:
                    if not await _write(writer, chunk):
                        break
        except Exception as exc:  # the caller's data source failed: stop, never half-apply
            self.feed_error = exc
            await self._stop("killed")
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _pump(self, stream: _Stream, reader: asyncio.StreamReader | None) -> None:
        if reader is None:
            return
        while chunk := await reader.read(READ_SIZE):
            self._keep(stream, chunk)

    async def _supervise(self) -> ExecResult:
        pumps = [
            asyncio.create_task(self._pump(self._streams["stdout"], self._spawned.stdout)),
            asyncio.create_task(self._pump(self._streams["stderr"], self._spawned.stderr)),
        ]
        try:
            try:
                await asyncio.wait_for(self._proc.wait(), timeout=self._timeout_s)
            except TimeoutError:
                await self._stop("timeout")
            try:
                await asyncio.wait_for(self._proc.wait(), timeout=CLIENT_EXIT_AFTER_KILL_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    self._proc.kill()
                await self._proc.wait()
            finished = time.monotonic()
            _, pending = await asyncio.wait(pumps, timeout=DRAIN_AFTER_EXIT_S)
            for task in pending:
                task.cancel()
            self._stdin_task.cancel()
            code = self._proc.returncode
            outcome = await outcome_of(self._forced, self._classify, code)
            return self._result(code, outcome, finished - self._started)
        finally:
            for task in pumps:
                task.cancel()
            self._spawned.close()
            self._finish()

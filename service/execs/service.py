"""Exec reads: one exec with its output, the history, and the event stream."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import msgspec
from litestar.response import ServerSentEventMessage
from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext, record
from service.auth.principal import Principal
from service.db.models import Exec as ExecRow
from service.db.models import ExecChunk
from service.db.session import Db
from service.errors import Conflict, NotFound
from service.execs.repository import ExecRepository
from service.execs.runner import ExecRunner, Started
from service.execs.schemas import (
    Exec,
    ExecCreate,
    ExecPage,
    ExecSummary,
    StdinWritten,
    TerminalSize,
)
from service.execs.starts import ExecStart
from service.execs.tty import ExecNotRunning, TtyNotEnabled
from service.pagination import decode_cursor, page_of
from service.runtime import ExecNotFound, TtySize
from service.sandboxes import service as sandboxes
from service.sandboxes.activity import following, touch
from service.sandboxes.births import request_hash

POLL_S = 0.25
# How often a running event stream asks whether its credential still holds.
RECHECK_S = 2.0
# A running event stream silent this long sends a comment, so a proxy's read timeout does not
# cut a command that prints nothing for a while (an SSE reader skips comments).
KEEPALIVE_S = 15.0
REPLAY_GRACE_S = 5.0  # beyond the exec's own deadline, for its record to be finished


@dataclass(frozen=True, slots=True)
class ExecCall:
    """A call on one exec of a sandbox as a request makes it: the caller and its audit
    context, the exec it names, and what reaches it (the database, the exec runner)."""

    db: Db
    runner: ExecRunner
    principal: Principal
    ctx: AuditContext
    sandbox_id: str
    exec_id: str

    def missing(self) -> NotFound:
        return NotFound(f"no exec {self.exec_id} in sandbox {self.sandbox_id}")


def repository(session: AsyncSession, principal: Principal) -> ExecRepository:
    assert principal.tenant_id is not None
    return ExecRepository(session, principal.tenant_id, principal.sandbox_id)


async def _output(repo: ExecRepository, exec_id: str) -> dict[str, bytes]:
    out = {"stdout": b"", "stderr": b""}
    seq = 0
    while True:
        chunks = await repo.chunks(exec_id, after_seq=seq)
        for chunk in chunks:
            out[chunk.stream] += chunk.data
        if len(chunks) < 500:
            return out
        seq = chunks[-1].seq


def to_schema(row: ExecRow, output: dict[str, bytes] | None) -> Exec:
    return Exec(
        id=row.id,
        sandbox_id=row.sandbox_id,
        state=row.state,  # type: ignore[arg-type]
        cmd=row.cmd,
        cwd=row.cwd,
        user=row.user,
        env=row.env,
        secret_names=row.secret_names,
        timeout_s=row.timeout_s,
        exit_code=row.exit_code,
        outcome=row.outcome,
        stdout=output["stdout"].decode(errors="replace") if output is not None else None,
        stderr=output["stderr"].decode(errors="replace") if output is not None else None,
        output_purged=row.output_purged,
        stdout_bytes=row.stdout_bytes,
        stderr_bytes=row.stderr_bytes,
        stdout_truncated=row.stdout_truncated,
        stderr_truncated=row.stderr_truncated,
        duration_ms=row.duration_ms,
        error=row.error,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        tty=row.tty,
    )


def summary(row: ExecRow) -> ExecSummary:
    return ExecSummary(
        id=row.id,
        sandbox_id=row.sandbox_id,
        state=row.state,  # type: ignore[arg-type]
        cmd=row.cmd,
        exit_code=row.exit_code,
        outcome=row.outcome,
        stdout_bytes=row.stdout_bytes,
        stderr_bytes=row.stderr_bytes,
        duration_ms=row.duration_ms,
        created_at=row.created_at,
        finished_at=row.finished_at,
        output_purged=row.output_purged,
    )


async def get_exec(call: ExecCall) -> Exec:
    async with call.db() as session:
        repo = repository(session, call.principal)
        row = await repo.get(call.sandbox_id, call.exec_id)
        if row is None:
            raise call.missing()
        found = to_schema(row, await _output(repo, call.exec_id))
    if found.state == "running":  # someone follows it: its sandbox is not idle
        await touch(call.db, call.sandbox_id)
    return found


async def create_exec(
    db: Db,
    runner: ExecRunner,
    principal: Principal,
    ctx: AuditContext,
    sandbox_id: str,
    data: ExecCreate,
    idempotency_key: str | None,
) -> tuple[Exec, bool]:
    """Start an exec; with `wait`, return it finished. Returns it and whether it is final."""
    assert principal.tenant_id is not None
    # Secret values never reach the record, not even hashed: a retry is judged by names.
    judged = request_hash(
        msgspec.structs.replace(data, secrets=dict.fromkeys(sorted(data.secrets), ""))
    )
    start = ExecStart(
        principal.tenant_id, principal.sandbox_id, ctx, sandbox_id, data, idempotency_key, judged
    )
    try:
        started = await runner.start(start)
    except sandboxes.SandboxPaused:
        await runner.wake(principal.tenant_id, principal.sandbox_id, ctx, sandbox_id, why="exec")
        started = await runner.start(start)
    await touch(runner.db, sandbox_id)
    call = ExecCall(db, runner, principal, ctx, sandbox_id, started.exec_id)
    if not data.wait:
        result = await get_exec(call)
        return result, result.state != "running"
    async with following(runner.db, sandbox_id):
        return await _wait_for(call, data, started)


async def _wait_for(call: ExecCall, data: ExecCreate, started: Started) -> tuple[Exec, bool]:
    """The exec once finished (or its deadline passed). A retry (the same Idempotency-Key)
    waits for the first request's exec as that one does, also when it is not running in this
    process yet or runs in another."""
    until = time.monotonic() + data.timeout_s + REPLAY_GRACE_S
    while True:
        finished = await call.runner.wait(started.exec_id)
        if finished is not None:
            return finished, True
        result = await get_exec(call)
        final = result.state != "running"
        if final or started.created or time.monotonic() >= until:
            return result, final
        await call.runner.wait_change(started.exec_id, POLL_S)


async def list_execs(
    session: AsyncSession, principal: Principal, sandbox_id: str, *, limit: int, cursor: str | None
) -> ExecPage:
    assert principal.tenant_id is not None
    await sandboxes.get_row(session, principal, sandbox_id)
    after = decode_cursor(cursor, str)
    rows = await repository(session, principal).list(sandbox_id, limit=limit + 1, after_id=after)
    items, next_cursor = page_of(rows, limit, key=lambda r: r.id)
    return ExecPage(items=[summary(r) for r in items], next_cursor=next_cursor)


async def kill_exec(call: ExecCall) -> Exec:
    principal, sandbox_id, exec_id = call.principal, call.sandbox_id, call.exec_id
    assert principal.tenant_id is not None
    async with call.db() as session, session.begin():
        row = await repository(session, principal).get(sandbox_id, exec_id)
        if row is None:
            raise call.missing()
        sandbox = await sandboxes.get_row(session, principal, sandbox_id)
        if row.state != "running":
            raise Conflict(f"exec {exec_id} is {row.state}", extra={"state": row.state})
        await record(
            session,
            call.ctx,
            chain=principal.tenant_id,
            action="exec.kill",
            target=exec_id,
            details={"sandbox_id": sandbox_id},
        )
        runtime_exec_id, runtime_id = row.runtime_exec_id, sandbox.runtime_id
    if runtime_exec_id is not None and runtime_id is not None:
        await _woken(call, "exec kill")
        await call.runner.kill(exec_id, runtime_id, runtime_exec_id)
    await call.runner.wait(exec_id)
    return await get_exec(call)


async def write_stdin(call: ExecCall, data: bytes, *, close: bool) -> StdinWritten:
    """More stdin for a running exec started with `stdin_open` (recorded: its size, not its
    bytes)."""
    exec_id = call.exec_id
    async with call.db() as session:
        row = await repository(session, call.principal).get(call.sandbox_id, exec_id)
        if row is None:
            raise call.missing()
        if row.state != "running":
            raise Conflict(f"exec {exec_id} is {row.state}", extra={"state": row.state})
    # Written before it is recorded: a write may wait for the process to read, and no
    # transaction stays open meanwhile; a refused write is not recorded.
    await _woken(call, "exec stdin")
    await call.runner.write_stdin(exec_id, data, close=close)
    await _record(call, "exec.stdin", bytes=len(data), close=close)
    return StdinWritten(written=len(data), closed=close)


async def resize_tty(call: ExecCall, size: TerminalSize) -> TerminalSize:
    """A new window for the terminal of a running exec started with `tty` (recorded)."""
    exec_id = call.exec_id
    async with call.db() as session:
        row = await repository(session, call.principal).get(call.sandbox_id, exec_id)
        if row is None:
            raise call.missing()
        sandbox = await sandboxes.get_row(session, call.principal, call.sandbox_id)
        if not row.tty:
            raise TtyNotEnabled(f"exec {exec_id} was not started with tty")
        if row.state != "running":
            raise ExecNotRunning(f"exec {exec_id} is {row.state}", extra={"state": row.state})
        runtime_exec_id, runtime_id = row.runtime_exec_id, sandbox.runtime_id
    if runtime_exec_id is None or runtime_id is None:  # its sandbox has no runtime any more
        raise ExecNotRunning(f"exec {exec_id} has no process to resize")
    await _woken(call, "exec resize")
    try:
        await call.runner.resize(exec_id, runtime_id, runtime_exec_id, TtySize(**_size(size)))
    except ExecNotFound:  # it ended meanwhile
        raise ExecNotRunning(f"exec {exec_id} has ended", extra={"state": "finished"}) from None
    await _record(call, "exec.resize", **_size(size))
    return size


async def _woken(call: ExecCall, why: str) -> None:
    """A running exec of a paused sandbox (a pause keeps them) is reached once it is resumed."""
    principal = call.principal
    assert principal.tenant_id is not None
    await call.runner.wake(
        principal.tenant_id, principal.sandbox_id, call.ctx, call.sandbox_id, why=why
    )


async def _record(call: ExecCall, action: str, **details: object) -> None:
    """The audit event of a call on the exec, in a transaction of its own."""
    assert call.principal.tenant_id is not None
    async with call.db() as session, session.begin():
        await record(
            session,
            call.ctx,
            chain=call.principal.tenant_id,
            action=action,
            target=call.exec_id,
            details={"sandbox_id": call.sandbox_id, **details},
        )


def _size(size: TerminalSize) -> dict[str, int]:
    return {"rows": size.rows, "cols": size.cols}


async def stream_ended(call: ExecCall, after: int) -> bool:
    """Whether a reader resuming after event `after` has already seen the `exit` event."""
    async with call.db() as session:
        row = await repository(session, call.principal).get(call.sandbox_id, call.exec_id)
        if row is None:
            raise call.missing()
        if row.state == "running":
            return False
        last = await session.scalar(
            select(func.max(ExecChunk.seq)).where(ExecChunk.exec_id == call.exec_id)
        )
    return after > (last or 0)


async def events(
    call: ExecCall, last_event_id: int, refusal: Callable[[], Awaitable[str | None]]
) -> AsyncIterator[ServerSentEventMessage]:
    """Output chunks as events (`id` = chunk sequence), then one `exit` event.

    A reader that reconnects with `Last-Event-ID: N` gets every chunk after N, so nothing is
    lost or repeated; chunks come from the database, so any replica can serve the stream.
    The credential is asked again every RECHECK_S (`refusal`): once it is revoked, expired or
    its tenant suspended, the stream ends with an `unauthenticated` event. A stream silent for
    KEEPALIVE_S sends a comment.
    """
    db, sandbox_id, exec_id = call.db, call.sandbox_id, call.exec_id
    seq = last_event_id
    recheck_at = time.monotonic() + RECHECK_S
    sent_at = time.monotonic()
    while True:
        if time.monotonic() >= recheck_at:
            reason = await refusal()
            if reason is not None:
                yield ServerSentEventMessage(
                    event="unauthenticated",
                    data=json.dumps({"code": "unauthenticated", "detail": reason}),
                )
                return
            recheck_at = time.monotonic() + RECHECK_S
        async with db() as session:
            repo = repository(session, call.principal)
            row = await repo.get(sandbox_id, exec_id)
            if row is None:
                return
            finished = row.state != "running"
            chunks = await repo.chunks(exec_id, after_seq=seq)
        if not finished:  # someone follows it: its sandbox is not idle
            await touch(db, sandbox_id)
        for chunk in chunks:
            seq = chunk.seq
            yield ServerSentEventMessage(
                id=str(chunk.seq),
                event=chunk.stream,
                data=json.dumps({"text": chunk.data.decode(errors="replace")}),
            )
        if chunks:
            sent_at = time.monotonic()
            continue
        if finished:
            yield ServerSentEventMessage(
                id=str(seq + 1),
                event="exit",
                data=json.dumps(
                    {
                        "state": row.state,
                        "exit_code": row.exit_code,
                        "outcome": row.outcome,
                        "duration_ms": row.duration_ms,
                        "stdout_truncated": row.stdout_truncated,
                        "stderr_truncated": row.stderr_truncated,
                        "error": row.error,
                        "output_purged": row.output_purged,
                    }
                ),
            )
            return
        if time.monotonic() - sent_at >= KEEPALIVE_S:
            sent_at = time.monotonic()
            yield ServerSentEventMessage(comment="keep-alive", data=None)
        await call.runner.wait_change(exec_id, POLL_S)

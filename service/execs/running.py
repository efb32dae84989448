"""An exec in the runtime, from its recorded start to its finish row: output masked and stored
as it arrives (so streams can resume), network counters read around it where the sandbox has
a network, and the finish written with its audit event whatever ended it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import msgspec

from service import server_timing, telemetry
from service.audit.recorder import AuditContext
from service.db.base import utcnow
from service.db.session import Db
from service.execs.masking import SecretValues
from service.execs.output import ChunkSink
from service.execs.recording import ExecEnd, ExecRow
from service.execs.records import Event, ExecRecords
from service.execs.schemas import Exec
from service.execs.stdin import StdinPipe
from service.execs.stored import OutputTrims
from service.runtime import (
    ExecRequest,
    ExecResult,
    SandboxFailed,
    SandboxRuntime,
    SandboxRuntimeError,
)
from service.sandboxes import service as sandboxes
from service.sandboxes.activity import Arrival

log = logging.getLogger("airlock.execs")

SYSTEM = AuditContext(actor="system:exec", request_id=None, client=None)


@dataclass
class Live:
    """An exec running in this process: the task, and a signal for stream readers."""

    task: asyncio.Task[Exec | None]
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    stdin: StdinPipe | None = None  # started with `stdin_open`
    kill_reason: str | None = None  # why it was killed, recorded as its error if it was

    def notify(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


@dataclass(frozen=True)
class ExecTask:
    """What running a recorded exec needs."""

    runtime: SandboxRuntime
    runtime_id: str  # the sandbox's, in the runtime
    row: ExecRow
    request: ExecRequest
    ctx: AuditContext
    masks: SecretValues  # every secret value of the sandbox, masked in the output
    policy: dict[str, Any]  # the sandbox's network policy
    output_cap: int  # the tenant's stored output, in bytes (stored.cap_of)
    arrival: Arrival  # ended once the runtime has the exec


@dataclass(frozen=True)
class Outcome:
    """How the exec ended: the runtime's result, or the error that stood in for it."""

    result: ExecResult | None
    error: str | None
    started: float  # time.monotonic() at the start, for a duration without a result
    state: str | None = None  # the state to record, when not what the result says
    net: dict[str, Any] | None = None  # what the network policy let through and refused


class Runs:
    """Runs recorded execs: each in a task of its own, independent of the request that
    started it (ExecRunner makes the task)."""

    def __init__(
        self, db: Db, records: ExecRecords, live: dict[str, Live], trims: OutputTrims
    ) -> None:
        self.db = db
        self.records = records
        self.live = live
        self.trims = trims

    async def run(self, task: ExecTask) -> Exec:
        """The exec in the runtime, as a span of the request that started it."""
        attributes = {
            "airlock.sandbox_id": task.row.sandbox_id,
            "airlock.exec_id": task.row.id,
            "airlock.runtime": task.runtime.name,
        }
        with telemetry.span("airlock.exec", attributes) as span:
            final = await self._execute(task)
            span.set_attribute("airlock.exec.outcome", final.outcome or "none")
            if final.exit_code is not None:
                span.set_attribute("airlock.exec.exit_code", final.exit_code)
            return final

    async def _execute(self, task: ExecTask) -> Exec:
        runtime, runtime_id, row = task.runtime, task.runtime_id, task.row
        exec_id = row.id
        started = time.monotonic()
        networked = task.policy.get("mode", "none") != "none"
        before = await _counters(runtime, runtime_id) if networked else None
        sink = ChunkSink(self.records, exec_id, task.masks, lambda: self.notify(exec_id))
        result: ExecResult | None = None
        error: str | None = None
        execution = None
        began = time.perf_counter()
        try:
            async with sink.flushing():
                try:
                    execution = await runtime.exec(runtime_id, task.request)
                finally:
                    task.arrival.end()
                async for chunk in execution.output():
                    await sink.add(chunk.stream, chunk.data)
            result = await execution.wait()
            # From the start asked of the runtime to the exit read, the output passed on
            # meanwhile: what the request's `Server-Timing` calls `runtime`.
            server_timing.add("runtime", time.perf_counter() - began)
        except SandboxFailed as exc:
            error = f"sandbox failed: {exc.reason}"
            await sandboxes.mark_failed(self.db, row.tenant_id, row.sandbox_id, SYSTEM, exc.reason)
        except SandboxRuntimeError as exc:
            error = exc.public()[:500]
            if exc.public() != str(exc):
                log.warning("exec %s in %s: %s", exec_id, row.sandbox_id, exc)
        except asyncio.CancelledError:
            error = "the service stopped while this exec ran"
            if execution is not None:
                # A stopping service leaves no process of its execs behind.
                with contextlib.suppress(Exception):
                    await asyncio.shield(asyncio.wait_for(execution.kill(), 10))
            stopped = Outcome(None, error, started, state="interrupted")
            await asyncio.shield(self._finish(task, sink, stopped))
            raise
        except Exception as exc:  # recorded as a failed exec instead of a lost one
            log.exception("exec %s failed", exec_id)
            error = f"internal error: {type(exc).__name__}"
        net = None
        if networked:
            # What the policy let through and refused while this exec ran.
            after = await _counters(runtime, runtime_id)
            net = {"mode": task.policy.get("mode"), "allow": task.policy.get("allow", [])}
            if before is not None and after is not None:
                for count in ("allowed_packets", "blocked_packets"):
                    net[count] = after.get(count, 0) - before.get(count, 0)
        if result is not None and result.outcome == "killed" and error is None:
            live = self.live.get(exec_id)
            error = live.kill_reason if live is not None else None
        final = await self._finish(task, sink, Outcome(result, error, started, net=net))
        if result is not None and result.outcome == "oom":
            await self._check_sandbox(task)
        return final

    async def _check_sandbox(self, task: ExecTask) -> None:
        # A memory cap hit can end the whole sandbox; if so, record it as failed with the reason.
        try:
            info = await task.runtime.get(task.runtime_id)
        except SandboxRuntimeError:
            return
        if info.state == "failed":
            await sandboxes.mark_failed(
                self.db,
                task.row.tenant_id,
                task.row.sandbox_id,
                SYSTEM,
                info.failure_reason or "failed",
            )

    def notify(self, exec_id: str) -> None:
        live = self.live.get(exec_id)
        if live is not None:
            live.notify()

    async def _finish(self, task: ExecTask, sink: ChunkSink, outcome: Outcome) -> Exec:
        row, result = task.row, outcome.result
        # Output that ended early (capped, or cut off) may end inside a secret.
        await sink.close(
            cut_stdout=result.stdout_truncated if result else True,
            cut_stderr=result.stderr_truncated if result else True,
        )
        end = _end_of(sink, outcome)
        async with self.records.unit() as tx:
            total = await tx.finish(row.id, end, _finish_event(task, end, outcome.net))
        self.notify(row.id)
        if total is not None and total > task.output_cap:
            self.trims.soon(row.tenant_id, task.output_cap)
        output = {name: data.decode(errors="replace") for name, data in sink.kept.items()}
        return msgspec.convert(
            {
                **row.values(),
                **end.values(),
                "stdout": output["stdout"],
                "stderr": output["stderr"],
            },
            Exec,
        )


def _end_of(sink: ChunkSink, outcome: Outcome) -> ExecEnd:
    """The finish row: from the runtime's result where there is one, else from what the sink
    saw."""
    result = outcome.result
    finished_at = utcnow()
    duration_s = result.duration_s if result else time.monotonic() - outcome.started
    if result is None:
        return ExecEnd(
            state=outcome.state or "failed",
            finished_at=finished_at,
            duration_ms=int(duration_s * 1000),
            error=outcome.error,
            exit_code=None,
            outcome=None,
            stdout_bytes=sink.bytes["stdout"],
            stderr_bytes=sink.bytes["stderr"],
            stdout_truncated=False,
            stderr_truncated=False,
            stored_bytes=sink.stored,
        )
    return ExecEnd(
        state=outcome.state or "finished",
        finished_at=finished_at,
        duration_ms=int(duration_s * 1000),
        error=outcome.error,
        exit_code=result.exit_code,
        outcome=result.outcome,
        stdout_bytes=result.stdout_bytes,
        stderr_bytes=result.stderr_bytes,
        stdout_truncated=result.stdout_truncated,
        stderr_truncated=result.stderr_truncated,
        stored_bytes=sink.stored,
    )


def _finish_event(task: ExecTask, end: ExecEnd, net: dict[str, Any] | None) -> Event:
    """The audit event written with the finish row."""
    return Event(
        task.ctx,
        chain=task.row.tenant_id,
        action="exec.finish",
        target=task.row.id,
        outcome=end.outcome or end.state,
        details={
            "exit_code": end.exit_code,
            "duration_ms": end.duration_ms,
            "stdout_bytes": end.stdout_bytes,
            "stderr_bytes": end.stderr_bytes,
            "error": end.error,
            **({"network": net} if net is not None else {}),
        },
    )


async def _counters(runtime: SandboxRuntime, runtime_id: str) -> dict[str, int] | None:
    try:
        return await runtime.network_counters(runtime_id)
    except SandboxRuntimeError:
        return None

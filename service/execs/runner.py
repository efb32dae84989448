"""Running execs: the start row is committed before the process starts, output is masked and
stored as it arrives (so streams can resume), and the finish row is written after.

Each exec runs in its own task, independent of the request that started it: a client that
disconnects does not stop its command, and `wait: false` returns while the task goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from service import telemetry
from service.audit.recorder import AuditContext
from service.db.base import utcnow
from service.db.session import Db
from service.errors import IdempotencyKeyReused, NotFound, Unprocessable
from service.execs import stored
from service.execs.masking import SecretValues
from service.execs.output import ChunkSink
from service.execs.quotas import check_quotas, default_limits
from service.execs.recording import Lookup
from service.execs.records import Event, ExecRecords, RecordTx
from service.execs.sandbox_secrets import SandboxSecrets
from service.execs.schemas import DEFAULT_COLS, DEFAULT_ROWS, Exec, ExecCreate
from service.execs.stdin import StdinNotOpen, StdinPipe
from service.execs.tty import require_tty
from service.ids import new_id
from service.runtime import (
    ExecNotFound,
    ExecRequest,
    ExecResult,
    SandboxFailed,
    SandboxRuntime,
    SandboxRuntimeError,
    TtySize,
    new_exec_id,
)
from service.runtime.holder import RuntimeHolder
from service.sandboxes import service as sandboxes
from service.sandboxes.activity import Arrival
from service.sandboxes.waking import Wake
from service.tenants.schemas import Quotas
from service.tenants.service import quotas_of

# A tenant's stored quotas are merged over these (service.tenants.service.quotas_of).
DEFAULT_QUOTAS = Quotas()

log = logging.getLogger("airlock.execs")


SYSTEM = AuditContext(actor="system:exec", request_id=None, client=None)
KILL_WAIT_S = 5.0


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


@dataclass
class Started:
    exec_id: str
    created: bool


class ExecRunner:
    def __init__(
        self,
        db: Db,
        engine: AsyncEngine,
        holder: RuntimeHolder,
        key_file: Path | None = None,
        *,
        wake: Wake,
    ) -> None:
        self.db = db
        # What an exec call does first when its sandbox is paused (service.flows.pause.wake).
        self.wake = wake
        # No ORM sessions on the exec path: they cost more per statement than the database
        # does (see service.execs.records).
        self.records = ExecRecords(engine)
        self.holder = holder
        # Every secret value the execs of each sandbox were given: all of them are masked in
        # every exec of that sandbox. Sealed with the secrets key in `key_file` where kept.
        self.secrets = SandboxSecrets(db, key_file)
        self.live: dict[str, Live] = {}
        # Tenants whose stored output passed their cap: the cap to trim to, and the trim task.
        self.over_cap: dict[str, int] = {}
        self.trims: dict[str, asyncio.Task[None]] = {}

    async def start(
        self,
        tenant_id: str,
        only_sandbox: str | None,
        ctx: AuditContext,
        sandbox_id: str,
        data: ExecCreate,
        idempotency_key: str | None,
        request_hash: str,
    ) -> Started:
        runtime = await self.holder.get()
        overlap = sorted(set(data.env) & set(data.secrets))
        if overlap:
            raise Unprocessable(f"names in both env and secrets: {', '.join(overlap)}")
        secret_values = list(data.secrets.values())
        await self.secrets.load(tenant_id, sandbox_id)
        self.secrets.check(tenant_id, sandbox_id, secret_values)
        # Secrets belong in `secrets`; wherever else one was put (this exec's, or one an earlier
        # exec of the sandbox was given), the record shows `***`.
        masks = self.secrets.known(tenant_id, sandbox_id).joined(secret_values)
        masked_cmd = [masks.mask_text(arg) for arg in data.cmd]
        masked_cwd = masks.mask_text(data.cwd)
        masked_env = {k: masks.mask_text(v) for k, v in data.env.items()}
        arrival = Arrival(sandbox_id)  # ended by its task once the runtime has it
        try:
            return await self._start(
                runtime,
                tenant_id,
                only_sandbox,
                ctx,
                sandbox_id,
                data,
                idempotency_key,
                request_hash,
                secret_values,
                (masked_cmd, masked_cwd, masked_env),
                arrival,
            )
        except IntegrityError:
            # The same Idempotency-Key raced in from a concurrent retry: answer as it did.
            if idempotency_key is None:
                raise
            async with self.records.unit() as tx:
                replay = await _replay(tx, tenant_id, sandbox_id, idempotency_key, request_hash)
            assert replay is not None
            return replay
        finally:
            if not arrival.taken:  # no task of its own: nothing arrives
                arrival.end()

    async def _start(
        self,
        runtime: SandboxRuntime,
        tenant_id: str,
        only_sandbox: str | None,
        ctx: AuditContext,
        sandbox_id: str,
        data: ExecCreate,
        idempotency_key: str | None,
        request_hash: str,
        secret_values: list[str],
        masked: tuple[list[str], str, dict[str, str]],
        arrival: Arrival,
    ) -> Started:
        masked_cmd, masked_cwd, masked_env = masked
        now = utcnow()
        values = {
            "id": new_id("exe"),
            "tenant_id": tenant_id,
            "sandbox_id": sandbox_id,
            "state": "running",
            "cmd": masked_cmd,
            "cwd": masked_cwd,
            "user": data.user,
            "env": masked_env,
            "secret_names": sorted(data.secrets),
            "timeout_s": data.timeout_s,
            "has_stdin": data.stdin is not None or data.stdin_open,
            "tty": data.tty,
            "stdout_bytes": 0,
            "stderr_bytes": 0,
            "stdout_truncated": False,
            "stderr_truncated": False,
            "idempotency_key": idempotency_key,
            "request_hash": request_hash,
            "created_at": now,
            "started_at": now,
            # Chosen here and recorded with the start: after a crash the reconciler can find
            # and kill the process with no further write on the way.
            "runtime_exec_id": new_exec_id(),
        }
        event = Event(
            ctx,
            chain=tenant_id,
            action="exec.start",
            target=values["id"],
            outcome="started",
            details={
                "sandbox_id": sandbox_id,
                "cmd": masked_cmd,
                "cwd": masked_cwd,
                "user": data.user,
                "env_names": sorted(data.env),
                "secret_names": sorted(data.secrets),
                "timeout_s": data.timeout_s,
                "tty": data.tty,
            },
        )
        facts = Lookup(tenant_id, sandbox_id, only_sandbox, now - timedelta(seconds=60))
        if data.tty:
            await require_tty(self.records, runtime, facts)
        limits = default_limits(data.timeout_s, DEFAULT_QUOTAS)
        # Written with the start, so no process holds a value the sandbox's rows lack.
        sealed = self.secrets.sealed(tenant_id, sandbox_id, secret_values, now)
        async with self.records.unit() as tx, tx.atomic(bool(sealed)):
            if idempotency_key is not None:
                if await tx.facts(*facts) is None:
                    raise NotFound(f"no sandbox {sandbox_id}")
                replay = await _replay(tx, tenant_id, sandbox_id, idempotency_key, request_hash)
                if replay is not None:
                    return replay
            sandbox, started = await tx.facts_and_start(facts, limits, values, event)
            if sandbox is None:
                raise NotFound(f"no sandbox {sandbox_id}")
            if not started:
                sandboxes.require_running(sandbox)
                check_quotas(quotas_of(sandbox), data.timeout_s, sandbox)
                # Checked and written as one statement where the form can (PostgreSQL):
                # never inserted after checks made apart from it.
                assert not tx.decides_start, "the start's statement and its checks disagree"
                await tx.insert_started(values, event)
            await tx.insert_secret_values(sealed)
        # Recorded, so the sandbox is the caller's: from now on its every exec masks these too.
        await self.secrets.settle(tenant_id, sandbox_id, sandbox.runtime_id)
        masks = self.secrets.add(tenant_id, sandbox_id, secret_values)
        exec_id, runtime_id = values["id"], sandbox.runtime_id
        first_stdin = data.stdin.encode() if data.stdin is not None else None
        pipe = StdinPipe(first_stdin) if data.stdin_open else None
        request = ExecRequest(
            argv=list(data.cmd),
            cwd=data.cwd,
            # The sandbox's own env under the request's: a sandbox claimed from the warm pool
            # was started before its tenant's env was known, so the runtime does not have it.
            env={**(sandbox.env or {}), **data.env, **data.secrets},
            stdin=pipe.chunks() if pipe is not None else first_stdin,
            user=data.user,
            timeout_s=data.timeout_s,
            output_cap=data.max_output_bytes,
            exec_id=values["runtime_exec_id"],
            tty=TtySize(rows=data.rows or DEFAULT_ROWS, cols=data.cols or DEFAULT_COLS)
            if data.tty
            else None,
        )
        task = asyncio.create_task(
            self._run(
                runtime,
                tenant_id,
                sandbox_id,
                runtime_id,
                values,
                request,
                ctx,
                masks,
                dict(sandbox.network or {}),
                stored.cap_of(sandbox.quotas),
                arrival,
            ),
            name=f"exec-{exec_id}",
        )
        arrival.taken = True
        task.add_done_callback(lambda _t: arrival.end())  # whatever happened on its way
        self.live[exec_id] = Live(task=task, stdin=pipe)
        task.add_done_callback(lambda _t: self._forget(exec_id))
        return Started(exec_id, created=True)

    def _forget(self, exec_id: str) -> None:
        live = self.live.pop(exec_id, None)
        if live is not None:
            if live.stdin is not None:
                live.stdin.end()
            live.notify()

    async def wait(self, exec_id: str) -> Exec | None:
        """The finished exec, when it ran in this process; None when it ran elsewhere."""
        live = self.live.get(exec_id)
        if live is None:
            return None
        # Shielded: the request giving up waiting does not cancel the command.
        with contextlib.suppress(Exception):
            return await asyncio.shield(live.task)
        return None

    async def wait_change(self, exec_id: str, timeout_s: float) -> None:
        live = self.live.get(exec_id)
        if live is None:
            await asyncio.sleep(timeout_s)
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(live.changed.wait(), timeout_s)

    async def _run(
        self,
        runtime: SandboxRuntime,
        tenant_id: str,
        sandbox_id: str,
        runtime_id: str,
        row: dict[str, Any],
        *rest: Any,
    ) -> Exec:
        """The exec in the runtime, as a span of the request that started it."""
        attributes = {
            "airlock.sandbox_id": sandbox_id,
            "airlock.exec_id": row["id"],
            "airlock.runtime": runtime.name,
        }
        with telemetry.span("airlock.exec", attributes) as span:
            final = await self._execute(runtime, tenant_id, sandbox_id, runtime_id, row, *rest)
            span.set_attribute("airlock.exec.outcome", final.outcome or "none")
            if final.exit_code is not None:
                span.set_attribute("airlock.exec.exit_code", final.exit_code)
            return final

    async def _execute(
        self,
        runtime: SandboxRuntime,
        tenant_id: str,
        sandbox_id: str,
        runtime_id: str,
        row: dict[str, Any],
        request: ExecRequest,
        ctx: AuditContext,
        secrets: SecretValues,
        policy: dict[str, Any],
        output_cap: int,
        arrival: Arrival,
    ) -> Exec:
        exec_id = row["id"]
        started = time.monotonic()
        networked = policy.get("mode", "none") != "none"
        before = await self._counters(runtime, runtime_id) if networked else None
        sink = ChunkSink(self.records, exec_id, secrets, lambda: self._notify(exec_id))
        result: ExecResult | None = None
        error: str | None = None
        execution = None
        try:
            async with sink.flushing():
                try:
                    execution = await runtime.exec(runtime_id, request)
                finally:
                    arrival.end()
                async for chunk in execution.output():
                    await sink.add(chunk.stream, chunk.data)
            result = await execution.wait()
        except SandboxFailed as exc:
            error = f"sandbox failed: {exc.reason}"
            await sandboxes.mark_failed(self.db, tenant_id, sandbox_id, SYSTEM, exc.reason)
        except SandboxRuntimeError as exc:
            error = exc.public()[:500]
            if exc.public() != str(exc):
                log.warning("exec %s in %s: %s", exec_id, sandbox_id, exc)
        except asyncio.CancelledError:
            error = "the service stopped while this exec ran"
            if execution is not None:
                # A stopping service leaves no process of its execs behind.
                with contextlib.suppress(Exception):
                    await asyncio.shield(asyncio.wait_for(execution.kill(), 10))
            await asyncio.shield(
                self._finish(
                    row, tenant_id, ctx, sink, None, error, started, output_cap, "interrupted"
                )
            )
            raise
        except Exception as exc:  # recorded as a failed exec instead of a lost one
            log.exception("exec %s failed", exec_id)
            error = f"internal error: {type(exc).__name__}"
        net = None
        if networked:
            # What the policy let through and refused while this exec ran.
            after = await self._counters(runtime, runtime_id)
            net = {"mode": policy.get("mode"), "allow": policy.get("allow", [])}
            if before is not None and after is not None:
                for count in ("allowed_packets", "blocked_packets"):
                    net[count] = after.get(count, 0) - before.get(count, 0)
        if result is not None and result.outcome == "killed" and error is None:
            live = self.live.get(exec_id)
            error = live.kill_reason if live is not None else None
        final = await self._finish(
            row, tenant_id, ctx, sink, result, error, started, output_cap, net=net
        )
        if result is not None and result.outcome == "oom":
            await self._check_sandbox(runtime, tenant_id, sandbox_id, runtime_id)
        return final

    @staticmethod
    async def _counters(runtime: SandboxRuntime, runtime_id: str) -> dict[str, int] | None:
        try:
            return await runtime.network_counters(runtime_id)
        except SandboxRuntimeError:
            return None

    async def _check_sandbox(
        self, runtime: SandboxRuntime, tenant_id: str, sandbox_id: str, runtime_id: str
    ) -> None:
        # A memory cap hit can end the whole sandbox; if so, record it as failed with the reason.
        try:
            info = await runtime.get(runtime_id)
        except SandboxRuntimeError:
            return
        if info.state == "failed":
            await sandboxes.mark_failed(
                self.db, tenant_id, sandbox_id, SYSTEM, info.failure_reason or "failed"
            )

    def _notify(self, exec_id: str) -> None:
        live = self.live.get(exec_id)
        if live is not None:
            live.notify()

    async def _finish(
        self,
        row: dict[str, Any],
        tenant_id: str,
        ctx: AuditContext,
        sink: ChunkSink,
        result: ExecResult | None,
        error: str | None,
        started: float,
        output_cap: int,
        state: str | None = None,
        net: dict[str, Any] | None = None,
    ) -> Exec:
        exec_id = row["id"]
        # Output that ended early (capped, or cut off) may end inside a secret.
        await sink.close(
            cut_stdout=result.stdout_truncated if result else True,
            cut_stderr=result.stderr_truncated if result else True,
        )
        values: dict[str, Any] = {
            "state": state or ("finished" if result is not None else "failed"),
            "finished_at": utcnow(),
            "duration_ms": int(
                (result.duration_s if result else time.monotonic() - started) * 1000
            ),
            "error": error,
            "exit_code": None,
            "outcome": None,
            "stdout_bytes": sink.bytes["stdout"],
            "stderr_bytes": sink.bytes["stderr"],
            "stdout_truncated": False,
            "stderr_truncated": False,
            "stored_bytes": sink.stored,
        }
        if result is not None:
            values.update(
                exit_code=result.exit_code,
                outcome=result.outcome,
                stdout_bytes=result.stdout_bytes,
                stderr_bytes=result.stderr_bytes,
                stdout_truncated=result.stdout_truncated,
                stderr_truncated=result.stderr_truncated,
            )
        async with self.records.unit() as tx:
            total = await tx.finish(
                exec_id,
                values,
                Event(
                    ctx,
                    chain=tenant_id,
                    action="exec.finish",
                    target=exec_id,
                    outcome=values["outcome"] or values["state"],
                    details={
                        "exit_code": values["exit_code"],
                        "duration_ms": values["duration_ms"],
                        "stdout_bytes": values["stdout_bytes"],
                        "stderr_bytes": values["stderr_bytes"],
                        "error": error,
                        **({"network": net} if net is not None else {}),
                    },
                ),
            )
        self._notify(exec_id)
        if total is not None and total > output_cap:
            self._trim_soon(tenant_id, output_cap)
        output = {name: data.decode(errors="replace") for name, data in sink.kept.items()}
        return msgspec.convert(
            {**row, **values, "stdout": output["stdout"], "stderr": output["stderr"]},
            Exec,
        )

    def _trim_soon(self, tenant_id: str, cap: int) -> None:
        """Trim the tenant's stored output to `cap` after this exec's answer, in a task of
        its own; a finish while one runs asks it for another round."""
        self.over_cap[tenant_id] = cap
        if tenant_id not in self.trims:
            self.trims[tenant_id] = asyncio.create_task(
                self._trim(tenant_id), name=f"trim-output-{tenant_id}"
            )

    async def _trim(self, tenant_id: str) -> None:
        try:
            while tenant_id in self.over_cap:
                cap = self.over_cap.pop(tenant_id)
                try:
                    async with self.records.engine.begin() as conn:
                        await stored.trim(conn, tenant_id, cap)
                except Exception:  # the retention job's trim is the backstop
                    log.exception("trimming the stored output of %s failed", tenant_id)
        finally:
            self.trims.pop(tenant_id, None)

    async def write_stdin(self, exec_id: str, data: bytes, *, close: bool) -> None:
        """More stdin for an exec running in this process, started with `stdin_open`."""
        live = self.live.get(exec_id)
        if live is None or live.task.done():
            raise StdinNotOpen(f"exec {exec_id} is not running")
        if live.stdin is None:
            raise StdinNotOpen(f"exec {exec_id} was not started with stdin_open")
        await live.stdin.write(data, close=close)

    async def kill(
        self, exec_id: str, runtime_id: str, runtime_exec_id: str, reason: str | None = None
    ) -> None:
        """Kill a running exec; `reason` becomes the error of its record if the kill ends it
        (an exec of this process)."""
        live = self.live.get(exec_id)
        if live is not None and reason is not None:
            live.kill_reason = reason
        runtime = await self.holder.get()
        await self._once_started(exec_id, lambda: runtime.kill_exec(runtime_id, runtime_exec_id))

    async def resize(
        self, exec_id: str, runtime_id: str, runtime_exec_id: str, size: TtySize
    ) -> None:
        """A new window for the terminal of a running exec (ExecNotFound once it ended)."""
        runtime = await self.holder.get()
        await self._once_started(
            exec_id, lambda: runtime.resize_exec(runtime_id, runtime_exec_id, size)
        )

    async def _once_started(self, exec_id: str, call: Callable[[], Awaitable[None]]) -> None:
        # The start is recorded before the runtime has the process: a call that comes in
        # between waits for it (while this process is still starting it).
        deadline = time.monotonic() + KILL_WAIT_S
        while True:
            try:
                await call()
                return
            except ExecNotFound:
                live = self.live.get(exec_id)
                if live is None or live.task.done() or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.02)

    async def shutdown(self) -> None:
        """Stop every exec of this process; each is recorded as interrupted."""
        tasks = [live.task for live in self.live.values()]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        for trim in list(self.trims.values()):
            with contextlib.suppress(BaseException):
                await trim


async def _replay(
    tx: RecordTx, tenant_id: str, sandbox_id: str, key: str, request_hash: str
) -> Started | None:
    """The exec an earlier request with this Idempotency-Key started, if any."""
    existing = await tx.replay_of(tenant_id, sandbox_id, key)
    if existing is None:
        return None
    exec_id, first_hash = existing
    if first_hash != request_hash:
        raise IdempotencyKeyReused()
    return Started(exec_id, created=False)

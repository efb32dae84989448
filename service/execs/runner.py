"""Starting execs: the start row is committed before the process starts (checked against the
sandbox's state and the tenant's quotas, an Idempotency-Key replayed), then the exec runs in a
task of its own (service.execs.running); stdin, kill, resize and waiting for an exec of this
process go through here.

Each exec runs independently of the request that started it: a client that disconnects does
not stop its command, and `wait: false` returns while the task goes on.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from service.db.base import utcnow
from service.db.session import Db
from service.errors import IdempotencyKeyReused, NotFound, Unprocessable
from service.execs import stored
from service.execs.quotas import check_quotas, default_limits
from service.execs.recording import Lookup
from service.execs.records import ExecRecords, RecordTx
from service.execs.running import ExecTask, Live, Runs
from service.execs.sandbox_secrets import SandboxSecrets
from service.execs.schemas import Exec
from service.execs.starts import (
    ExecStart,
    Masked,
    runtime_request,
    start_event,
    start_row,
    stdin_pipe,
)
from service.execs.stdin import StdinNotOpen
from service.execs.tty import require_tty
from service.runtime import ExecNotFound, SandboxRuntime, TtySize
from service.runtime.holder import RuntimeHolder
from service.sandboxes import service as sandboxes
from service.sandboxes.activity import Arrival
from service.sandboxes.waking import Wake
from service.tenants.schemas import Quotas
from service.tenants.service import quotas_of

# A tenant's stored quotas are merged over these (service.tenants.service.quotas_of).
DEFAULT_QUOTAS = Quotas()

KILL_WAIT_S = 5.0


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
        # What an exec call does first when its sandbox is paused (flows.resume.Resumes.wake).
        self.wake = wake
        # No ORM sessions on the exec path: they cost more per statement than the database
        # does (see service.execs.records).
        self.records = ExecRecords(engine)
        self.holder = holder
        # Every secret value the execs of each sandbox were given: all of them are masked in
        # every exec of that sandbox. Sealed with the secrets key in `key_file` where kept.
        self.secrets = SandboxSecrets(db, key_file)
        self.live: dict[str, Live] = {}
        self.runs = Runs(db, self.records, self.live, stored.OutputTrims(engine))

    async def start(self, start: ExecStart) -> Started:
        runtime = await self.holder.get()
        data, tenant_id, sandbox_id = start.data, start.tenant_id, start.sandbox_id
        overlap = sorted(set(data.env) & set(data.secrets))
        if overlap:
            raise Unprocessable(f"names in both env and secrets: {', '.join(overlap)}")
        await self.secrets.load(tenant_id, sandbox_id)
        self.secrets.check(tenant_id, sandbox_id, start.secret_values)
        # Secrets belong in `secrets`; wherever else one was put (this exec's, or one an earlier
        # exec of the sandbox was given), the record shows `***`.
        masks = self.secrets.known(tenant_id, sandbox_id).joined(start.secret_values)
        arrival = Arrival(sandbox_id)  # ended by its task once the runtime has it
        try:
            return await self._start(runtime, start, Masked.of(data, masks), arrival)
        except IntegrityError:
            # The same Idempotency-Key raced in from a concurrent retry: answer as it did.
            if start.idempotency_key is None:
                raise
            async with self.records.unit() as tx:
                replay = await _replay(tx, start)
            assert replay is not None
            return replay
        finally:
            if not arrival.taken:  # no task of its own: nothing arrives
                arrival.end()

    async def _start(
        self, runtime: SandboxRuntime, start: ExecStart, masked: Masked, arrival: Arrival
    ) -> Started:
        data, tenant_id, sandbox_id = start.data, start.tenant_id, start.sandbox_id
        now = utcnow()
        row = start_row(start, masked, now)
        event = start_event(start, row)
        facts = Lookup(tenant_id, sandbox_id, start.only_sandbox, now - timedelta(seconds=60))
        if data.tty:
            await require_tty(self.records, runtime, facts)
        limits = default_limits(data.timeout_s, DEFAULT_QUOTAS)
        # Written with the start, so no process holds a value the sandbox's rows lack.
        sealed = self.secrets.sealed(tenant_id, sandbox_id, start.secret_values, now)
        async with self.records.unit() as tx, tx.atomic(bool(sealed)):
            if start.idempotency_key is not None:
                if await tx.facts(*facts) is None:
                    raise NotFound(f"no sandbox {sandbox_id}")
                replay = await _replay(tx, start)
                if replay is not None:
                    return replay
            sandbox, started = await tx.facts_and_start(facts, limits, row, event)
            if sandbox is None:
                raise NotFound(f"no sandbox {sandbox_id}")
            if not started:
                sandboxes.require_running(sandbox)
                check_quotas(quotas_of(sandbox), data.timeout_s, sandbox)
                # Checked and written as one statement where the form can (PostgreSQL):
                # never inserted after checks made apart from it.
                assert not tx.decides_start, "the start's statement and its checks disagree"
                await tx.insert_started(row, event)
            await tx.insert_secret_values(sealed)
        # Recorded, so the sandbox is the caller's: from now on its every exec masks these too.
        await self.secrets.settle(tenant_id, sandbox_id, sandbox.runtime_id)
        masks = self.secrets.add(tenant_id, sandbox_id, start.secret_values)
        pipe = stdin_pipe(data)
        run = ExecTask(
            runtime=runtime,
            runtime_id=sandbox.runtime_id,
            row=row,
            request=runtime_request(data, row, sandbox.env, pipe),
            ctx=start.ctx,
            masks=masks,
            policy=dict(sandbox.network or {}),
            output_cap=stored.cap_of(sandbox.quotas),
            arrival=arrival,
        )
        task = asyncio.create_task(self.runs.run(run), name=f"exec-{row.id}")
        arrival.taken = True
        task.add_done_callback(lambda _t: arrival.end())  # whatever happened on its way
        self.live[row.id] = Live(task=task, stdin=pipe)
        task.add_done_callback(lambda _t: self._forget(row.id))
        return Started(row.id, created=True)

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
        await self.runs.trims.wait()


async def _replay(tx: RecordTx, start: ExecStart) -> Started | None:
    """The exec an earlier request with this Idempotency-Key started, if any."""
    assert start.idempotency_key is not None
    existing = await tx.replay_of(start.tenant_id, start.sandbox_id, start.idempotency_key)
    if existing is None:
        return None
    if existing.request_hash != start.request_hash:
        raise IdempotencyKeyReused()
    return Started(existing.exec_id, created=False)

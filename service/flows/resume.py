"""Resume: a paused sandbox restored in place, or started on another node from its checkpoint
when its own has no room; and `wake`, the resume a call that needs the sandbox running does
first (the response then carries `Airlock-Woke-Ms`, how long it took).

A resume on another node is a birth there (a new runtime sandbox from the checkpoint): the
sandbox's network must still be one the tenant may have, else it stays paused, and its rules
are built from the private ranges granted now, not from those the checkpoint holds.
"""

from __future__ import annotations

import asyncio
import time
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import msgspec

from service.audit.recorder import AuditContext, record
from service.db.base import utcnow
from service.db.session import Db
from service.errors import Conflict, NoCapacity, SandboxMoved
from service.flows.pause import back, runtime_state
from service.nodes.capacity import check_room
from service.nodes.local import LocalNode
from service.nodes.moves import move_paused, node_is_up, record_move
from service.nodes.owners import Owners
from service.runtime import SandboxFailed, SandboxRuntime, SandboxRuntimeError
from service.runtime.errors import ResourceExhausted
from service.runtime.holder import RuntimeHolder
from service.sandboxes.lifecycle import transition
from service.sandboxes.quotas import Caps
from service.sandboxes.quotas import check_room as check_tenant_room
from service.sandboxes.repository import SandboxRepository
from service.sandboxes.schemas import Sandbox, SandboxNetwork
from service.sandboxes.service import check_network, get_row_scoped, to_schema
from service.sandboxes.states import State
from service.tenants.repository import lock_tenant
from service.tenants.service import quotas_of

WOKE_HEADER = "airlock-woke-ms"
# How long the resume of the sandbox this request woke took (ms), for the response header.
woke_ms: ContextVar[int | None] = ContextVar("woke_ms", default=None)
# How long a call waits for a resume another call began.
WAKE_WAIT_S = 60.0


class Resumes:
    """Resume and wake, bound to the database, the runtime, this node and the app's cache of
    sandbox owners (told when a sandbox moves): built once by the app, which hands `wake` to
    the resources that need a sandbox running (service.sandboxes.waking)."""

    def __init__(self, db: Db, holder: RuntimeHolder, node: LocalNode, owners: Owners) -> None:
        self.db = db
        self.holder = holder
        self.node = node
        self.owners = owners

    async def resume(
        self,
        tenant_id: str,
        only_sandbox: str | None,
        ctx: AuditContext,
        sandbox_id: str,
        *,
        reason: str = "requested",
    ) -> tuple[Sandbox, int | None]:
        """The sandbox running again, and how long its resume took (None: it was running). Its
        node's room is checked with this node's ratios (every wake checks it); a node with no
        room gives it to another that has some (SandboxMoved), when there is one."""
        runtime = await self.holder.get()
        try:
            resuming = await self._begin(tenant_id, only_sandbox, sandbox_id, reason)
        except NoCapacity:
            await self._elsewhere(runtime, ctx, sandbox_id)
            raise
        if resuming is None:
            async with self.db() as session:
                return to_schema(await get_row_scoped(session, tenant_id, None, sandbox_id)), None
        started = time.monotonic()
        try:
            new_id = await _restart(runtime, resuming)
        except BaseException as exc:
            await self._failed(runtime, ctx, resuming, exc)
            if resuming.in_place and isinstance(exc, ResourceExhausted):
                # The record had room for it, the host's memory not: another node may.
                await self._elsewhere(runtime, ctx, sandbox_id)
            raise
        took_ms = round((time.monotonic() - started) * 1000)
        return await self._running(runtime, ctx, resuming, new_id, took_ms), took_ms

    async def wake(
        self,
        tenant_id: str,
        only_sandbox: str | None,
        ctx: AuditContext,
        sandbox_id: str,
        *,
        why: str,
    ) -> None:
        """Resume the sandbox if it is paused (a call that needs it running came), noting how
        long that took for the response; a resume begun by another call is waited for. Any
        other state is left for the caller to judge."""
        deadline = time.monotonic() + WAKE_WAIT_S
        while True:
            async with self.db() as session:
                row = await SandboxRepository(session, tenant_id, only_sandbox).get(sandbox_id)
            if row is None or row.state not in (State.PAUSED, State.RESUMING):
                return
            if row.state == State.PAUSED:
                try:
                    _, took = await self.resume(
                        tenant_id, only_sandbox, ctx, sandbox_id, reason=f"woken: {why}"
                    )
                except Conflict:
                    took = None  # another call began resuming it first: wait for that one
                else:
                    if took is not None:
                        woke_ms.set(took)
                    return
            if time.monotonic() > deadline:
                return  # the caller's own check says what state it is in
            await asyncio.sleep(0.1)

    async def _elsewhere(self, runtime: SandboxRuntime, ctx: AuditContext, sandbox_id: str) -> None:
        """This node has no room to resume the paused sandbox: give it to a node that has some
        and say where it went (SandboxMoved); return when none can take it."""
        node = self.node
        if node.id is None or node.overcommit is None:
            return
        moved_to = await move_paused(
            self.db, self.db.kw["bind"], runtime, ctx, sandbox_id, node.id, node.overcommit,
            f"no room on node {node.id} to resume it",
        )  # fmt: skip
        if moved_to is not None:
            self.owners.forget(sandbox_id)
            raise SandboxMoved(sandbox_id, moved_to)

    async def _begin(
        self, tenant_id: str, only_sandbox: str | None, sandbox_id: str, reason: str
    ) -> _Resuming | None:
        """Record the intent (`resuming`) once the quotas and this node's room allow it; what
        to resume from (None: it already runs)."""
        node = self.node
        async with self.db() as session, session.begin():
            # The tenant first (as creates take it), so concurrent resumes count one after
            # another.
            quotas = quotas_of(await lock_tenant(session, tenant_id))
            row = await get_row_scoped(
                session, tenant_id, only_sandbox, sandbox_id, for_update=True
            )
            if row.state == State.RUNNING:
                return None
            if row.state != State.PAUSED or row.runtime_id is None:
                raise Conflict(
                    f"a {row.state} sandbox cannot be resumed", extra={"state": row.state}
                )
            if node.id is not None and row.node_id not in (None, node.id):
                raise SandboxMoved(sandbox_id, row.node_id)  # a stale route: its node resumes it
            usage = await SandboxRepository(session, tenant_id).active_usage()
            check_tenant_room(quotas, usage, Caps(row.cpus, row.memory_mib, row.disk_mib))
            if row.node_id is not None and node.overcommit is not None:
                await check_room(
                    session, row.node_id, (row.cpus, row.memory_mib, row.disk_mib), node.overcommit
                )
            in_place = row.pause_node_id is None or row.pause_node_id == row.node_id
            if not in_place:
                check_network(msgspec.convert(row.network, SandboxNetwork), quotas)
            await transition(session, row, State.RESUMING, reason)
            if not in_place and row.pause_snapshot_id is None:
                raise SandboxFailed(sandbox_id, "moved without a checkpoint")  # never made so
            return _Resuming(
                tenant_id,
                sandbox_id,
                reason,
                row.runtime_id,
                row.pause_snapshot_id,
                in_place,
                row.pause_node_id,
                list(quotas.network_private_cidrs),
            )

    async def _running(
        self,
        runtime: SandboxRuntime,
        ctx: AuditContext,
        resuming: _Resuming,
        new_id: str,
        took_ms: int,
    ) -> Sandbox:
        """Record the sandbox running on `new_id`, unless it was deleted meanwhile (what was
        started for it then goes)."""
        tenant_id = resuming.tenant_id
        async with self.db() as session, session.begin():
            row = await get_row_scoped(
                session, tenant_id, None, resuming.sandbox_id, for_update=True
            )
            if row.state != State.RESUMING:
                if new_id != resuming.runtime_id:
                    await runtime.destroy(new_id)
                return to_schema(row)
            paused_for = (utcnow() - row.paused_at).total_seconds() if row.paused_at else None
            reason = resuming.reason
            row.paused_at = row.pause_bytes = row.pause_expires_at = None
            row.pause_snapshot_id = row.pause_node_id = row.pause_digest = None
            row.runtime_id = new_id
            row.last_activity_at = utcnow()
            await transition(session, row, State.RUNNING, reason)
            details: dict[str, Any] = {
                "reason": reason, "duration_ms": took_ms, "paused_s": paused_for,
                "connections_cut": row.pause_cut or [],
            }  # fmt: skip
            if not resuming.in_place:
                details["from_checkpoint"] = resuming.snapshot_id
            await record(
                session, ctx, chain=tenant_id, action="sandbox.resume", target=row.id,
                details=details,
            )  # fmt: skip
            return to_schema(row)

    async def _failed(
        self, runtime: SandboxRuntime, ctx: AuditContext, resuming: _Resuming, exc: BaseException
    ) -> None:
        """Where a resume that did not happen leaves the sandbox. In place: paused when the
        host had no room or the runtime still holds it paused, else failed. From a checkpoint
        another node took: paused, given back to that node when it is still there (it holds
        the paused sandbox and resumes it in place once it has room); the checkpoint is never
        lost here."""
        tenant_id, sandbox_id = resuming.tenant_id, resuming.sandbox_id
        if resuming.in_place:
            if isinstance(exc, ResourceExhausted):
                target, why = State.PAUSED, "no room to resume"
            elif isinstance(exc, SandboxFailed):
                target, why = State.FAILED, exc.reason
            else:
                still = await runtime_state(runtime, resuming.runtime_id) == "paused"
                target, why = (State.PAUSED if still else State.FAILED), "resume failed"
            await back(self.db, tenant_id, sandbox_id, State.RESUMING, target, why)
            return
        why = f"could not start on node {self.node.id} from its checkpoint: {_said(exc)}"
        async with self.db() as session, session.begin():
            row = await get_row_scoped(session, tenant_id, None, sandbox_id, for_update=True)
            if row.state != State.RESUMING:
                return
            await transition(session, row, State.PAUSED, why)
            origin = resuming.origin
            if origin is not None and origin != row.node_id and await node_is_up(session, origin):
                await record_move(session, row, origin, ctx, why)
        self.owners.forget(sandbox_id)


@dataclass(frozen=True, slots=True)
class _Resuming:
    tenant_id: str
    sandbox_id: str
    reason: str
    runtime_id: str
    snapshot_id: str | None
    # Whether this node's runtime holds the paused sandbox (else it moved here from `origin`).
    in_place: bool
    origin: str | None
    # The private ranges granted to the tenant now (what a start from the checkpoint gets).
    grants: list[str]


async def _restart(runtime: SandboxRuntime, resuming: _Resuming) -> str:
    """The runtime sandbox running again: the paused one in place, or (it moved here) a new
    one from its checkpoint, fetched if need be."""
    if resuming.in_place:
        await runtime.resume(resuming.runtime_id)
        return resuming.runtime_id
    assert resuming.snapshot_id is not None
    clone = await runtime.create_from_snapshot(resuming.snapshot_id, resuming.grants)
    return clone.id


def _said(exc: BaseException) -> str:
    text = exc.public() if isinstance(exc, SandboxRuntimeError) else type(exc).__name__
    return str(text)[:300]


async def add_woke_header(message: Any, scope: Any) -> None:
    """`before_send`: the wake time of a sandbox this request resumed. A coroutine: Litestar
    runs a plain function hook in a worker thread, once for every message of every response."""
    took = woke_ms.get()
    if took is not None and message["type"] == "http.response.start":
        message.setdefault("headers", []).append((WOKE_HEADER.encode(), str(took).encode()))

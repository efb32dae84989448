"""Start-up repair: rows a crash left in between, and runtime sandboxes without a record.

- execs still `running` were cut off by the crash: they become `interrupted` (and whatever is
  left of their processes is killed);
- sandboxes still `creating` never got a usable runtime sandbox: they fail;
- sandboxes `stopping` are destroyed and stopped;
- `running` sandboxes whose runtime sandbox is gone fail with reason `lost`;
- warm pool members of this host: `starting` ones are dropped (whatever they started is an
  orphan), `ready` ones whose runtime sandbox is alive are kept, the others dropped;
- template builds cut off (`building`) go back in the queue;
- runtime sandboxes that no running record or ready pool member claims are destroyed;
- copies of snapshots no template refers to any more (deleted while this node was away) go.

Sandboxes live on the node that made them (a runtime's state dir on one host): each node
repairs only its own rows and runtime sandboxes.
"""

from __future__ import annotations

import contextlib
import logging

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.audit.recorder import AuditContext
from service.db.base import on_node
from service.db.models import Exec, PoolMember, Sandbox
from service.execs.interrupted import interrupt_execs
from service.jobs.templates import requeue_interrupted
from service.nodes.snapshots import forget_unused
from service.runtime import SandboxNotFound, SandboxRuntime, SandboxRuntimeError
from service.sandboxes.lifecycle import transition
from service.sandboxes.service import stop_sandbox
from service.sandboxes.states import LIVE, State

log = logging.getLogger("airlock.jobs.reconcile")

SYSTEM = AuditContext(actor="system:reconciler", request_id=None, client=None)


async def reconcile(
    db: async_sessionmaker[AsyncSession],
    runtime: SandboxRuntime,
    node_id: str,
    pool_host: str | None = None,
) -> dict[str, int]:
    """Repair what this node's crash left; rows of other nodes are theirs (rows from before
    nodes were recorded, with no node, are taken as this one's)."""
    counts = {
        "interrupted_execs": 0,
        "failed": 0,
        "stopped": 0,
        "lost": 0,
        "settled": 0,
        "orphans": 0,
    }
    counts["builds_requeued"] = await requeue_interrupted(db, node_id)
    here = on_node(Sandbox.node_id, node_id)
    async with db() as session, session.begin():
        counts["interrupted_execs"], to_kill = await interrupt_execs(
            session,
            SYSTEM,
            Exec.sandbox_id.in_(select(Sandbox.id).where(here)),
            "the service stopped while this exec ran",
        )
        creating = (
            await session.scalars(
                select(Sandbox).where(Sandbox.state == State.CREATING.value, here).with_for_update()
            )
        ).all()
        for row in creating:
            await transition(session, row, State.FAILED, "the service stopped while it started")
            counts["failed"] += 1
    for runtime_id, exec_id in to_kill:
        with contextlib.suppress(SandboxRuntimeError):
            await runtime.kill_exec(runtime_id, exec_id)

    async with db() as session:
        stopping = (
            await session.execute(
                select(Sandbox.id, Sandbox.tenant_id).where(
                    Sandbox.state == State.STOPPING.value, here
                )
            )
        ).all()
    for left in stopping:
        await stop_sandbox(db, runtime, left.id, left.tenant_id, reason="finished after restart")
        counts["stopped"] += 1

    keep: set[str] = set()
    held = [State.RUNNING, State.PAUSED, State.PAUSING, State.RESUMING]
    async with db() as session:
        running = (
            await session.execute(
                select(Sandbox.id, Sandbox.runtime_id).where(
                    Sandbox.state.in_([s.value for s in held]), here
                )
            )
        ).all()
    # The runtime is asked with no transaction open; each loss is recorded on its own. A pause
    # or resume the crash cut short is settled by what the runtime has: running or paused.
    for sandbox_id, runtime_id in running:
        try:
            if runtime_id is None:
                raise SandboxNotFound(sandbox_id)
            found = (await runtime.get(runtime_id)).state
            keep.add(runtime_id)
        except SandboxNotFound:
            found = "lost"
        async with db() as session, session.begin():
            row = await session.get(Sandbox, sandbox_id, with_for_update=True)
            if row is None or State(row.state) not in held:
                continue
            moved_here = row.pause_snapshot_id is not None and row.pause_node_id not in (
                None, node_id,
            )  # fmt: skip
            if found == "lost" and moved_here and row.state in (State.PAUSED, State.RESUMING):
                # It moved here while paused: its checkpoint is fetched when it is resumed.
                if row.state == State.RESUMING:
                    await transition(session, row, State.PAUSED, "resume cut short by a restart")
                    counts["settled"] += 1
                continue
            if found == "lost":
                await transition(session, row, State.FAILED, "lost")
                counts["lost"] += 1
            elif row.state in (State.PAUSING, State.RESUMING):
                target = {"running": State.RUNNING, "paused": State.PAUSED}.get(found)
                await transition(session, row, target or State.FAILED, f"{found} after restart")
                counts["settled"] += 1
    if pool_host is not None:
        keep |= await _pool_members(db, runtime, pool_host, counts)
    keep |= await _moved_away(db)

    for info in await runtime.list_sandboxes():
        if info.id not in keep:
            log.warning("destroying runtime sandbox %s: no running record claims it", info.id)
            await runtime.destroy(info.id)
            counts["orphans"] += 1
    counts["snapshot_copies_dropped"] = await forget_unused(db, runtime, node_id)
    return counts


async def drop_orphans(
    db: async_sessionmaker[AsyncSession],
    runtime: SandboxRuntime,
    node_id: str,
    pool_host: str,
    before: float,
) -> int:
    """A node that registers again after it was lost, while it kept running: destroy its
    runtime sandboxes made before `before` (epoch seconds) that no live record of this node
    claims (the sweep failed them). Work started since, and what is still starting, is left
    alone, unlike the start-up repair's."""
    here = on_node(Sandbox.node_id, node_id)
    async with db() as session:
        claimed = set(
            await session.scalars(
                select(Sandbox.runtime_id).where(
                    here,
                    Sandbox.state.in_([s.value for s in LIVE]),
                    Sandbox.runtime_id.is_not(None),
                )
            )
        ) | set(
            await session.scalars(
                select(PoolMember.runtime_id).where(
                    PoolMember.host == pool_host, PoolMember.runtime_id.is_not(None)
                )
            )
        )
    claimed |= await _moved_away(db)
    dropped = 0
    for info in await runtime.list_sandboxes():
        if info.id not in claimed and info.created_at < before:
            log.warning("destroying runtime sandbox %s: its node was lost meanwhile", info.id)
            await runtime.destroy(info.id)
            dropped += 1
    return dropped


async def _moved_away(db: async_sessionmaker[AsyncSession]) -> set[str]:
    """Runtime sandboxes of paused sandboxes, on any node: one that moved to another node
    keeps its checkpoint here until it runs there (service.nodes.moves)."""
    async with db() as session:
        return set(
            await session.scalars(
                select(Sandbox.runtime_id).where(
                    Sandbox.state.in_([State.PAUSED.value, State.RESUMING.value]),
                    Sandbox.pause_snapshot_id.is_not(None),
                    Sandbox.runtime_id.is_not(None),
                )
            )
        )


async def _pool_members(
    db: async_sessionmaker[AsyncSession], runtime: SandboxRuntime, host: str, counts: dict[str, int]
) -> set[str]:
    """The runtime ids of this host's ready pool members that are alive; the rest are dropped."""
    async with db() as session:
        members = (
            await session.execute(
                select(PoolMember.id, PoolMember.state, PoolMember.runtime_id).where(
                    PoolMember.host == host, PoolMember.state.in_(["starting", "ready"])
                )
            )
        ).all()
    keep: set[str] = set()
    dropped = []
    for member in members:
        member_id, runtime_id = member.id, member.runtime_id
        alive = False
        if member.state == "ready" and runtime_id is not None:
            with contextlib.suppress(SandboxRuntimeError):
                alive = (await runtime.get(runtime_id)).state == "running"
        if alive:
            keep.add(runtime_id)
        else:
            dropped.append(member_id)
    if dropped:
        async with db() as session, session.begin():
            await session.execute(
                delete(PoolMember).where(
                    PoolMember.id.in_(dropped), PoolMember.state.in_(["starting", "ready"])
                )
            )
    counts["pool_kept"], counts["pool_dropped"] = len(keep), len(dropped)
    return keep

"""A paused sandbox moves to another node when its own cannot take it back.

A paused sandbox holds nothing on its node but a checkpoint, and on gVisor that checkpoint is a
snapshot another node of the same runtime can fetch (verified by its digest, as template
snapshots are: service.nodes.snapshots) and start the sandbox from. So a paused sandbox moves:

- when it is woken on a node with no room for it: its node picks another ready node with room
  (one that already holds a copy first), records the move, and answers `sandbox_moved`; the
  API replica sends the call there, and that node's resume fetches the checkpoint and starts
  the sandbox from it (a new runtime sandbox, the same Airlock sandbox);
- when its node is lost: the sweep gives it to a live node that holds a verified copy
  (service.jobs.paused_copies keeps one on another node while it is paused); without one it
  fails with its node, as a running sandbox does.

Only the record moves here; the old node keeps its copy until the sandbox runs elsewhere (its
record then names another runtime sandbox), and then drops it (service.jobs.paused_copies).
"""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession

from service.audit.recorder import AuditContext, record
from service.db.models import Node, NodeSnapshot
from service.db.models import Sandbox as SandboxRow
from service.db.session import Db
from service.nodes import placement
from service.nodes.leases import LOST, db_now
from service.nodes.snapshots import digest_of, record_copy
from service.runtime import SandboxRuntime, SandboxRuntimeError
from service.sandboxes.states import State

log = logging.getLogger("airlock.nodes.moves")


async def ensure_digest(db: Db, runtime: SandboxRuntime, node_id: str, sandbox_id: str) -> bool:
    """The digest of a paused sandbox's checkpoint on this, its node, read through once and
    recorded (with this node's copy) so other nodes can fetch it and check what they got;
    whether it is on record now."""
    async with db() as session:
        row = await session.get(SandboxRow, sandbox_id)
        if (
            row is None
            or row.state != State.PAUSED
            or row.node_id != node_id
            or row.pause_node_id != node_id
            or row.pause_snapshot_id is None
        ):
            return False
        if row.pause_digest is not None:
            return True
        # The checkpoint's size is on record since the pause (its image's bytes, as a
        # snapshot's size counts them): no listing of every snapshot on the node to find it.
        snapshot_id, size = row.pause_snapshot_id, row.pause_bytes or 0
    try:
        digest = await digest_of(runtime, snapshot_id)
    except (SandboxRuntimeError, OSError, ValueError) as exc:
        # Resumed or deleted meanwhile, or unreadable: it is not offered to other nodes.
        log.warning("checkpoint %s of sandbox %s not read: %s", snapshot_id, sandbox_id, exc)
        return False
    async with db() as session, session.begin():
        row = await session.get(SandboxRow, sandbox_id, with_for_update=True)
        if row is None or row.pause_snapshot_id != snapshot_id:
            return False
        row.pause_digest = digest
    await record_copy(db, node_id, snapshot_id, digest, size)
    return True


async def move_paused(
    db: Db,
    engine: AsyncEngine,
    runtime: SandboxRuntime,
    ctx: AuditContext,
    sandbox_id: str,
    from_node: str,
    overcommit: tuple[float, float],
    why: str,
) -> str | None:
    """Give the paused sandbox to another ready node with room for it (of the same runtime
    and platform, which can restore its checkpoint); the node it is on now, or None when no
    node can take it (it stays here, paused). The caller tells its owner cache."""
    if not runtime.supports("move_snapshots"):
        return None
    async with db() as session:
        row = await session.get(SandboxRow, sandbox_id)
        if row is None or row.state != State.PAUSED or row.pause_snapshot_id is None:
            return None
        ask = placement.Ask(float(row.cpus), row.memory_mib, row.disk_mib, runtime=runtime.name)
        # Usually recorded already (by the copies job); only the node holding the checkpoint
        # it took moves the sandbox, as ensure_digest requires.
        digest_known = (
            row.pause_digest is not None and row.node_id == from_node == row.pause_node_id
        )
    views = await placement.node_views(engine)
    here = next((n for n in views if n.id == from_node), None)
    if here is None:
        return None
    others = [n for n in views if n.id != from_node and n.platform == here.platform]
    order = placement.place(others, ask, overcommit)
    if not order or not (digest_known or await ensure_digest(db, runtime, from_node, sandbox_id)):
        return None
    async with db() as session, session.begin():
        row = await session.get(SandboxRow, sandbox_id, with_for_update=True)
        if row is None or row.state != State.PAUSED or row.pause_digest is None:
            return None
        if row.node_id != from_node:  # another call moved it first
            return row.node_id
        holding = await _holders(session, row)
        order.sort(key=lambda n: n.id not in holding)
        target = order[0].id
        await record_move(session, row, target, ctx, why)
    log.info("paused sandbox %s moved from node %s to %s: %s", sandbox_id, from_node, target, why)
    return target


async def node_is_up(session: AsyncSession, node_id: str) -> bool:
    """Registered, not lost, its lease running (by the clock leases are judged by)."""
    up = await session.scalar(
        select(Node.id).where(
            Node.id == node_id, Node.state != LOST, Node.lease_expires_at > db_now(session)
        )
    )
    return up is not None


async def _holders(session: AsyncSession, row: SandboxRow) -> set[str]:
    """The nodes with a verified copy of the sandbox's checkpoint."""
    if row.pause_snapshot_id is None or row.pause_digest is None:
        return set()
    return set(
        await session.scalars(
            select(NodeSnapshot.node_id).where(
                NodeSnapshot.snapshot_id == row.pause_snapshot_id,
                NodeSnapshot.digest == row.pause_digest,
            )
        )
    )


async def record_move(
    session: AsyncSession, row: SandboxRow, target: str, ctx: AuditContext, why: str
) -> None:
    source = row.node_id
    row.node_id = target
    await record(
        session,
        ctx,
        chain=row.tenant_id,
        action="sandbox.move",
        target=row.id,
        details={"from_node": source, "to_node": target, "reason": why},
    )


async def has_live_copy(session: AsyncSession, row: SandboxRow, live_nodes: set[str]) -> bool:
    return bool((await _holders(session, row)) & live_nodes)


async def move_off_lost(
    session: AsyncSession, row: SandboxRow, live_nodes: set[str], ctx: AuditContext
) -> str | None:
    """In the sweep's transaction: a paused sandbox of a lost node goes to a live node that
    holds a verified copy of its checkpoint; None when none does."""
    holders = sorted((await _holders(session, row)) & live_nodes)
    if row.state != State.PAUSED or not holders:
        return None
    target = holders[0]
    await record_move(session, row, target, ctx, "node_lost")
    return target

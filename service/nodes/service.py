"""The operator's view of the nodes, and draining one."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import OPERATOR_CHAIN, AuditContext, record
from service.db.models import Node as NodeRow
from service.db.models import Sandbox as SandboxRow
from service.errors import Conflict, NotFound
from service.nodes.leases import DRAINING, LOST, READY
from service.nodes.schemas import Capacity, Node, NodeCapacity, NodeList
from service.sandboxes.states import ACTIVE

_ACTIVE = [s.value for s in ACTIVE]
# The audit action of putting a node in each state.
_ACTIONS = {DRAINING: "node.drain", READY: "node.ready"}


async def list_nodes(session: AsyncSession, only: str | None = None) -> NodeList:
    """Every node (or just `only`) with what its live sandboxes hold."""
    held = (
        select(
            SandboxRow.node_id,
            func.count().label("n"),
            func.coalesce(func.sum(SandboxRow.cpus), 0).label("cpus"),
            func.coalesce(func.sum(SandboxRow.memory_mib), 0).label("memory"),
            func.coalesce(func.sum(SandboxRow.disk_mib), 0).label("disk"),
        )
        .where(
            SandboxRow.state.in_(_ACTIVE),
            SandboxRow.node_id == only if only is not None else SandboxRow.node_id.is_not(None),
        )
        .group_by(SandboxRow.node_id)
        .subquery()
    )
    query = (
        select(NodeRow, held.c.n, held.c.cpus, held.c.memory, held.c.disk)
        .outerjoin(held, held.c.node_id == NodeRow.id)
        .order_by(NodeRow.id)
    )
    if only is not None:
        query = query.where(NodeRow.id == only)
    rows = await session.execute(query)
    return NodeList(
        items=[_node(row, n, cpus, memory, disk) for row, n, cpus, memory, disk in rows]
    )


async def drain(session: AsyncSession, ctx: AuditContext, node_id: str) -> Node:
    """No new sandboxes are placed on the node; the ones it holds stay."""
    return await _mark(session, ctx, node_id, DRAINING, "it is drained once it registers again")


async def undrain(session: AsyncSession, ctx: AuditContext, node_id: str) -> Node:
    """A drained node takes new sandboxes again."""
    return await _mark(session, ctx, node_id, READY, "it is ready again once it registers")


async def _mark(
    session: AsyncSession, ctx: AuditContext, node_id: str, state: str, when_lost: str
) -> Node:
    """The node (ready or draining) put in `state`, audited if that changed it; a lost node is
    a 409 (`when_lost`: what becomes of it once it registers again)."""
    row = await session.scalar(select(NodeRow).where(NodeRow.id == node_id).with_for_update())
    if row is None:
        raise NotFound(f"no node {node_id}")
    if row.state == LOST:
        raise Conflict(f"node {node_id} is lost: {when_lost}")
    if row.state != state:
        row.state = state
        action = _ACTIONS[state]
        await record(session, ctx, chain=OPERATOR_CHAIN, action=action, target=node_id)
    await session.flush()
    return (await list_nodes(session, only=node_id)).items[0]


def _node(
    row: NodeRow, n: int | None, cpus: int | None, memory: int | None, disk: int | None
) -> Node:
    return Node(
        id=row.id,
        address=row.address,
        runtime=row.runtime,
        platform=row.platform,
        state=row.state,  # type: ignore[arg-type]
        capacity=NodeCapacity(
            vcpus=row.vcpus, memory_mib=row.memory_mib, disk_mib=row.disk_mib, pids=row.pids
        ),
        allocated=Capacity(
            vcpus=float(cpus or 0), memory_mib=int(memory or 0), disk_mib=int(disk or 0)
        ),
        sandboxes=int(n or 0),
        labels=dict(row.labels),
        version=row.version,
        registered_at=row.registered_at,
        lease_expires_at=row.lease_expires_at,
    )

"""What a deleted template leaves on the nodes: its warm pool members' sandboxes and the copies
of its snapshots, each on the node that holds it.

The process that deletes the template (an API replica, or the all-in-one server) gathers
them in the delete's transaction, then has each node destroy its own: this process's node
directly, the others through their internal route `POST /internal/v1/cleanup` (node tokens
only). A node that cannot be reached keeps its leftovers until it restarts, when its start-up
repair destroys runtime sandboxes no record claims (service.jobs.reconcile).
"""

from __future__ import annotations

import contextlib
import logging
from collections import defaultdict

import aiohttp
import msgspec
from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.db.models import Node, NodeSnapshot, PoolMember, PoolTarget, TemplateVersion
from service.errors import ServiceUnavailable
from service.nodes.credentials import NodeCredentials
from service.runtime import SandboxRuntimeError
from service.runtime.holder import RuntimeHolder

log = logging.getLogger("airlock.nodes.cleanup")

ROUTE = "/internal/v1/cleanup"
CALL_TIMEOUT_S = 60.0


class Leftovers(msgspec.Struct):
    sandboxes: list[str] = msgspec.field(default_factory=list)  # runtime sandbox ids
    snapshots: list[str] = msgspec.field(default_factory=list)


class Cleaned(msgspec.Struct):
    sandboxes: int
    snapshots: int


async def gather(
    session: AsyncSession, template_id: str, local_node: str | None
) -> dict[str | None, Leftovers]:
    """The template's leftovers by node (None: rows from before nodes were recorded, this
    process's). The records of the snapshot copies stay until their node destroyed them (a
    node that cannot be told now finds them at its next start: snapshots.forget_unused)."""
    found: dict[str | None, Leftovers] = defaultdict(Leftovers)
    members = await session.execute(
        select(PoolMember.host, PoolMember.runtime_id)
        .join(PoolTarget, PoolTarget.id == PoolMember.pool_id)
        .where(
            PoolTarget.template_id == template_id,
            PoolMember.state.in_(["starting", "ready"]),
            PoolMember.runtime_id.is_not(None),
        )
    )
    for host, runtime_id in members:
        found[host].sandboxes.append(runtime_id)
    versions = await session.execute(
        select(TemplateVersion.snapshot_id, TemplateVersion.node_id).where(
            TemplateVersion.template_id == template_id, TemplateVersion.snapshot_id.is_not(None)
        )
    )
    for snapshot_id, builder in versions:
        holders = set(
            await session.scalars(
                select(NodeSnapshot.node_id).where(NodeSnapshot.snapshot_id == snapshot_id)
            )
        )
        for node in holders | {builder or local_node}:
            found[node].snapshots.append(snapshot_id)
    return dict(found)


async def clean(
    db: async_sessionmaker[AsyncSession],
    holder: RuntimeHolder,
    credentials: NodeCredentials,
    local_node: str | None,
    leftovers: dict[str | None, Leftovers],
) -> None:
    for node, left in leftovers.items():
        if node == local_node or node is None:
            if local_node is None:
                continue  # rows from before nodes, seen by a replica: that node's restart
            try:
                await clean_here(holder, left)
            except ServiceUnavailable as exc:
                log.warning("leftovers kept until this node's restart: %s", exc.detail)
                continue
            await _forget(db, local_node, left.snapshots)
            continue
        async with db() as session:
            address = await session.scalar(select(Node.address).where(Node.id == node))
        if address is None:
            continue
        caller = local_node or "api-replica"
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=CALL_TIMEOUT_S)) as http,
                http.post(
                    f"{address.rstrip('/')}{ROUTE}",
                    data=msgspec.json.encode(left),
                    headers={
                        "Authorization": f"Bearer {credentials.mint_node(caller, node)}",
                        "Content-Type": "application/json",
                    },
                ) as response,
            ):
                if response.status != 200:
                    log.warning("node %s did not clean up (%s)", node, response.status)
                    continue
            await _forget(db, node, left.snapshots)
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("node %s unreachable for its leftovers (%s); its restart removes them",
                        node, exc)  # fmt: skip


async def _forget(
    db: async_sessionmaker[AsyncSession], node: str | None, snapshots: list[str]
) -> None:
    if node is None or not snapshots:
        return
    async with db() as session, session.begin():
        await session.execute(
            delete(NodeSnapshot).where(
                NodeSnapshot.node_id == node, NodeSnapshot.snapshot_id.in_(snapshots)
            )
        )


async def clean_here(holder: RuntimeHolder, left: Leftovers) -> Cleaned:
    runtime = await holder.get()
    for runtime_id in left.sandboxes:
        with contextlib.suppress(SandboxRuntimeError):
            await runtime.destroy(runtime_id)
    for snapshot_id in left.snapshots:
        try:
            await runtime.delete_snapshot(snapshot_id)
        except SandboxRuntimeError as exc:
            log.warning("snapshot %s left: %s", snapshot_id, exc)
    return Cleaned(sandboxes=len(left.sandboxes), snapshots=len(left.snapshots))

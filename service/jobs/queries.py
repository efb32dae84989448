"""The jobs' own statements, by name, each read by column: the builder's look at its queue, the
retention purge's permission, what the pool refiller and the paused copies read of nodes,
members and checkpoints."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, func, or_, select, text, true
from sqlalchemy.orm import aliased

from service.db.base import on_node
from service.db.models import Node, NodeSnapshot, PoolMember, Sandbox, Template, TemplateVersion
from service.nodes.leases import LOST
from service.sandboxes.queues import fair_order, owner_turns
from service.sandboxes.states import State

# Whether any template version waits to be built (a cheap look before a claim's transaction).
ANY_QUEUED_BUILD = "SELECT 1 FROM template_versions WHERE state = 'queued' LIMIT 1"


def next_build(node_id: str | None) -> Select[Any]:
    """The id of the queued template version whose owner's turn it is (the fewest building,
    then the longest since its last start, then the oldest); one made from a sandbox only
    where that sandbox is (on `node_id`, when given)."""
    past, past_template = aliased(TemplateVersion), aliased(Template)
    waiting = (
        select(Template.owner)
        .join(TemplateVersion, TemplateVersion.template_id == Template.id)
        .where(TemplateVersion.state == "queued")
        .distinct()
    )
    turns = owner_turns(
        select()
        .select_from(past)
        .join(past_template, past_template.id == past.template_id)
        .where(past_template.owner.in_(waiting)),
        past_template.owner,
        past.state,
        past.started_at,
        "building",
    )
    here = select(Sandbox.id).where(
        Sandbox.id == TemplateVersion.source_sandbox_id,
        on_node(Sandbox.node_id, node_id),
    )
    return (
        select(TemplateVersion.id)
        .join(Template, Template.id == TemplateVersion.template_id)
        .join(turns, turns.c.owner == Template.owner)
        .where(TemplateVersion.state == "queued")
        .where(
            or_(TemplateVersion.source_sandbox_id.is_(None), here.exists())
            if node_id is not None
            else true()
        )
        .order_by(*fair_order(turns, TemplateVersion.created_at))
        .limit(1)
    )


# The states a sandbox stops from when its TTL runs out.
_EXPIRING = (State.RUNNING, State.FAILED, State.PAUSED)
# A sandbox left `stopping` this long (by a crash) is stopped again.
STUCK_STOPPING = timedelta(seconds=60)


def expired_sandboxes(now: datetime, node_id: str | None, batch: int) -> Select[Any]:
    """The sandboxes on `node_id` (every node's when None) past `expires_at`, paused ones past
    `pause_expires_at`, and those stuck stopping, soonest expired first; rows other passes
    hold are skipped."""
    return (
        select(Sandbox)
        .where(
            or_(
                and_(
                    Sandbox.state.in_([s.value for s in _EXPIRING]),
                    Sandbox.expires_at < now,
                ),
                # A paused sandbox also ends after the tenant's max_paused_s.
                and_(Sandbox.state == State.PAUSED.value, Sandbox.pause_expires_at < now),
                and_(
                    Sandbox.state == State.STOPPING.value,
                    Sandbox.updated_at < now - STUCK_STOPPING,
                ),
            )
        )
        .where(on_node(Sandbox.node_id, node_id))
        .order_by(Sandbox.expires_at)
        .limit(batch)
        .with_for_update(skip_locked=True)
    )


# The audit purge's permission for the rest of the transaction (PostgreSQL's trigger refuses
# to delete events without it).
AUDIT_PURGE_ON = text("SET LOCAL airlock.audit_purge = 'on'")


def nodes_and_leases(now: ColumnElement[object]) -> Select[Any]:
    """Every node: `id`, `state`, whether its lease still runs at `now` (`live`), `runtime`
    and `platform`."""
    return select(
        Node.id,
        Node.state,
        (Node.lease_expires_at > now).label("live"),
        Node.runtime,
        Node.platform,
    )


def pool_members(pool_id: str, host: str) -> Select[Any]:
    """A pool's members on `host` that start or are ready, as `jobs.pool.Member` has them."""
    return select(
        PoolMember.id,
        PoolMember.version_id,
        PoolMember.state,
        PoolMember.runtime_id,
        PoolMember.ready_at,
    ).where(
        PoolMember.pool_id == pool_id,
        PoolMember.host == host,
        PoolMember.state.in_(["starting", "ready"]),
    )


def paused_short_of_copies(node_id: str, copies: int, batch: int) -> Select[Any]:
    """Paused sandboxes of other nodes whose checkpoint has fewer than `copies` copies on live
    nodes besides its own and none on `node_id`: `id`, `pause_node_id`, `pause_snapshot_id`
    and `copies` (how many it has)."""
    held = (
        select(func.count())
        .select_from(NodeSnapshot)
        .join(Node, Node.id == NodeSnapshot.node_id)
        .where(
            NodeSnapshot.snapshot_id == Sandbox.pause_snapshot_id,
            NodeSnapshot.digest == Sandbox.pause_digest,
            NodeSnapshot.node_id != Sandbox.pause_node_id,
            Node.state != LOST,
        )
        .scalar_subquery()
    )
    mine = (
        select(NodeSnapshot.node_id)
        .where(
            NodeSnapshot.snapshot_id == Sandbox.pause_snapshot_id,
            NodeSnapshot.node_id == node_id,
        )
        .exists()
    )
    return (
        select(Sandbox.id, Sandbox.pause_node_id, Sandbox.pause_snapshot_id, held.label("copies"))
        .where(
            Sandbox.state == State.PAUSED.value,
            Sandbox.pause_digest.is_not(None),
            Sandbox.pause_node_id != node_id,
            held < copies,
            ~mine,
        )
        .order_by(Sandbox.id)
        .limit(batch)
    )


def snapshot_holders(snapshot_ids: list[str]) -> Select[Any]:
    """The nodes holding a copy of these checkpoints: `snapshot_id`, `node_id`."""
    return select(NodeSnapshot.snapshot_id, NodeSnapshot.node_id).where(
        NodeSnapshot.snapshot_id.in_(snapshot_ids)
    )

"""Lost nodes, said plainly. A node whose lease ran out is `lost`; every sandbox it held is
`failed` with reason `node_lost` (a paused one whose checkpoint another live node holds moves
there instead, still paused) and every exec still running there `interrupted` (each audited
on its tenant's chain), its warm pool members are dropped, so the other nodes' shares of each
pool grow and replace them (service.jobs.pool), and the template builds and reviews it was
running go back in the queue for another node.

Every process runs the sweep; on PostgreSQL a transaction-scoped advisory lock lets one of them
do each pass, so two processes never fail the same sandboxes twice. A process never declares
its own node lost: it is running, so its lease is only late and its next renewal holds (on
the embedded SQLite database, one process and one node, the sweep therefore does nothing).
A node that was lost while it still ran learns so at its next renewal, registers again and
reconciles: it destroys the runtime sandboxes the record no longer gives it. Nobody is judged
late until the sweeping process has reached the database for a whole lease without a break:
while the database was away, no node could renew.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Sequence
from typing import Protocol

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.audit.recorder import AuditContext
from service.db.models import Exec, Node, PoolMember, Sandbox
from service.db.pg import only_one
from service.execs.interrupted import interrupt_execs
from service.nodes.leases import LOST, Leases
from service.nodes.moves import has_live_copy, move_off_lost
from service.periodic import PeriodicJob
from service.sandboxes.service import fail_in
from service.sandboxes.states import LIVE, State

log = logging.getLogger("airlock.nodes")

SYSTEM = AuditContext(actor="system:nodes", request_id=None, client=None)
NODE_LOST = "node_lost"
_LOCK_KEY = 0x61697231  # one pass at a time across processes (pg advisory lock key)
# Paused ones too: their checkpoints were on the lost node's disk (unless a live node holds a
# verified copy: then they move there, still paused; service.nodes.moves).
_LIVE = [s.value for s in LIVE]


class Requeue(Protocol):
    """Puts the queued work a lost node was running (template builds, reviews) back in its
    queue, in the sweep's transaction; how many went back."""

    def __call__(self, *, node_id: str, session: AsyncSession, unowned: bool) -> Awaitable[int]: ...


async def sweep_once(
    db: async_sessionmaker[AsyncSession],
    leases: Leases,
    own_node: str | None = None,
    judge: bool = True,
    *,
    requeues: Sequence[Requeue],
) -> list[str]:
    """Mark late nodes (other than `own_node`; none unless `judge`) lost and fail what lost
    nodes hold, putting their queued work back with each of `requeues`; the ids of the
    sandboxes failed."""
    async with db() as session, session.begin():
        if not await only_one(session, _LOCK_KEY):
            return []
        for node_id in await leases.mark_lost_in(session, keep=own_node) if judge else []:
            log.warning("node %s lost: its lease ran out", node_id)
        # Every lost node's live sandboxes, not only the newly lost ones': a pass that died
        # half-way is finished by the next.
        lost = select(Node.id).where(Node.state == LOST)
        # Failed in this transaction, with the nodes marked lost: a node that registers again
        # meanwhile finds them failed (and destroys them) or not at all.
        held = (
            await session.scalars(
                select(Sandbox)
                .where(Sandbox.node_id.in_(lost), Sandbox.state.in_(_LIVE))
                .with_for_update()
            )
        ).all()
        now, _ = leases.clock(session)
        live = set(
            await session.scalars(
                select(Node.id).where(Node.state != LOST, Node.lease_expires_at > now)
            )
        )
        # Paused sandboxes that moved off a node now lost before they ran elsewhere: their
        # checkpoint went with it, unless a live node holds a copy.
        orphaned = (
            await session.scalars(
                select(Sandbox)
                .where(
                    Sandbox.pause_node_id.in_(lost),
                    Sandbox.node_id.not_in(lost),
                    Sandbox.state == State.PAUSED.value,
                )
                .with_for_update()
            )
        ).all()
        failed = []
        for row in orphaned:
            if not await has_live_copy(session, row, live):
                await fail_in(session, row, SYSTEM, NODE_LOST)
                failed.append(row.id)
                log.warning("paused sandbox %s failed: its checkpoint was on a lost node", row.id)
        for row in held:
            lost_node = row.node_id
            moved_to = await move_off_lost(session, row, live, SYSTEM)
            if moved_to is not None:
                log.warning(
                    "paused sandbox %s moved from lost node %s to %s, which holds its checkpoint",
                    row.id, lost_node, moved_to,
                )  # fmt: skip
                continue
            await fail_in(session, row, SYSTEM, NODE_LOST)
            failed.append(row.id)
            log.warning("sandbox %s failed: its node %s was lost", row.id, row.node_id)
        interrupted, _ = await interrupt_execs(
            session,
            SYSTEM,
            Exec.sandbox_id.in_(select(Sandbox.id).where(Sandbox.node_id.in_(lost))),
            "the node running this exec was lost",
        )
        dropped = await session.execute(
            delete(PoolMember)
            .where(PoolMember.host.in_(lost), PoolMember.state.in_(["starting", "ready"]))
            .returning(PoolMember.id)
        )
        members = len(dropped.all())
        # Their builds and reviews start again on another node.
        requeued = 0
        for node_id in await session.scalars(lost):
            for requeue in requeues:
                requeued += await requeue(node_id=node_id, session=session, unowned=False)
        if interrupted or members or requeued:
            log.warning(
                "lost nodes: %d execs interrupted, %d pool members dropped, %d builds and "
                "reviews back in the queue",
                interrupted,
                members,
                requeued,
            )
    return failed


class NodeSweep(PeriodicJob):
    name = "node sweep"

    def __init__(
        self,
        db: async_sessionmaker[AsyncSession],
        leases: Leases,
        interval_s: float,
        own_node: str | None = None,
        *,
        requeues: Sequence[Requeue],
    ) -> None:
        super().__init__(interval_s)
        self.db = db
        self.leases = leases
        self.own_node = own_node
        self.requeues = requeues
        # Since when this process has reached the database without a break.
        self.reachable_since: float | None = None

    async def run_once(self) -> bool:
        # When the database was out of reach, no node could renew either: nobody is judged
        # late until the database has answered for a whole lease, time for every node alive
        # to renew (a failover of PostgreSQL does not fail every sandbox).
        now = time.monotonic()
        reachable = self.reachable_since
        judge = reachable is not None and now - reachable >= self.leases.lease.total_seconds()
        try:
            await sweep_once(
                self.db, self.leases, self.own_node, judge=judge, requeues=self.requeues
            )
        except Exception:
            self.reachable_since = None
            raise
        if reachable is None:
            self.reachable_since = now
        return False

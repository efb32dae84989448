"""Paused sandboxes' checkpoints across nodes, so a paused sandbox outlives its node.

Each node, every pass:

- reads through the checkpoints of its own paused sandboxes once, recording their digests
  (and its own copy), so other nodes can fetch them and check what they got;
- fetches copies of other nodes' checkpoints until each paused sandbox has
  `AIRLOCK_PAUSE_COPIES` copies on live nodes besides its own; which nodes fetch is decided
  by rendezvous hashing of the sandbox and node ids, so nodes agree without talking and the
  copies spread;
- drops what is no longer needed: copies of checkpoints no paused sandbox refers to (it was
  resumed or deleted), and its own paused runtime sandboxes whose sandbox now runs elsewhere
  (it moved: service.nodes.moves).

When a node is lost, the sweep gives each of its paused sandboxes to a live node that holds a
copy; without one the sandbox fails with its node.
"""

from __future__ import annotations

import hashlib
import logging

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.db.models import Node, NodeSnapshot, Sandbox
from service.jobs.periodic import PeriodicJob
from service.nodes.leases import LOST, READY
from service.nodes.moves import ensure_digest
from service.nodes.placement import node_views
from service.nodes.snapshots import PAUSE_HELD, SnapshotFetcher, forget_unused
from service.runtime import SandboxRuntime, SandboxRuntimeError
from service.runtime.holder import RuntimeHolder
from service.sandboxes.states import State

log = logging.getLogger("airlock.jobs.paused_copies")

BATCH = 100


def rank(sandbox_id: str, node_id: str) -> bytes:
    return hashlib.sha256(f"{sandbox_id}/{node_id}".encode()).digest()


class PausedCopies(PeriodicJob):
    name = "paused copies"

    def __init__(
        self,
        db: async_sessionmaker[AsyncSession],
        runtimes: RuntimeHolder,
        fetcher: SnapshotFetcher,
        node_id: str,
        copies: int,
        interval_s: float,
    ) -> None:
        super().__init__(interval_s)
        self.db = db
        self.runtimes = runtimes
        self.fetcher = fetcher
        self.node_id = node_id
        self.copies = copies

    async def run_once(self) -> bool:
        runtime = await self.runtimes.get()
        if not runtime.supports("move_snapshots"):
            return False
        async with self.db() as session:
            own = list(
                await session.scalars(
                    select(Sandbox.id)
                    .where(
                        Sandbox.node_id == self.node_id,
                        Sandbox.state == State.PAUSED.value,
                        Sandbox.pause_snapshot_id.is_not(None),
                        Sandbox.pause_digest.is_(None),
                    )
                    .limit(BATCH)
                )
            )
        for sandbox_id in own:
            await ensure_digest(self.db, runtime, self.node_id, sandbox_id)
        if self.copies > 0:
            for sandbox_id, snapshot_id in await self._to_fetch():
                try:
                    fetched = await self.fetcher.fetch(runtime, snapshot_id)
                except SandboxRuntimeError as exc:
                    log.warning("checkpoint of %s not copied here: %s", sandbox_id, exc)
                    continue
                if fetched:
                    log.info("checkpoint of paused sandbox %s copied to this node", sandbox_id)
        await forget_unused(self.db, runtime, self.node_id)
        await self._drop_moved(runtime)
        return False

    async def _to_fetch(self) -> list[tuple[str, str]]:
        """The paused sandboxes of other nodes whose checkpoint this node should copy."""
        nodes = [v.id for v in await node_views(self.db.kw["bind"]) if v.state == READY and v.live]
        if self.node_id not in nodes:
            return []
        async with self.db() as session:
            paused = (
                await session.execute(
                    select(Sandbox.id, Sandbox.node_id, Sandbox.pause_snapshot_id,
                           Sandbox.pause_digest)
                    .where(
                        Sandbox.state == State.PAUSED.value,
                        Sandbox.pause_digest.is_not(None),
                        Sandbox.node_id != self.node_id,
                    )
                    .limit(BATCH * 10)
                )
            ).all()  # fmt: skip
            if not paused:
                return []
            held = (
                await session.execute(
                    select(NodeSnapshot.snapshot_id, NodeSnapshot.node_id, NodeSnapshot.digest)
                    .join(Node, Node.id == NodeSnapshot.node_id)
                    .where(
                        NodeSnapshot.snapshot_id.in_([p[2] for p in paused]),
                        Node.state != LOST,
                    )
                )
            ).all()
        wanted = []
        for sandbox_id, owner, snapshot_id, digest in paused:
            holders = {n for s, n, d in held if s == snapshot_id and d == digest}
            if self.node_id in holders:
                continue
            others = {n for n in holders if n != owner}
            needed = self.copies - len(others)
            if needed <= 0:
                continue
            candidates = sorted(
                (n for n in nodes if n != owner and n not in holders),
                key=lambda n: rank(sandbox_id, n),
            )
            if self.node_id in candidates[:needed]:
                wanted.append((sandbox_id, snapshot_id))
        return wanted[:BATCH]

    async def _drop_moved(self, runtime: SandboxRuntime) -> None:
        """This node's paused runtime sandboxes that no sandbox on record names any more (it
        moved and runs elsewhere now, or it is gone)."""
        paused_here = [i.id for i in await runtime.list_sandboxes() if i.state == "paused"]
        if not paused_here:
            return
        async with self.db() as session:
            named = set(
                await session.scalars(
                    select(Sandbox.runtime_id).where(
                        Sandbox.runtime_id.in_(paused_here), Sandbox.state.in_(PAUSE_HELD)
                    )
                )
            )
        for runtime_id in paused_here:
            if runtime_id not in named:
                log.info("paused runtime sandbox %s: its sandbox runs elsewhere now", runtime_id)
                await runtime.destroy(runtime_id)

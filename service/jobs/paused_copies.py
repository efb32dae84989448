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

from service.db.models import Sandbox
from service.jobs.queries import nodes_and_leases, paused_short_of_copies, snapshot_holders
from service.nodes.leases import READY, db_now
from service.nodes.moves import ensure_digest
from service.nodes.snapshots import SnapshotFetcher, forget_unused
from service.periodic import PeriodicJob
from service.runtime import SandboxRuntime, SandboxRuntimeError
from service.runtime.holder import RuntimeHolder
from service.sandboxes.states import LIVE, State

log = logging.getLogger("airlock.jobs.paused_copies")

BATCH = 100
_LIVE = [s.value for s in LIVE]


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
        # Each step on its own: one that fails (a checkpoint that cannot be read, a node that
        # cannot be reached) holds up neither the others nor the clean-up.
        for step in (self._digest_own, self._copy_others, self._drop_unused):
            try:
                await step(runtime)
            except Exception:
                log.exception("paused copies: %s failed; retrying next pass", step.__name__)
        return False

    async def _digest_own(self, runtime: SandboxRuntime) -> None:
        async with self.db() as session:
            own = list(
                await session.scalars(
                    select(Sandbox.id)
                    .where(
                        Sandbox.node_id == self.node_id,
                        Sandbox.pause_node_id == self.node_id,
                        Sandbox.state == State.PAUSED.value,
                        Sandbox.pause_snapshot_id.is_not(None),
                        Sandbox.pause_digest.is_(None),
                    )
                    .limit(BATCH)
                )
            )
        for sandbox_id in own:
            await ensure_digest(self.db, runtime, self.node_id, sandbox_id)

    async def _copy_others(self, runtime: SandboxRuntime) -> None:
        if self.copies <= 0:
            return
        for sandbox_id, snapshot_id in await self._to_fetch():
            try:
                fetched = await self.fetcher.fetch(runtime, snapshot_id)
            except (SandboxRuntimeError, OSError) as exc:
                log.warning("checkpoint of %s not copied here: %s", sandbox_id, exc)
                continue
            if fetched:
                log.info("checkpoint of paused sandbox %s copied to this node", sandbox_id)

    async def _drop_unused(self, runtime: SandboxRuntime) -> None:
        await forget_unused(self.db, runtime, self.node_id)
        await self._drop_moved(runtime)

    async def _to_fetch(self) -> list[tuple[str, str]]:
        """The paused sandboxes of other nodes with fewer copies than wanted whose checkpoint
        this node is among the first (by rank) to copy."""
        async with self.db() as session:
            short = (
                await session.execute(paused_short_of_copies(self.node_id, self.copies, BATCH))
            ).all()
            if not short:  # the usual pass: nothing more to read
                return []
            views = {r.id: r for r in await session.execute(nodes_and_leases(db_now(session)))}
            me = views.get(self.node_id)
            if me is None or me.state != READY or not me.live:
                return []
            holders = {
                (r.snapshot_id, r.node_id)
                for r in await session.execute(
                    snapshot_holders([r.pause_snapshot_id for r in short])
                )
            }
        wanted = []
        for row in short:
            sandbox_id, snapshot_id = row.id, row.pause_snapshot_id
            origin, have = row.pause_node_id, row.copies
            source = views.get(origin)
            # Nodes that could restore it (same runtime and platform as the one that took it)
            # and hold no copy yet, in the sandbox's own order.
            candidates = sorted(
                (
                    v.id
                    for v in views.values()
                    if v.id != origin
                    and v.state == READY
                    and v.live
                    and (source is None or (v.runtime, v.platform) == (source.runtime,
                                                                       source.platform))
                    and (snapshot_id, v.id) not in holders
                ),
                key=lambda n: rank(sandbox_id, n),
            )  # fmt: skip
            if self.node_id in candidates[: self.copies - have]:
                wanted.append((sandbox_id, snapshot_id))
        return wanted

    async def _drop_moved(self, runtime: SandboxRuntime) -> None:
        """This node's paused runtime sandboxes that no live sandbox on record names any more:
        it moved and runs elsewhere now (under another runtime sandbox), or it is gone. A
        sandbox resumed in place keeps its runtime sandbox's name, so one resuming while this
        looks is never taken for one that moved."""
        paused_here = [i.id for i in await runtime.list_sandboxes() if i.state == "paused"]
        if not paused_here:
            return
        async with self.db() as session:
            named = set(
                await session.scalars(
                    select(Sandbox.runtime_id).where(
                        Sandbox.runtime_id.in_(paused_here), Sandbox.state.in_(_LIVE)
                    )
                )
            )
        for runtime_id in paused_here:
            if runtime_id not in named:
                log.info("paused runtime sandbox %s: its sandbox runs elsewhere now", runtime_id)
                await runtime.destroy(runtime_id)

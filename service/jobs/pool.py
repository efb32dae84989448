"""The pool refiller: keeps this node's share of each pool (see service/pool/README.md).

A pool's target is for the whole cluster: it is spread over the nodes that can start its
members (ready, their lease running; for a snapshot that cannot move, only its builder; the
others fetch it when they start their first member), the first
`target % n` of them in id order taking one more. A node that is drained, lost or without the
snapshot has a share of 0, so its members are removed and the other nodes' shares grow. A
pool of a suspended tenant's template has no share anywhere, nor one whose members would run
the template's setup under a network its tenant may no longer have.

Each pass, per pool: members of an older template version, or older than `MAX_AGE`, are
stale and removed; ready members whose runtime sandbox died are removed (checked every
`HEALTH_EVERY`); surplus members are removed; missing ones are started, `PARALLEL` at a time.
A member row is written `starting` before the runtime call and becomes `ready` in a second
short transaction; a member is destroyed only after its row was deleted while still `ready`,
so a concurrent claim can never lose its sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.base import utcnow
from service.db.models import PoolMember, Tenant
from service.db.session import Db
from service.errors import AppError
from service.ids import new_id
from service.jobs.queries import nodes_and_leases, pool_members
from service.nodes.leases import READY, db_now
from service.periodic import PeriodicJob
from service.pool import metrics
from service.pool.repository import PoolRepository
from service.pool.service import WarmPool, label, parse_targets, upsert_target
from service.runtime import ExecRequest, SandboxRuntime, SandboxRuntimeError
from service.runtime.holder import RuntimeHolder
from service.templates.repository import OPERATOR_OWNER, TemplateRepository, ready_version
from service.templates.starter import Recipe, check_policy, start
from service.tenants.service import quotas_of
from service.tenants.suspension import SUSPENDED

WARM_UP = ExecRequest(argv=["true"], timeout_s=10, output_cap=0)

log = logging.getLogger("airlock.jobs.pool")

PARALLEL = 2
MAX_AGE = timedelta(hours=1)
HEALTH_EVERY_S = 10.0


@dataclass(frozen=True)
class Pool:
    id: str
    target: int
    size: str
    label: str
    recipe: Recipe | None


@dataclass(frozen=True)
class Member:
    id: str
    version_id: str
    state: str
    runtime_id: str | None
    ready_at: datetime | None


def share_of(target: int, nodes: set[str], node_id: str) -> int:
    """This node's part of a cluster-wide target spread over `nodes`."""
    if node_id not in nodes:
        return 0
    index = sorted(nodes).index(node_id)
    return target // len(nodes) + (1 if index < target % len(nodes) else 0)


async def _startable_nodes(session: AsyncSession, node_id: str) -> dict[str, str | None]:
    """The nodes that may hold pool members now, with their runtimes: ready with a running
    lease. This node counts until its first registration is in the record (a fresh start
    refills at once; its runtime is not known then)."""
    rows = (await session.execute(nodes_and_leases(db_now(session)))).all()
    ready: dict[str, str | None] = {
        row.id: row.runtime for row in rows if row.state == READY and row.live
    }
    if node_id not in {row.id for row in rows}:
        ready[node_id] = None
    return ready


async def _tenants(session: AsyncSession, owners: set[str]) -> dict[str, Tenant]:
    """The tenants among templates' owners (the operator owns no tenant row)."""
    rows = await session.scalars(select(Tenant).where(Tenant.id.in_(owners)))
    return {tenant.id: tenant for tenant in rows}


class PoolRefiller(PeriodicJob):
    name = "pool-refiller"

    def __init__(
        self, db: Db, holder: RuntimeHolder, pool: WarmPool, interval_s: float = 2.0
    ) -> None:
        super().__init__(interval_s)
        self.db = db
        self.holder = holder
        self.pool = pool
        self._last_health = 0.0
        self._slots = asyncio.Semaphore(PARALLEL)
        # Pools held at no members, and why (None: not held).
        self._held: dict[str, str | None] = {}

    async def run_once(self) -> bool:
        self.pool.bell.clear()
        await self.refill_once()
        return False

    async def pause(self) -> None:
        # A claim rings the bell: refill at once instead of at the next interval.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.pool.bell.wait(), self.interval_s)
        # Just after a claim: let the claimer's first commands run before a restore takes the
        # CPU (a later claim moves the end on).
        while (quiet := self.pool.quiet_until - time.monotonic()) > 0:  # noqa: ASYNC110 (a deadline)
            await asyncio.sleep(quiet)

    async def refill_once(self) -> None:
        await self._seed_targets()
        pools = await self._pools()
        if not pools:
            return
        runtime = await self.holder.get()
        check_health = time.monotonic() - self._last_health >= HEALTH_EVERY_S
        if check_health:
            self._last_health = time.monotonic()
        await asyncio.gather(*(self._refill(runtime, p, check_health) for p in pools))
        async with self.db() as session, session.begin():
            await PoolRepository(session).prune(utcnow())

    async def _seed_targets(self) -> None:
        wanted = parse_targets(self.pool.targets_setting)
        if not wanted:
            return
        async with self.db() as session, session.begin():
            repo = TemplateRepository(session, OPERATOR_OWNER)
            for name, size, count in wanted:
                template = await repo.own(name)
                if template is not None:
                    await upsert_target(session, template.id, size, count, keep=True)

    async def _pools(self) -> list[Pool]:
        async with self.db() as session:
            startable = await _startable_nodes(session, self.pool.node_id)
            found = []
            targets = await PoolRepository(session).targets()
            owners = await _tenants(session, {template.owner for _, template in targets})
            for target, template in targets:
                version = await ready_version(session, template.id)
                if version is not None and version.size != target.size:
                    version = None  # built for another size: nothing to start for this pool
                # A snapshot restores on the runtime that took it.
                runtime = version.runtime if version is not None and version.snapshot_id else None
                eligible = {n for n, r in startable.items() if None in (runtime, r) or r == runtime}
                if (
                    version is not None
                    and version.snapshot_id
                    and version.node_id
                    and version.snapshot_digest is None
                ):
                    # A snapshot that cannot move: only its builder can start members.
                    eligible &= {version.node_id}
                recipe = Recipe.of(version) if version else None
                share = share_of(target.target, eligible, self.pool.node_id)
                if self._held_back(target.id, owners.get(template.owner), recipe):
                    share = 0
                found.append(
                    Pool(
                        id=target.id,
                        target=share,
                        size=target.size,
                        label=label(template.name, template.owner),
                        recipe=recipe,
                    )
                )
        return found

    def _held_back(self, pool_id: str, owner: Tenant | None, recipe: Recipe | None) -> bool:
        """Whether a tenant's pool keeps no members now: its owner is suspended, or its
        members would be born under a network the owner may no longer have (a build without
        a snapshot runs its setup in each one). Said in the log once per change."""
        why = None
        if owner is not None and owner.status == SUSPENDED:
            why = "its tenant is suspended"
        elif owner is not None and recipe is not None:
            try:
                check_policy(recipe, quotas_of(owner))
            except AppError as exc:
                why = f"the template's network is not allowed for its tenant now: {exc.detail}"
        if why != self._held.get(pool_id):
            if why is not None:
                log.warning("pool %s keeps no members: %s", pool_id, why)
            self._held[pool_id] = why
        return why is not None

    async def _members(self, pool_id: str) -> list[Member]:
        async with self.db() as session:
            rows = await session.execute(pool_members(pool_id, self.pool.host))
            return [Member(**row._mapping) for row in rows]

    async def _refill(self, runtime: SandboxRuntime, pool: Pool, check_health: bool) -> None:
        members = await self._members(pool.id)
        current = pool.recipe.version_id if pool.recipe else None
        cutoff = utcnow() - MAX_AGE
        stale = [
            m
            for m in members
            if m.state == "ready"
            and (m.version_id != current or (m.ready_at is not None and m.ready_at < cutoff))
        ]
        if check_health:
            for m in members:
                if m in stale or m.state != "ready" or m.runtime_id is None:
                    continue
                try:
                    alive = (await runtime.get(m.runtime_id)).state == "running"
                except SandboxRuntimeError:
                    alive = False
                if not alive:
                    log.warning("pool member %s died; replacing it", m.id)
                    stale.append(m)
        fresh = [m for m in members if m not in stale and m.version_id == current]
        surplus = len(fresh) - pool.target
        if surplus > 0:
            ready = sorted((m for m in fresh if m.state == "ready"), key=lambda m: m.id)
            stale += ready[-surplus:]
        await self._remove(runtime, stale)
        missing = pool.target - len(fresh)
        metrics.TARGET.labels(pool.label, pool.size).set(pool.target)
        if missing > 0 and pool.recipe is not None:
            await asyncio.gather(*(self._start_one(runtime, pool) for _ in range(missing)))
        async with self.db() as session:
            counts = await PoolRepository(session).member_counts(pool.id, self.pool.host, current)
        metrics.READY.labels(pool.label, pool.size).set(counts.get("ready", 0))

    async def _remove(self, runtime: SandboxRuntime, members: list[Member]) -> None:
        for m in members:
            async with self.db() as session, session.begin():
                gone = await session.scalar(
                    delete(PoolMember)
                    .where(PoolMember.id == m.id, PoolMember.state == "ready")
                    .returning(PoolMember.runtime_id)
                )
            if gone is not None:  # still ours: nobody claimed it meanwhile
                with contextlib.suppress(SandboxRuntimeError):
                    await runtime.destroy(gone)

    async def _start_one(self, runtime: SandboxRuntime, pool: Pool) -> None:
        recipe = pool.recipe
        assert recipe is not None
        async with self._slots:
            member_id = new_id("pmb")
            async with self.db() as session, session.begin():
                session.add(
                    PoolMember(
                        id=member_id,
                        pool_id=pool.id,
                        version_id=recipe.version_id,
                        host=self.pool.host,
                        state="starting",
                        from_snapshot=recipe.snapshot_id is not None,
                        created_at=utcnow(),
                    )
                )
            started = time.monotonic()
            try:
                info = await start(runtime, recipe)
            except Exception as exc:  # a member that cannot start is retried next pass
                log.warning("pool member for %s did not start: %s", pool.label, exc)
                async with self.db() as session, session.begin():
                    await session.execute(delete(PoolMember).where(PoolMember.id == member_id))
                return
            # Two throwaway commands before the member is offered: the first processes a
            # restored sandbox starts pay for bringing its exec path back into memory (a few ms
            # here), and that should not be the claimer's first exec.
            with contextlib.suppress(SandboxRuntimeError):
                for _ in range(2):
                    await runtime.run(info.id, WARM_UP)
            elapsed = time.monotonic() - started
            now = utcnow()
            async with self.db() as session, session.begin():
                result = await session.execute(
                    update(PoolMember)
                    .where(PoolMember.id == member_id, PoolMember.state == "starting")
                    .values(state="ready", runtime_id=info.id, runtime=info.runtime, ready_at=now)
                )
                if result.rowcount:  # type: ignore[attr-defined]
                    await PoolRepository(session).set_refill(pool.id, now, int(elapsed * 1000))
            if not result.rowcount:  # type: ignore[attr-defined]
                # The pool or its template went away while the member started.
                with contextlib.suppress(SandboxRuntimeError):
                    await runtime.destroy(info.id)
                return
            metrics.REFILL.labels(pool.label, pool.size).observe(elapsed)

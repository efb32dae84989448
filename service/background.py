"""The periodic work of this process's role, started and stopped by the app's lifespan.

Every process sweeps lost nodes; the processes that serve tenants keep the records (retention);
a node runs the jobs that touch its own sandboxes, once its runtime and the database agree
(start-up reconciliation).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

from service import VERSION
from service.db.pg import is_postgres
from service.db.session import Db
from service.errors import ServiceUnavailable
from service.execs.runner import ExecRunner
from service.flows.idle import IdleSleeper
from service.jobs import templates as builds
from service.jobs.grants import NarrowedGrants
from service.jobs.paused_copies import PausedCopies
from service.jobs.pool import PoolRefiller
from service.jobs.reconcile import drop_orphans, reconcile
from service.jobs.retention import RetentionJob
from service.jobs.suspended import SuspendedExecs, SuspendedWork
from service.jobs.templates import TemplateBuilder
from service.jobs.ttl import TtlReaper
from service.nodes.leases import Leases
from service.nodes.local import heartbeat as node_heartbeat
from service.nodes.owners import Owners
from service.nodes.snapshots import SnapshotFetcher
from service.nodes.sweep import NodeSweep
from service.pool.service import WarmPool
from service.reviews import job as review_queue
from service.reviews.job import ReviewRunner
from service.reviews.pipeline import Deps as ReviewDeps
from service.runtime.holder import RuntimeHolder
from service.sandboxes.usage import UsageSampler
from service.sandboxes.waking import Wake
from service.settings import Role, Settings

log = logging.getLogger("airlock")

# What a lost node was running that goes back in a queue for another: template builds, reviews.
LOST_NODE_REQUEUES = (builds.requeue_interrupted, review_queue.requeue_interrupted)


@dataclass(frozen=True, slots=True)
class Parts:
    """What the jobs are built from, put together once by `create_app`."""

    settings: Settings
    db: Db
    runtimes: RuntimeHolder
    wake: Wake
    pool: WarmPool
    exec_runner: ExecRunner
    # This process's node (None on an API replica) and what fetches snapshots for it.
    node_id: str | None
    fetcher: SnapshotFetcher | None
    # Which node holds a sandbox: forgotten when the node registers again after it was lost.
    owners: Owners


async def role_jobs(parts: Parts) -> list[Any]:
    """The background work of this process's role. A node's jobs touch only its own
    sandboxes; the record-keeping ones (retention) run where the API does."""
    settings, db = parts.settings, parts.db
    leases = Leases(db, settings.node_lease_s)
    sweep = NodeSweep(
        db, leases, settings.node_heartbeat_s, parts.node_id, requeues=LOST_NODE_REQUEUES
    )
    jobs: list[Any] = [sweep]
    if settings.role != Role.NODE:
        jobs.append(RetentionJob(db, settings))
    if parts.node_id is not None:
        await reconcile_at_start(db, parts.runtimes, parts.pool.host, parts.node_id)
        jobs += _node_jobs(parts, parts.node_id)
    return jobs


def _node_jobs(parts: Parts, node_id: str) -> list[Any]:
    """The jobs of the node this process runs: its sandboxes, builds, reviews and lease."""
    settings, db, runtimes, pool = parts.settings, parts.db, parts.runtimes, parts.pool
    builder = TemplateBuilder(db, runtimes, pool, node_id=node_id, wake=parts.wake)
    reviews = ReviewRunner(ReviewDeps(db, runtimes, parts.exec_runner, settings), node_id=node_id)
    execs = SuspendedExecs(db, parts.exec_runner)
    jobs: list[Any] = [
        TtlReaper(db, runtimes, settings.ttl_reaper_interval_s, node_id),
        IdleSleeper(db, runtimes, settings.idle_check_interval_s, node_id),
        builder,
        PoolRefiller(db, runtimes, pool, settings.pool_refill_interval_s),
        UsageSampler(db, runtimes, settings.usage_sample_interval_s, node_id),
        reviews,
        SuspendedWork([builder, reviews, execs]),
        NarrowedGrants(db, runtimes, node_id),
        node_heartbeat(settings, db, runtimes, VERSION, on_return=_Rejoined(parts, node_id)),
    ]
    if parts.fetcher is not None and is_postgres(db.kw["bind"]):  # more than one node
        copies = settings.pause_copies, settings.pause_copies_interval_s
        jobs.append(PausedCopies(db, runtimes, parts.fetcher, node_id, *copies))
    return jobs


@dataclass(frozen=True, slots=True)
class _Rejoined:
    """Back after being lost: what the sweep failed (or moved) meanwhile goes."""

    parts: Parts
    node_id: str

    async def __call__(self) -> None:
        self.parts.owners.forget_all()
        registered = time.time()
        parts = self.parts
        runtime = await parts.runtimes.get()
        dropped = await drop_orphans(parts.db, runtime, self.node_id, parts.pool.host, registered)
        log.warning("node %s registered again after it was lost: %d sandboxes destroyed",
                    self.node_id, dropped)  # fmt: skip


async def reconcile_at_start(db: Db, runtimes: RuntimeHolder, pool_host: str, node_id: str) -> None:
    """The node's runtime and the database brought to agree before its jobs start."""
    try:
        runtime = await runtimes.get()
    except ServiceUnavailable as exc:
        log.warning("sandboxes unavailable: %s", exc.detail)
        return
    counts = await reconcile(db, runtime, node_id, pool_host)
    if any(counts.values()):
        log.warning("start-up reconciliation: %s", counts)

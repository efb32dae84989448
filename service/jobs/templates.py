"""The template builder: claims queued template versions and builds them, one at a time.

A version is claimed with `UPDATE ... WHERE id = (SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1)`
(PostgreSQL; SQLite transactions take the write lock up front), so two replicas never build
the same version. A build cut off by a restart is put back in the queue by the start-up
reconciler and built again; after `MAX_ATTEMPTS` cut-off builds it fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext, record
from service.db.base import on_node, utcnow
from service.db.models import Template, TemplateVersion, Tenant
from service.db.reads import finds_a_row
from service.db.session import Db
from service.errors import AppError, Conflict, QuotaExceeded, ServiceUnavailable
from service.jobs.claims import take_first
from service.jobs.queries import ANY_QUEUED_BUILD, next_build
from service.nodes.snapshots import digest_of, record_copy
from service.periodic import PeriodicJob
from service.pool.service import WarmPool
from service.runtime import SandboxRuntimeError, SnapshotInfo
from service.runtime.egress import OPERATOR_GRANTS
from service.runtime.holder import RuntimeHolder
from service.sandboxes.quotas import Caps, check_room
from service.sandboxes.repository import SandboxRepository
from service.sandboxes.waking import Wake
from service.templates.from_sandbox import from_sandbox
from service.templates.repository import OPERATOR_OWNER
from service.templates.service import chain_of
from service.templates.starter import (
    NO_NETWORK,
    BuildLog,
    Recipe,
    SetupFailed,
    build,
    check_policy,
)
from service.tenants.service import quotas_of
from service.tenants.suspension import (
    REASON,
    cancel_queued_builds,
    suspended_among,
    suspended_tenants,
)

log = logging.getLogger("airlock.jobs.templates")

SYSTEM = AuditContext(actor="system:template-builder", request_id=None, client=None)
MAX_ATTEMPTS = 3


@dataclass(frozen=True)
class Claimed:
    recipe: Recipe
    attempts: int
    template_id: str
    owner: str
    name: str
    version: int
    # A version made from a sandbox: (its tenant, its id).
    source: tuple[str, str] | None = None


async def claim_next(db: Db, node_id: str | None = None) -> Claimed | None:
    """The next build in fair order across owners (service.sandboxes.queues), marked building on
    `node_id`."""
    if not await finds_a_row(db.kw["bind"], ANY_QUEUED_BUILD):
        return None
    async with db() as session, session.begin():
        # Builds queued beside a suspension are not run: they fail, saying why.
        await cancel_queued_builds(session, SYSTEM, suspended_tenants())
        version_id = await take_first(
            session, TemplateVersion, next_build(node_id), "building", node_id
        )
        if version_id is None:
            return None
        row = await session.get(TemplateVersion, version_id, populate_existing=True)
        assert row is not None
        template = await session.get(Template, row.template_id)
        assert template is not None
        # The build's sandbox reaches private ranges only as granted to the owning tenant (the
        # operator, who owns no tenant row, is who grants: every range).
        owner = await session.get(Tenant, template.owner)
        grants = quotas_of(owner).network_private_cidrs if owner is not None else OPERATOR_GRANTS
        return Claimed(
            Recipe.of(row, grants),
            row.attempts,
            template.id,
            template.owner,
            template.name,
            row.version,
            (template.owner, row.source_sandbox_id) if row.source_sandbox_id else None,
        )


async def build_one(
    db: Db,
    holder: RuntimeHolder,
    wake: Wake,
    pool: WarmPool,
    job: Claimed,
    node_id: str | None = None,
    text: BuildLog | None = None,
) -> str:
    """Build a claimed version on this node (`node_id`), its log in `text`; returns its final
    state."""
    text = text if text is not None else BuildLog()
    snapshot: SnapshotInfo | None = None
    digest: str | None = None
    error: str | None = None
    runtime_name: str | None = None
    if job.attempts > MAX_ATTEMPTS:
        error = f"gave up after {MAX_ATTEMPTS} builds cut off by restarts"
    else:
        error = await refused_build(db, job)
    if error is None:
        try:
            runtime = await holder.get()
            runtime_name = runtime.name
            if job.source is not None:
                snapshot = await from_sandbox(db, wake, runtime, job.source, job.recipe, text)
            else:
                snapshot = await build(runtime, job.recipe, text, snapshots=pool.snapshots_enabled)
            if snapshot is not None and node_id is not None and runtime.supports("move_snapshots"):
                # Content-addressed, so other nodes can fetch it and check what they got.
                digest = await digest_of(runtime, snapshot.id)
            if snapshot is not None or job.recipe.network == NO_NETWORK:
                # (A template with a network is not snapshotted where files cannot be carried.)
                pool.note_snapshots(snapshot is not None, text.text)
        except asyncio.CancelledError:
            if snapshot is not None:  # taken but never recorded: nothing would refer to it
                with contextlib.suppress(SandboxRuntimeError):
                    await runtime.delete_snapshot(snapshot.id)
            raise
        except SetupFailed as exc:
            error = str(exc)
        except (ServiceUnavailable, Conflict) as exc:
            error = exc.detail
        except SandboxRuntimeError as exc:
            error = f"{type(exc).__name__}: {exc.public()}"
            log.warning("template build %s: %s", job.recipe.version_id, exc)
        except Exception as exc:
            log.exception("template build %s failed", job.recipe.version_id)
            error = f"internal error: {type(exc).__name__}"
    if error:
        text.add(f"build failed: {error}\n")
    orphan = await _finish(db, job, text, snapshot, error, runtime_name, digest)
    if snapshot is not None and digest is not None and node_id is not None and orphan is None:
        await record_copy(db, node_id, snapshot.id, digest, snapshot.size_bytes)
    if orphan is not None:
        # The template was deleted while it built: nothing refers to the snapshot.
        runtime = await holder.get()
        with contextlib.suppress(SandboxRuntimeError):
            await runtime.delete_snapshot(orphan)
    pool.poke()
    return "failed" if error else "ready"


async def refused_build(db: Db, job: Claimed) -> str | None:
    """Why a tenant's build may not start now; None when it may (the operator's builds are
    not a tenant's). It runs in a sandbox of its own, born now: that sandbox must fit the
    tenant's sandbox quotas beside its sandboxes and other builds (and counts against them
    while it runs), and the network its setup runs under must be one the tenant may have now
    (the operator may have taken it away while the build waited)."""
    if job.owner == OPERATOR_OWNER:
        return None
    async with db() as session, session.begin():
        tenant = await session.get(Tenant, job.owner, with_for_update=True)
        if tenant is None:
            return None
        usage = await SandboxRepository(session, job.owner).active_usage(
            except_build=job.recipe.version_id
        )
        caps = Caps(job.recipe.cpus, job.recipe.memory_mib, job.recipe.disk_mib)
        try:
            check_room(quotas_of(tenant), usage, caps)
        except QuotaExceeded as exc:
            return f"no room for the build's sandbox: {exc.detail} ({exc.extra['quota']})"
        try:
            check_policy(job.recipe, quotas_of(tenant), building=True)
        except AppError as exc:
            return f"the template's network is not allowed for this tenant now: {exc.detail}"
    return None


async def _finish(
    db: Db,
    job: Claimed,
    text: BuildLog,
    snapshot: SnapshotInfo | None,
    error: str | None,
    runtime_name: str | None,
    digest: str | None = None,
) -> str | None:
    async with db() as session, session.begin():
        row = await session.get(
            TemplateVersion, job.recipe.version_id, with_for_update=True, populate_existing=True
        )
        if row is None or row.state != "building":
            return snapshot.id if snapshot else None
        row.state = "failed" if error else "ready"
        row.error = error[:500] if error else None
        row.build_log = text.text
        row.finished_at = utcnow()
        row.runtime = runtime_name
        if snapshot is not None:
            row.snapshot_id = snapshot.id
            row.snapshot_bytes = snapshot.size_bytes
            row.snapshot_digest = digest
        await record(
            session,
            SYSTEM,
            chain=chain_of(job.owner),
            action="template.build",
            target=job.template_id,
            outcome=row.state,
            details={
                "name": job.name,
                "version": job.version,
                "attempt": job.attempts,
                "start_mode": ("snapshot" if snapshot else "image") if not error else None,
                "snapshot_bytes": snapshot.size_bytes if snapshot else None,
                "error": row.error,
            },
        )
    return None


class TemplateBuilder(PeriodicJob):
    name = "template-builder"

    def __init__(
        self,
        db: Db,
        holder: RuntimeHolder,
        pool: WarmPool,
        interval_s: float = 1.0,
        node_id: str | None = None,
        *,
        wake: Wake,
    ) -> None:
        super().__init__(interval_s)
        self.db = db
        self.holder = holder
        # A version made from a paused sandbox resumes it first (service.flows.resume.Resumes.wake).
        self.wake = wake
        self.pool = pool
        self.node_id = node_id
        # The build under way and its task; whether its owner's suspension stopped it.
        self.current: tuple[Claimed, asyncio.Task[str]] | None = None
        self.stopped = False

    async def run_once(self) -> bool:
        job = await claim_next(self.db, self.node_id)
        if job is None:
            return False
        text = BuildLog()
        task = asyncio.create_task(
            build_one(self.db, self.holder, self.wake, self.pool, job, self.node_id, text),
            name=f"build-{job.recipe.version_id}",
        )
        self.current, self.stopped = (job, task), False
        try:
            state = await task
        except asyncio.CancelledError:
            if not self.stopped or _cancelling():
                raise  # the service is stopping: the reconciler puts the build back
            text.add(f"build stopped: {REASON}\n")
            await _finish(self.db, job, text, None, REASON, None)
            state = "failed"
        finally:
            self.current = None
        log.info("template %s version %s: %s", job.name, job.version, state)
        return True

    async def stop_suspended(self) -> None:
        """Stop the build under way when its owner is suspended now (its sandboxes go, as
        when a build fails; it is not put back in the queue)."""
        if self.current is None or self.stopped or self.current[0].owner == OPERATOR_OWNER:
            return  # (once only: a second cancel would cut its record short)
        job, task = self.current
        async with self.db() as session:
            if not await suspended_among(session, [job.owner]):
                return
        self.stopped = True
        task.cancel()


def _cancelling() -> bool:
    """Whether the running task itself is being cancelled."""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


async def requeue_interrupted(
    db: Db | None = None,
    node_id: str | None = None,
    *,
    session: AsyncSession | None = None,
    unowned: bool = True,
) -> int:
    """Builds a crash of `node_id` cut off (at its start, or when the node was lost) go back in
    the queue (their sandboxes are orphans); builds other nodes are running are theirs.
    `unowned`: with the ones from before nodes were recorded. In `session`'s transaction when
    given."""
    if session is None:
        assert db is not None
        async with db() as own, own.begin():
            return await requeue_interrupted(node_id=node_id, session=own, unowned=unowned)
    result = await session.execute(
        update(TemplateVersion)
        .where(
            TemplateVersion.state == "building",
            on_node(TemplateVersion.node_id, node_id, unowned=unowned),
        )
        .values(state="queued", build_log="", node_id=None)
    )
    return int(result.rowcount or 0)  # type: ignore[attr-defined]

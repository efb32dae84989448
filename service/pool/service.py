"""The warm pool: targets per template and size, claims by creates, and what the operator sees.

See README.md for the whole flow (claim, fair share, refill, restart).
"""

from __future__ import annotations

import asyncio
import hashlib
import time

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import OPERATOR_CHAIN, AuditContext, record
from service.db.base import utcnow
from service.db.models import PoolTarget, Sandbox, Template, TemplateVersion, Tenant
from service.errors import NotFound, Unprocessable
from service.ids import new_id
from service.nodes.local import LocalNode, local_node_id
from service.pool import metrics
from service.pool.repository import Claim, PoolRepository
from service.pool.schemas import PoolOverview, PoolStatus, PoolTargetSet
from service.settings import Settings
from service.templates.repository import OPERATOR_OWNER, TemplateRepository, ready_version


class WarmPool:
    """Process-wide pool state: this node's id (from the `LocalNode` the app hands in), the
    snapshot finding, and the refiller's bell."""

    def __init__(self, settings: Settings, node: LocalNode) -> None:
        # Pool members live in one node's runtime: only that node claims and refills them. An
        # API replica has no node and runs no pool; its overview names its host as a node's
        # id would.
        self.node_id = node.id if node.id is not None else local_node_id(settings)
        self.host = self.node_id
        self.snapshots_enabled = settings.template_snapshots != "off"
        self.snapshots = "unknown" if self.snapshots_enabled else "disabled"
        self.note = (
            "no template has been built yet on this host"
            if self.snapshots_enabled
            else "snapshots are off (AIRLOCK_TEMPLATE_SNAPSHOTS=off): pool members are "
            "pre-started from the image with the setup run"
        )
        self.targets_setting = settings.pool_targets
        self.after_claim_s = settings.pool_refill_after_claim_s
        # No refill starts before this (time.monotonic()): a claimer's first moments.
        self.quiet_until = 0.0
        self._bell: asyncio.Event | None = None

    @property
    def bell(self) -> asyncio.Event:
        if self._bell is None:
            self._bell = asyncio.Event()
        return self._bell

    def poke(self) -> None:
        """Wake the refiller now (after a miss, a new target, a finished build)."""
        self.bell.set()

    def poke_after_claim(self) -> None:
        """Wake the refiller a little later: a claimer runs its first commands right away, and
        on a small host a restore beside them would take their CPU."""
        if self.after_claim_s > 0:
            self.quiet_until = time.monotonic() + self.after_claim_s  # the refiller waits it out
        self.poke()

    def note_snapshots(self, worked: bool, detail: str) -> None:
        if not self.snapshots_enabled:
            return
        self.snapshots = "supported" if worked else "unsupported"
        if worked:
            self.note = "pool members are restored from template snapshots"
        else:
            last = detail.strip().splitlines()[-2:] if detail.strip() else []
            self.note = (
                "this runtime could not snapshot on this host; pool members are pre-started "
                "from the image with the setup run. " + " ".join(last)
            )[:1000]


def fair_share(target: int, tenants: int) -> int:
    """Claims per minute one tenant may take while `tenants` tenants ask the same pool."""
    return max(1, target // max(1, tenants))


async def try_claim(
    session: AsyncSession,
    pool: WarmPool,
    sandbox: Sandbox,
    template: Template,
    build: TemplateVersion,
) -> Claim | None:
    """In the create's transaction: take a member of the template's pool for the sandbox being
    recorded (of the build's size), or None (a cold start).

    Records the ask either way, for fair shares and the claim/miss figures."""
    tenant_id, size = sandbox.tenant_id, sandbox.size
    template_label = label(template.name, template.owner)
    repo = PoolRepository(session)
    target = await repo.find(template.id, size)
    if target is None or target.target <= 0:
        return None
    tenants, mine = await repo.recent_asks(target.id, tenant_id)
    got = None
    reason = "fair_share"
    if mine < fair_share(target.target, tenants):
        got = await repo.claim(target.id, build.id, pool.host, sandbox.id)
        reason = "empty"
    repo.add_request(target.id, tenant_id, got is not None)
    if got is None:
        metrics.MISSES.labels(template_label, size, reason).inc()
        pool.poke()
        return None
    metrics.CLAIMS.labels(template_label, size).inc()
    pool.poke_after_claim()
    return got


def label(name: str, owner: str) -> str:
    """The pool's name on the public /metrics: a tenant's template is named by a digest, so
    scraping reveals neither tenant ids nor their template names."""
    if owner == OPERATOR_OWNER:
        return name
    return "tenant-" + hashlib.sha256(f"{owner}/{name}".encode()).hexdigest()[:12]


async def overview(session: AsyncSession, pool: WarmPool) -> PoolOverview:
    repo = PoolRepository(session)
    statuses = []
    for target, template in await repo.targets():
        version = await ready_version(session, template.id)
        by_node = await repo.members_by_node(target.id, version.id if version else None)
        claims, misses = await repo.claims_and_misses(target.id)
        tenants, _ = await repo.recent_asks(target.id, "")
        tenants -= 1  # recent_asks counts the asker itself; there is none here
        statuses.append(
            PoolStatus(
                template=template.name,
                template_id=template.id,
                tenant_id=None if template.owner == OPERATOR_OWNER else template.owner,
                size=target.size,
                target=target.target,
                version=version.version if version else None,
                mode=("snapshot" if version.snapshot_id else "image") if version else None,
                ready=sum(n for (_, state), n in by_node.items() if state == "ready"),
                starting=sum(n for (_, state), n in by_node.items() if state == "starting"),
                ready_by_node={
                    node: n for (node, state), n in sorted(by_node.items()) if state == "ready"
                },
                claims=claims,
                misses=misses,
                fair_share_per_minute=fair_share(target.target, max(1, tenants)),
                tenants_last_minute=tenants,
                last_refill_at=target.last_refill_at,
                last_refill_ms=target.last_refill_ms,
            )
        )
    return PoolOverview(host=pool.host, snapshots=pool.snapshots, note=pool.note, pools=statuses)  # type: ignore[arg-type]


async def set_target(
    session: AsyncSession,
    pool: WarmPool,
    ctx: AuditContext,
    name: str,
    data: PoolTargetSet,
    tenant_id: str | None = None,
) -> PoolStatus:
    """The operator sets a pool for a shared template, or (with `tenant_id`) a tenant's own."""
    owner = tenant_id or OPERATOR_OWNER
    if tenant_id is not None and await session.get(Tenant, tenant_id) is None:
        raise NotFound(f"no tenant {tenant_id}")
    template = await TemplateRepository(session, owner).own(name)
    if template is None:
        raise NotFound(f"no template {name}" + (f" of tenant {tenant_id}" if tenant_id else ""))
    newest = await session.scalar(
        select(TemplateVersion)
        .where(TemplateVersion.template_id == template.id)
        .order_by(TemplateVersion.version.desc())
        .limit(1)
    )
    if newest is not None and newest.size != data.size:
        raise Unprocessable(
            f"template {name} is built for size {newest.size}", extra={"size": newest.size}
        )
    await upsert_target(session, template.id, data.size, data.target)
    await record(
        session,
        ctx,
        chain=OPERATOR_CHAIN,
        action="pool.target",
        target=template.id,
        details={
            "template": name,
            "tenant_id": tenant_id,
            "size": data.size,
            "target": data.target,
        },
    )
    metrics.TARGET.labels(label(name, owner), data.size).set(data.target)
    pool.poke()
    found = await overview(session, pool)
    return next(p for p in found.pools if p.template_id == template.id and p.size == data.size)


async def upsert_target(
    session: AsyncSession, template_id: str, size: str, target: int, *, keep: bool = False
) -> None:
    """Set a target; with `keep`, only when the pool has none yet (settings seed, PUT wins)."""
    row = await session.scalar(
        select(PoolTarget)
        .where(PoolTarget.template_id == template_id, PoolTarget.size == size)
        .with_for_update()
    )
    if row is None:
        session.add(
            PoolTarget(
                id=new_id("pol"),
                template_id=template_id,
                size=size,
                target=target,
                updated_at=utcnow(),
            )
        )
    elif not keep:
        row.target = target
        row.updated_at = utcnow()
    await session.flush()


def parse_targets(text: str) -> list[tuple[str, str, int]]:
    """`AIRLOCK_POOL_TARGETS`: `name:size=N,name2=N` (size defaults to small)."""
    found = []
    for item in filter(None, (p.strip() for p in text.split(","))):
        key, _, count = item.partition("=")
        name, _, size = key.partition(":")
        found.append((name.strip(), (size or "small").strip(), int(count)))
    return found

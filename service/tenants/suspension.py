"""What a suspension does to a tenant's background work: it stops, and says why.

Queued template builds and reviews fail at once, in the suspension's own transaction, and any
that slipped in beside it fail when a runner next looks for work (its claim cancels them
first). Running ones are stopped on the node that runs them (`service.jobs.suspended`); pool
members of the tenant's templates are not refilled while it is suspended. Nothing here is put
back when the tenant is made active again: what was cancelled stays failed, with the reason.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import ColumnElement, Select, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext, record
from service.db.base import utcnow
from service.db.models import Review, Template, TemplateVersion, Tenant

SUSPENDED = "suspended"
# The error every stopped job carries.
REASON = "cancelled: the tenant was suspended"


def suspended_tenants() -> Select[tuple[str]]:
    return select(Tenant.id).where(Tenant.status == SUSPENDED)


async def suspended_among(session: AsyncSession, tenant_ids: Collection[str]) -> set[str]:
    """Which of these tenants are suspended now."""
    if not tenant_ids:
        return set()
    found = await session.scalars(suspended_tenants().where(Tenant.id.in_(list(tenant_ids))))
    return set(found)


async def cancel_queued(
    session: AsyncSession, ctx: AuditContext, tenants: Select[tuple[str]] | Collection[str]
) -> int:
    """Fail the queued builds and reviews of `tenants` (ids, or a query of them) with the
    reason, each with the audit event its runner would have written; how many."""
    return await cancel_queued_builds(session, ctx, tenants) + await cancel_queued_reviews(
        session, ctx, tenants
    )


async def cancel_queued_builds(
    session: AsyncSession, ctx: AuditContext, owners: Select[tuple[str]] | Collection[str]
) -> int:
    templates = select(Template.id).where(_among(Template.owner, owners))
    cancelled = await session.execute(
        update(TemplateVersion)
        .where(TemplateVersion.state == "queued", TemplateVersion.template_id.in_(templates))
        .values(state="failed", error=REASON, finished_at=utcnow())
        .returning(TemplateVersion.template_id, TemplateVersion.version)
        .execution_options(synchronize_session=False)
    )
    rows = cancelled.all()
    for template_id, version in rows:
        template = await session.get(Template, template_id)
        assert template is not None
        await record(
            session, ctx, chain=template.owner, action="template.build", target=template_id,
            outcome="failed", details={"name": template.name, "version": version, "error": REASON},
        )  # fmt: skip
    return len(rows)


async def cancel_queued_reviews(
    session: AsyncSession, ctx: AuditContext, tenants: Select[tuple[str]] | Collection[str]
) -> int:
    cancelled = await session.execute(
        update(Review)
        .where(Review.state == "queued", _among(Review.tenant_id, tenants))
        .values(state="failed", error=REASON, finished_at=utcnow())
        .returning(Review.id, Review.tenant_id)
        .execution_options(synchronize_session=False)
    )
    rows = cancelled.all()
    for review_id, tenant_id in rows:
        await finish_review_event(session, ctx, tenant_id, review_id)
    return len(rows)


async def finish_review_event(
    session: AsyncSession, ctx: AuditContext, tenant_id: str, review_id: str
) -> None:
    """The `review.finish` event of a review stopped by the suspension."""
    await record(
        session, ctx, chain=tenant_id, action="review.finish", target=review_id,
        outcome="failed", details={"verdict": None, "error": REASON},
    )  # fmt: skip


def _among(
    column: ColumnElement[str], tenants: Select[tuple[str]] | Collection[str]
) -> ColumnElement[bool]:
    return column.in_(tenants if isinstance(tenants, Select) else list(tenants))

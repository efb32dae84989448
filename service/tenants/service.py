"""Tenants and their quotas; operator only."""

from __future__ import annotations

from typing import Any

import msgspec
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from service.apikeys import service as apikeys
from service.apikeys.schemas import ApiKeyCreate, ApiKeyCreated
from service.audit.recorder import AuditContext, record
from service.auth.cache import auth_changed
from service.auth.principal import SCOPES
from service.db import models
from service.db.base import utcnow
from service.errors import Conflict, NotFound, Unprocessable
from service.ids import new_id
from service.pagination import decode_cursor, page_of
from service.runtime import egress
from service.runtime.errors import InvalidSpec
from service.tenants import suspension
from service.tenants.repository import TenantRepository
from service.tenants.schemas import (
    Quotas,
    QuotasPatch,
    Tenant,
    TenantCreate,
    TenantCreated,
    TenantPage,
    TenantUpdate,
    TenantUsage,
)


def quotas_of(row: models.Tenant) -> Quotas:
    return quotas_from(row.quotas)


def quotas_from(stored: dict[str, Any]) -> Quotas:
    # Stored quotas are merged over today's defaults, so a new quota field needs no migration.
    return msgspec.convert(stored, Quotas, strict=False)


def _apply(base: Quotas, patch: QuotasPatch | None) -> Quotas:
    if patch is None:
        return base
    changes = {k: v for k, v in msgspec.structs.asdict(patch).items() if v is not None}
    if patch.network_private_cidrs is not None:
        try:
            egress.parse_grants(patch.network_private_cidrs)
        except egress.PolicyRefused as exc:
            raise Unprocessable(
                f"network_private_cidrs: {exc}", extra={"entry": exc.entry}
            ) from exc
        except InvalidSpec as exc:
            raise Unprocessable(f"network_private_cidrs: {exc}") from exc
    return msgspec.structs.replace(base, **changes)


def to_schema(row: models.Tenant) -> Tenant:
    return Tenant(
        id=row.id,
        name=row.name,
        status=row.status,  # type: ignore[arg-type]
        quotas=quotas_of(row),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def create_tenant(
    session: AsyncSession, ctx: AuditContext, data: TenantCreate, defaults: Quotas
) -> TenantCreated:
    repo = TenantRepository(session)
    if await repo.get_by_name(data.name) is not None:
        raise Conflict(f"a tenant named {data.name!r} exists")
    now = utcnow()
    quotas = _apply(defaults, data.quotas)
    row = models.Tenant(
        id=new_id("ten"),
        name=data.name,
        status="active",
        quotas=msgspec.to_builtins(quotas),
        created_at=now,
        updated_at=now,
    )
    repo.add(row)
    try:
        await session.flush()
    except IntegrityError as exc:
        # Two creates with one name racing: the loser gets the same answer as a sequential one.
        raise Conflict(f"a tenant named {data.name!r} exists") from exc
    await record(
        session,
        ctx,
        chain=row.id,
        action="tenant.create",
        target=row.id,
        details={"name": row.name, "quotas": row.quotas},
    )
    key = await apikeys.create_key(
        session, ctx, tenant_id=row.id, name="initial", scopes=list(SCOPES)
    )
    return TenantCreated(tenant=to_schema(row), api_key=key.key, api_key_id=key.api_key.id)


async def get_tenant(session: AsyncSession, tenant_id: str) -> models.Tenant:
    row = await TenantRepository(session).get(tenant_id)
    if row is None:
        raise NotFound(f"no tenant {tenant_id}")
    return row


async def read_tenant(session: AsyncSession, tenant_id: str) -> Tenant:
    """The tenant with what it holds now."""
    row = await get_tenant(session, tenant_id)
    stored = await session.scalar(
        select(models.TenantUsage.stored_output_bytes).where(
            models.TenantUsage.tenant_id == tenant_id
        )
    )
    usage = TenantUsage(stored_output_bytes=int(stored or 0))
    return msgspec.structs.replace(to_schema(row), usage=usage)


async def list_tenants(session: AsyncSession, *, limit: int, cursor: str | None) -> TenantPage:
    after = decode_cursor(cursor, str)
    rows = await TenantRepository(session).list(limit=limit + 1, after_id=after)
    items, next_cursor = page_of(rows, limit, key=lambda r: r.id)
    return TenantPage(items=[to_schema(r) for r in items], next_cursor=next_cursor)


async def update_tenant(
    session: AsyncSession, ctx: AuditContext, tenant_id: str, data: TenantUpdate
) -> Tenant:
    row = await get_tenant(session, tenant_id)
    changes: dict[str, object] = {}
    if data.quotas is not None:
        new = msgspec.to_builtins(_apply(quotas_of(row), data.quotas))
        changes["quotas"] = {k: v for k, v in new.items() if row.quotas.get(k) != v}
        row.quotas = new
    if data.status is not None and data.status != row.status:
        changes["status"] = data.status
        row.status = data.status
        await auth_changed(session)
    row.updated_at = utcnow()
    await session.flush()
    await record(session, ctx, chain=row.id, action="tenant.update", target=row.id, details=changes)
    if changes.get("status") == suspension.SUSPENDED:
        # Its waiting work goes with it; its nodes stop what runs (service.jobs.suspended).
        await suspension.cancel_queued(session, ctx, [row.id])
    return to_schema(row)


async def create_tenant_key(
    session: AsyncSession, ctx: AuditContext, tenant_id: str, data: ApiKeyCreate
) -> ApiKeyCreated:
    await get_tenant(session, tenant_id)
    scopes = apikeys.check_scopes(data.scopes if data.scopes is not None else list(SCOPES), None)
    return await apikeys.create_key(
        session, ctx, tenant_id=tenant_id, name=data.name, scopes=scopes
    )

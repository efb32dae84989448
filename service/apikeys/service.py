"""API keys: `alk_`-prefixed, 256 random bits, stored as a SHA-256 hash, shown once."""

from __future__ import annotations

import secrets

from sqlalchemy.ext.asyncio import AsyncSession

from service.apikeys.repository import ApiKeyRepository
from service.apikeys.schemas import ApiKey, ApiKeyCreate, ApiKeyCreated, ApiKeyPage
from service.audit.recorder import AuditContext, record
from service.auth.authenticate import API_KEY_PREFIX, hash_api_key
from service.auth.cache import auth_changed
from service.auth.principal import SCOPES, Principal, PrincipalKind
from service.db import models
from service.db.base import utcnow
from service.errors import Forbidden, NotFound, Unprocessable
from service.ids import new_id
from service.pagination import decode_cursor, page_of


def to_schema(row: models.ApiKey) -> ApiKey:
    return ApiKey(
        id=row.id,
        tenant_id=row.tenant_id,
        name=row.name,
        prefix=row.prefix,
        scopes=list(row.scopes),
        created_at=row.created_at,
        created_by=row.created_by,
        last_used_at=row.last_used_at,
        revoked_at=row.revoked_at,
    )


def check_scopes(requested: list[str], held: frozenset[str] | None) -> list[str]:
    """Validate requested scopes; `held=None` means the caller may grant any scope."""
    unknown = sorted(set(requested) - set(SCOPES))
    if unknown:
        raise Unprocessable(
            f"unknown scopes: {', '.join(unknown)}", extra={"known_scopes": list(SCOPES)}
        )
    if held is not None:
        missing = sorted(set(requested) - held)
        if missing:
            raise Forbidden(
                f"cannot grant scopes the caller does not hold: {', '.join(missing)}",
                extra={"scopes_not_held": missing},
            )
    # Keep a canonical order so keys and tokens read the same way everywhere.
    return [s for s in SCOPES if s in set(requested)]


async def create_key(
    session: AsyncSession,
    ctx: AuditContext,
    *,
    tenant_id: str,
    name: str,
    scopes: list[str],
) -> ApiKeyCreated:
    secret = API_KEY_PREFIX + secrets.token_urlsafe(32)
    row = models.ApiKey(
        id=new_id("key"),
        tenant_id=tenant_id,
        name=name,
        key_hash=hash_api_key(secret),
        prefix=secret[:12],
        scopes=scopes,
        created_by=ctx.actor,
        created_at=utcnow(),
    )
    ApiKeyRepository(session, tenant_id).add(row)
    await session.flush()
    await record(
        session,
        ctx,
        chain=tenant_id,
        action="api_key.create",
        target=row.id,
        details={"name": name, "scopes": scopes},
    )
    return ApiKeyCreated(api_key=to_schema(row), key=secret)


async def create_for_principal(
    session: AsyncSession, ctx: AuditContext, principal: Principal, data: ApiKeyCreate
) -> ApiKeyCreated:
    assert principal.tenant_id is not None
    if principal.kind is not PrincipalKind.API_KEY:
        # A key made from a token would outlive the token and the key that minted it.
        raise Forbidden("API keys are made with an API key, not a token")
    requested = data.scopes if data.scopes is not None else sorted(principal.scopes)
    scopes = check_scopes(requested, principal.scopes)
    return await create_key(
        session, ctx, tenant_id=principal.tenant_id, name=data.name, scopes=scopes
    )


async def list_keys(
    session: AsyncSession, tenant_id: str, *, limit: int, cursor: str | None
) -> ApiKeyPage:
    after = decode_cursor(cursor, str)
    rows = await ApiKeyRepository(session, tenant_id).list(limit=limit + 1, after_id=after)
    items, next_cursor = page_of(rows, limit, key=lambda r: r.id)
    return ApiKeyPage(items=[to_schema(r) for r in items], next_cursor=next_cursor)


async def revoke_key(session: AsyncSession, ctx: AuditContext, tenant_id: str, key_id: str) -> None:
    row = await ApiKeyRepository(session, tenant_id).get(key_id)
    if row is None:
        raise NotFound(f"no API key {key_id}")
    if row.revoked_at is None:
        row.revoked_at = utcnow()
        await auth_changed(session)
        await record(session, ctx, chain=tenant_id, action="api_key.revoke", target=key_id)

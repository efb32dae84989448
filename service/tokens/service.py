"""Short-lived JWTs minted from an API key; revocation by `jti`."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Select, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.apikeys.service import check_scopes
from service.audit.recorder import AuditContext, record
from service.auth.cache import auth_changed
from service.auth.principal import Principal, PrincipalKind
from service.auth.tokens import TokenCodec
from service.db.models import AuditEvent, RevokedToken
from service.errors import Forbidden, NotFound, Unprocessable
from service.ports.links import JTI_PREFIX, LINK_ACTION
from service.sandboxes.repository import SandboxRepository
from service.tenants.service import get_tenant, quotas_of
from service.tokens.schemas import TokenCreate, TokenCreated

ISSUE_ACTION = "token.issue"


async def issue_token(
    session: AsyncSession,
    ctx: AuditContext,
    codec: TokenCodec,
    principal: Principal,
    data: TokenCreate,
) -> TokenCreated:
    if principal.kind is not PrincipalKind.API_KEY:
        raise Forbidden("tokens are issued to API keys; present an API key as the bearer")
    assert principal.tenant_id is not None and principal.key_id is not None
    tenant = await get_tenant(session, principal.tenant_id)
    max_ttl = quotas_of(tenant).max_token_ttl_s
    ttl = data.ttl_s if data.ttl_s is not None else max_ttl
    if ttl > max_ttl:
        raise Unprocessable(
            f"ttl_s {ttl} exceeds this tenant's maximum token lifetime of {max_ttl} s",
            extra={"max_ttl_s": max_ttl},
        )
    requested = data.scopes if data.scopes is not None else sorted(principal.scopes)
    if not requested:
        raise Unprocessable("a token needs at least one scope")
    scopes = check_scopes(requested, principal.scopes)
    if data.sandbox_id is not None:
        sandbox = await SandboxRepository(session, principal.tenant_id).get(data.sandbox_id)
        if sandbox is None:
            raise NotFound(f"no sandbox {data.sandbox_id}")
    issued = codec.issue(
        sub=principal.key_id,
        tenant_id=principal.tenant_id,
        scopes=scopes,
        ttl_s=ttl,
        sandbox_id=data.sandbox_id,
    )
    await record(
        session,
        ctx,
        chain=principal.tenant_id,
        action=ISSUE_ACTION,
        target=issued.jti,
        details={
            "scopes": scopes,
            "sandbox_id": data.sandbox_id,
            "expires_at": issued.expires_at.isoformat(),
        },
    )
    return TokenCreated(
        token=issued.token,
        jti=issued.jti,
        expires_at=issued.expires_at,
        scopes=scopes,
        sandbox_id=data.sandbox_id,
    )


async def revoke_token(
    session: AsyncSession, ctx: AuditContext, principal: Principal, jti: str
) -> None:
    assert principal.tenant_id is not None
    revoking_itself = principal.kind is PrincipalKind.TOKEN and principal.actor == jti
    if not revoking_itself and (
        principal.sandbox_id is not None or not principal.has_scope("keys:write")
    ):
        raise Forbidden("a token may revoke itself; other tokens need the 'keys:write' scope")
    # The issue event in the tenant's own chain proves the token (or preview link) is the
    # tenant's; another tenant's jti is simply not found.
    issued = await session.scalar(_issued(principal.tenant_id, jti))
    if issued is None:
        raise NotFound(f"no token or preview link {jti}")
    if await session.get(RevokedToken, jti) is not None:
        return
    session.add(
        RevokedToken(
            jti=jti,
            tenant_id=principal.tenant_id,
            expires_at=datetime.fromisoformat(issued.details["expires_at"]),
            revoked_by=principal.actor,
        )
    )
    await auth_changed(session)
    await record(session, ctx, chain=principal.tenant_id, action="token.revoke", target=jti)


def _issued(tenant_id: str, jti: str) -> Select[tuple[AuditEvent]]:
    """The event that made `jti` in the tenant's chain: a token's names it as its target, a
    preview link's (whose target is its sandbox) in its details."""
    mine = select(AuditEvent).where(AuditEvent.chain == tenant_id)
    if jti.startswith(JTI_PREFIX):
        return mine.where(
            AuditEvent.action == LINK_ACTION, AuditEvent.details["jti"].as_string() == jti
        )
    return mine.where(AuditEvent.action == ISSUE_ACTION, AuditEvent.target == jti)

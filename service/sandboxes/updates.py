"""A running sandbox changed in place: its TTL extended, its idle timeout, or its network
policy (applied by the runtime first, outside any transaction, and recorded only then)."""

from __future__ import annotations

from datetime import timedelta

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext, record
from service.auth.principal import Principal
from service.db.base import utcnow
from service.db.models import Sandbox as SandboxRow
from service.db.models import Tenant
from service.db.session import Db
from service.errors import (
    Conflict,
    Unprocessable,
)
from service.runtime.errors import InvalidSpec
from service.runtime.holder import RuntimeHolder
from service.sandboxes.quotas import check_lifetime, check_ttl
from service.sandboxes.schemas import (
    Sandbox,
    SandboxNetwork,
    SandboxUpdate,
)
from service.sandboxes.service import (
    check_network,
    get_row,
    get_row_scoped,
    refused,
    require_running,
    to_schema,
)
from service.sandboxes.states import State
from service.tenants.schemas import Quotas
from service.tenants.service import quotas_of


async def update_sandbox(
    db: Db,
    holder: RuntimeHolder,
    principal: Principal,
    ctx: AuditContext,
    sandbox_id: str,
    data: SandboxUpdate,
) -> Sandbox:
    """Extend the TTL and/or change the egress policy. Everything is checked first; a policy
    change goes to the runtime outside any transaction, and only then is anything written."""
    assert principal.tenant_id is not None
    async with db() as session:
        row = await get_row(session, principal, sandbox_id)
        tenant = await session.get(Tenant, principal.tenant_id)
        assert tenant is not None
        quotas = quotas_of(tenant)
        _check_update(row, quotas, data)
        runtime_id = row.runtime_id
    if data.network is not None:
        await _change_network(holder, runtime_id, data.network, quotas)
    async with db() as session, session.begin():
        row = await get_row_scoped(
            session, principal.tenant_id, principal.sandbox_id, sandbox_id, for_update=True
        )
        if data.ttl_s is not None:
            if row.state not in (State.CREATING, State.RUNNING):
                raise Conflict(f"a {row.state} sandbox has no TTL to extend")
            await _extend_ttl(session, ctx, principal.tenant_id, row, data.ttl_s)
        if data.idle_timeout_s is not None:
            row.idle_timeout_s = data.idle_timeout_s or None
            row.updated_at = utcnow()
            await record(
                session,
                ctx,
                chain=principal.tenant_id,
                action="sandbox.idle_timeout",
                target=row.id,
                details={"idle_timeout_s": row.idle_timeout_s},
            )
        if data.network is not None:
            before = row.network
            row.network = msgspec.to_builtins(data.network)
            row.updated_at = utcnow()
            await record(
                session,
                ctx,
                chain=principal.tenant_id,
                action="sandbox.network",
                target=row.id,
                details={"from": before, "to": row.network},
            )
        return to_schema(row)


def _check_update(row: SandboxRow, quotas: Quotas, data: SandboxUpdate) -> None:
    if data.idle_timeout_s and data.idle_timeout_s > quotas.max_idle_timeout_s:
        raise Unprocessable(
            f"idle_timeout_s {data.idle_timeout_s} exceeds this tenant's maximum of "
            f"{quotas.max_idle_timeout_s}",
            extra={"max_idle_timeout_s": quotas.max_idle_timeout_s},
        )
    if data.ttl_s is not None:
        if row.state not in (State.CREATING, State.RUNNING):
            raise Conflict(f"a {row.state} sandbox has no TTL to extend")
        check_ttl(quotas, data.ttl_s)
        check_lifetime(quotas, row.created_at, utcnow(), data.ttl_s)
    if data.network is not None:
        check_network(data.network, quotas)
        require_running(row)
        if row.network.get("mode", "none") == "none":
            raise Conflict(
                "this sandbox was created without a network, and keeps none; a sandbox's "
                "network can change between 'allowlist' and 'open' only"
            )


async def _change_network(
    holder: RuntimeHolder, runtime_id: str | None, network: SandboxNetwork, quotas: Quotas
) -> None:
    assert runtime_id is not None
    runtime = await holder.get()
    if not runtime.supports("update_network"):
        raise Unprocessable(f"the {runtime.name} runtime cannot change a sandbox's network")
    try:
        await runtime.update_network(
            runtime_id, network.mode, list(network.allow), list(quotas.network_private_cidrs)
        )
    except InvalidSpec as exc:
        raise refused(exc) from exc


async def _extend_ttl(
    session: AsyncSession, ctx: AuditContext, tenant_id: str, row: SandboxRow, ttl_s: int
) -> None:
    before = row.expires_at
    row.ttl_s = ttl_s
    row.expires_at = utcnow() + timedelta(seconds=ttl_s)
    row.updated_at = utcnow()
    await record(
        session,
        ctx,
        chain=tenant_id,
        action="sandbox.ttl",
        target=row.id,
        details={"ttl_s": ttl_s, "from": before.isoformat(), "to": row.expires_at.isoformat()},
    )

"""The sandbox a files call is for: looked up for the caller (tenant and token binding),
running (a paused one woken first), and its audit event; a runtime failure of a sandbox that
stopped meanwhile is its 409, as a call a moment later would meet."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from service.audit.recorder import AuditContext, record
from service.auth.principal import Principal
from service.db.models import Sandbox as SandboxRow
from service.db.models import Tenant
from service.db.session import Db
from service.errors import SandboxNotUsable
from service.runtime import (
    InvalidPath,
    SandboxNotFound,
    SandboxRuntimeError,
)
from service.runtime.holder import RuntimeHolder
from service.runtime.paths import sandbox_path
from service.sandboxes import service as sandboxes
from service.sandboxes.activity import touch
from service.sandboxes.waking import Wake
from service.tenants.service import quotas_of

MIB = 1 << 20


@dataclass(frozen=True, slots=True)
class Target:
    """A running sandbox the caller may use: what a files call needs after the lookup."""

    tenant_id: str
    sandbox_id: str
    runtime_id: str
    upload_limit: int  # bytes
    max_exec_timeout_s: int  # the tenant's, for what runs code (an interpreter's runs)


# Reads a sandbox for the caller (`db`, `principal`, the sandbox's id): 404 when it may not
# see it, SandboxPaused and the like (require_running) when it is not running.
Lookup = Callable[[Db, Principal, str], Awaitable[Target]]


@dataclass(frozen=True, slots=True)
class SandboxCall:
    """A call on one sandbox as a request makes it: the caller and its audit context, the
    sandbox it names, and what reaches it (the database, the runtime, a wake when paused)."""

    db: Db
    holder: RuntimeHolder
    wake: Wake
    principal: Principal
    ctx: AuditContext
    sandbox_id: str

    async def target(self, lookup: Lookup | None = None) -> Target:
        """The sandbox, looked up for the caller and running (`resolve`); `lookup` reads it
        (the files routes' own, through the ORM, unless given)."""
        return await resolve(
            self.db, self.principal, self.sandbox_id, self.wake, self.ctx, lookup=lookup
        )


def absolute_path(path: str, what: str = "path") -> str:
    """The normalised sandbox path, or InvalidPath (422) saying exactly what is wrong."""
    if not path.startswith("/"):
        raise InvalidPath(path, f"the {what} must be absolute (start with /)")
    return sandbox_path(path)


async def resolve(
    db: Db,
    principal: Principal,
    sandbox_id: str,
    wake: Wake | None = None,
    ctx: AuditContext | None = None,
    *,
    lookup: Lookup | None = None,
) -> Target:
    """The sandbox, scoped by tenant and token binding (404), and running (409): a paused one
    is woken first when `wake` is given. The call counts as the sandbox's activity."""
    assert principal.tenant_id is not None
    running = lookup or _running
    try:
        target = await running(db, principal, sandbox_id)
    except sandboxes.SandboxPaused:
        if wake is None:
            raise
        ctx = ctx or AuditContext(actor=principal.actor, request_id=None, client=None)
        await wake(principal.tenant_id, principal.sandbox_id, ctx, sandbox_id, why="files")
        target = await running(db, principal, sandbox_id)
    await touch(db, target.sandbox_id)
    return target


async def _running(db: Db, principal: Principal, sandbox_id: str) -> Target:
    assert principal.tenant_id is not None
    async with db() as session:
        row = await sandboxes.get_row_scoped(
            session, principal.tenant_id, principal.sandbox_id, sandbox_id
        )
        sandboxes.require_running(row)
        tenant = await session.get(Tenant, principal.tenant_id)
        assert tenant is not None and row.runtime_id is not None
        return Target(
            tenant_id=principal.tenant_id,
            sandbox_id=row.id,
            runtime_id=row.runtime_id,
            upload_limit=quotas_of(tenant).max_upload_mib * MIB,
            max_exec_timeout_s=quotas_of(tenant).max_exec_timeout_s,
        )


@contextlib.asynccontextmanager
async def while_running(db: Db, target: Target, *failures: type[Exception]) -> AsyncIterator[None]:
    """The sandbox's own 409 (`sandbox_not_running` naming its state, or `sandbox_paused`)
    for a call it did not outlive: deleted, expired, failed or paused while the runtime moved
    the bytes, the runtime's failure (a bare runtime error, the runtime no longer knowing it,
    or one of `failures`) is what a call a moment later would have met. A failure while it
    still runs stays as it is."""
    try:
        yield
    except (SandboxNotFound, *failures) as exc:
        await _raise_if_not_running(db, target, exc)
        raise
    except SandboxRuntimeError as exc:
        if type(exc) is SandboxRuntimeError:
            await _raise_if_not_running(db, target, exc)
        raise


async def _raise_if_not_running(db: Db, target: Target, exc: Exception) -> None:
    async with db() as session:
        row = await session.get(SandboxRow, target.sandbox_id)
    if row is not None:
        try:
            sandboxes.require_running(row)
        except SandboxNotUsable as stopped:  # paused meanwhile too: a 409 to retry
            raise stopped from exc


async def audit(
    db: Db,
    ctx: AuditContext,
    target: Target,
    action: str,
    *,
    outcome: str = "ok",
    **details: Any,
) -> None:
    async with db() as session, session.begin():
        await record(
            session,
            ctx,
            chain=target.tenant_id,
            action=action,
            target=target.sandbox_id,
            outcome=outcome,
            details=details,
        )

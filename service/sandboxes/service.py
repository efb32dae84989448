"""Sandbox lifecycle. No transaction is held across a runtime call: the intent is committed
first (`creating`, `stopping`), the runtime is called, and the outcome is recorded in a second
short transaction; the reconciler repairs rows a crash left in between."""

from __future__ import annotations

import asyncio

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext, record
from service.auth.principal import Principal
from service.db.base import utcnow
from service.db.models import Sandbox as SandboxRow
from service.db.session import Db
from service.errors import (
    AppError,
    Forbidden,
    NotFound,
    SandboxNotUsable,
    ServiceUnavailable,
    Unprocessable,
)
from service.pagination import decode_cursor, page_of
from service.runtime import SandboxRuntime, egress
from service.runtime.errors import InvalidSpec
from service.runtime.holder import RuntimeHolder
from service.sandboxes.lifecycle import transition
from service.sandboxes.repository import SandboxRepository
from service.sandboxes.schemas import (
    Sandbox,
    SandboxMetrics,
    SandboxNetwork,
    SandboxPage,
    Transition,
)
from service.sandboxes.states import State
from service.tenants.schemas import Quotas


def to_schema(row: SandboxRow) -> Sandbox:
    return Sandbox(
        id=row.id,
        state=row.state,
        runtime=row.runtime,
        image=row.image,
        template=row.template,
        template_version=row.template_version,
        started_from=row.started_from,
        size=row.size,
        cpus=row.cpus,
        memory_mib=row.memory_mib,
        disk_mib=row.disk_mib,
        network=msgspec.convert(row.network, SandboxNetwork),
        env=row.env,
        labels=row.labels,
        ttl_s=row.ttl_s,
        created_at=row.created_at,
        expires_at=row.expires_at,
        stopped_at=row.stopped_at,
        failure_reason=row.failure_reason,
        node_id=row.node_id,
        idle_timeout_s=row.idle_timeout_s,
        last_activity_at=row.last_activity_at,
        paused_at=row.paused_at,
        pause_bytes=row.pause_bytes,
        pause_expires_at=row.pause_expires_at,
        connections_cut=row.pause_cut,
    )


def repository(session: AsyncSession, principal: Principal) -> SandboxRepository:
    assert principal.tenant_id is not None
    return SandboxRepository(session, principal.tenant_id, principal.sandbox_id)


async def get_row(session: AsyncSession, principal: Principal, sandbox_id: str) -> SandboxRow:
    row = await repository(session, principal).get(sandbox_id)
    if row is None:
        raise NotFound(f"no sandbox {sandbox_id}")
    return row


async def get_row_scoped(
    session: AsyncSession,
    tenant_id: str,
    only_sandbox: str | None,
    sandbox_id: str,
    *,
    for_update: bool = False,
) -> SandboxRow:
    row = await SandboxRepository(session, tenant_id, only_sandbox).get(
        sandbox_id, for_update=for_update
    )
    if row is None:
        raise NotFound(f"no sandbox {sandbox_id}")
    return row


async def sandbox_metrics(
    db: Db, holder: RuntimeHolder, principal: Principal, sandbox_id: str
) -> SandboxMetrics:
    async with db() as session:
        row = await get_row(session, principal, sandbox_id)
    require_running(row)
    assert row.runtime_id is not None
    runtime = await holder.get()
    stats = await runtime.stats(row.runtime_id)
    return SandboxMetrics(
        sandbox_id=row.id,
        at=utcnow(),
        cpu_seconds=stats.cpu_seconds,
        memory_bytes=stats.memory_bytes,
        memory_limit_bytes=stats.memory_limit_bytes,
        processes=stats.processes,
        processes_limit=stats.processes_limit,
        writable_bytes=stats.writable_bytes,
        writable_limit_bytes=stats.writable_limit_bytes,
    )


class SandboxPaused(SandboxNotUsable):
    """A call that needs the sandbox running found it paused: it wakes it and tries again."""

    code, title = "sandbox_paused", "The sandbox is paused"


class SandboxResuming(SandboxPaused):
    """A call that needs the sandbox running found another call resuming it: it waits for that
    wake as for its own. Seen by a caller that does not wake, it is the 409 of any state that is
    not running."""

    code, title = SandboxNotUsable.code, SandboxNotUsable.title


def require_running(row: SandboxRow) -> None:
    """Execs and files need a running sandbox; anything else is a 409 that says why (a paused
    one is woken, and a resuming one waited for, by the callers that catch SandboxPaused)."""
    if row.state == State.RUNNING and row.runtime_id is not None:
        return
    if row.state == State.PAUSED:
        raise SandboxPaused(f"sandbox {row.id} is paused", extra={"state": row.state})
    if row.state == State.RESUMING:
        raise SandboxResuming(f"sandbox {row.id} is resuming", extra={"state": row.state})
    if row.state == State.FAILED:
        raise SandboxNotUsable(
            f"sandbox {row.id} failed: {row.failure_reason}",
            extra={"state": row.state, "reason": row.failure_reason},
        )
    raise SandboxNotUsable(f"sandbox {row.id} is {row.state}", extra={"state": row.state})


class DestinationNotAllowed(Forbidden):
    code, title = "destination_not_allowed", "The tenant may not reach this destination"


def refused(exc: InvalidSpec) -> AppError:
    """A 403 naming the entry for a destination the tenant may not reach (the document states
    each entry's form, so a well-formed one is refused only for where it leads); a 422 for a
    policy malformed as a whole."""
    if isinstance(exc, egress.PolicyRefused):
        return DestinationNotAllowed(str(exc), extra={"entry": exc.entry})
    return Unprocessable(str(exc))


def check_network(network: SandboxNetwork, quotas: Quotas) -> None:
    """422 for a malformed policy or a destination the tenant may not reach (egress.py: public
    addresses, and private ones only inside `network_private_cidrs`); 403 for `open` unless the
    operator allowed it. Host names are checked by `check_network_names`.

    The check of every birth, with the tenant's quotas as they are then: a create, a fork, a
    template's build or setup, a resume on another node. The operator may have taken `open` or
    a private range away since the policy was first accepted, and a runtime sandbox started
    from a snapshot is given the ranges granted now, not those the snapshot holds."""
    if network.allow and network.mode != "allowlist":
        raise Unprocessable(f"network mode {network.mode!r} takes no allow list")
    try:
        egress.check(network.allow, quotas.network_private_cidrs)
    except InvalidSpec as exc:
        raise refused(exc) from exc
    if network.mode == "open" and not quotas.network_open_allowed:
        raise Forbidden("open network is not enabled for this tenant")


async def check_network_names(
    network: SandboxNetwork, quotas: Quotas, resolver: egress.Resolver = egress.system_resolver
) -> None:
    """`check_network`, and the allowlist's host names resolved now: a name that resolves only
    to addresses the tenant may not reach is a 403 naming it; one that does not resolve now
    reaches nothing until it does. (The runtime resolves again whenever it applies the policy
    and keeps only the addresses the tenant may reach.)"""
    check_network(network, quotas)
    if not egress.has_names(network.allow):
        return
    try:
        await asyncio.to_thread(
            egress.check_names, network.allow, quotas.network_private_cidrs, resolver
        )
    except InvalidSpec as exc:
        raise refused(exc) from exc


async def record_failure(
    db: Db, tenant_id: str, sandbox_id: str, ctx: AuditContext, reason: str
) -> None:
    async with db() as session, session.begin():
        row = await SandboxRepository(session, tenant_id).get(sandbox_id, for_update=True)
        if row is not None:
            await fail_in(session, row, ctx, reason)


async def fail_in(session: AsyncSession, row: SandboxRow, ctx: AuditContext, reason: str) -> None:
    """`record_failure` of a row locked in the caller's transaction."""
    if row.state in (State.FAILED, State.STOPPED):
        return
    if row.state == State.STOPPING:
        await transition(session, row, State.STOPPED, reason)
    else:
        await transition(session, row, State.FAILED, reason)
    await record(
        session,
        ctx,
        chain=row.tenant_id,
        action="sandbox.fail",
        target=row.id,
        outcome="failed",
        details={"reason": reason[:500]},
    )


async def mark_failed(
    db: Db, tenant_id: str, sandbox_id: str, ctx: AuditContext, reason: str
) -> None:
    """The runtime reported the sandbox dead (for example `oom`)."""
    await record_failure(db, tenant_id, sandbox_id, ctx, reason)


async def list_sandboxes(
    session: AsyncSession,
    principal: Principal,
    *,
    limit: int,
    cursor: str | None,
    states: list[str],
    labels: dict[str, str],
) -> SandboxPage:
    unknown = set(states) - {s.value for s in State}
    if unknown:
        raise Unprocessable(f"unknown states: {', '.join(sorted(unknown))}")
    after = decode_cursor(cursor, str)
    rows = await repository(session, principal).list(
        limit=limit + 1,
        after_id=after,
        states=states,
        labels=labels,
    )
    items, next_cursor = page_of(rows, limit, key=lambda r: r.id)
    return SandboxPage(items=[to_schema(r) for r in items], next_cursor=next_cursor)


async def get_sandbox(session: AsyncSession, principal: Principal, sandbox_id: str) -> Sandbox:
    return to_schema(await get_row(session, principal, sandbox_id))


async def list_transitions(
    session: AsyncSession, principal: Principal, sandbox_id: str
) -> list[Transition]:
    await get_row(session, principal, sandbox_id)
    rows = await repository(session, principal).transitions(sandbox_id)
    return [
        Transition(from_state=r.from_state, to_state=r.to_state, reason=r.reason, at=r.at)
        for r in rows
    ]


async def delete_sandbox(
    db: Db, holder: RuntimeHolder, principal: Principal, ctx: AuditContext, sandbox_id: str
) -> None:
    assert principal.tenant_id is not None
    async with db() as session, session.begin():
        row = await repository(session, principal).get(sandbox_id, for_update=True)
        if row is None:
            raise NotFound(f"no sandbox {sandbox_id}")
        if row.state in (State.STOPPED, State.STOPPING):
            return
        failed = row.state == State.FAILED
        await record(
            session, ctx, chain=principal.tenant_id, action="sandbox.delete", target=row.id
        )
        await transition(session, row, State.STOPPING, "deleted")
        if row.runtime_id is None:
            # Still starting: the creating request finishes the delete once it has a handle.
            return
    try:
        runtime: SandboxRuntime | None = await holder.get()
    except ServiceUnavailable:
        if not failed:
            raise
        # A failed sandbox of a lost node, deleted through an API replica: no runtime here
        # can reach it, and that node destroys whatever is left of it when it registers
        # again (service.jobs.reconcile).
        runtime = None
    await stop_sandbox(db, runtime, sandbox_id, principal.tenant_id, reason="deleted")


async def stop_sandbox(
    db: Db, runtime: SandboxRuntime | None, sandbox_id: str, tenant_id: str, *, reason: str
) -> None:
    """Destroy the runtime side of a sandbox already marked `stopping` (unless there is no
    `runtime` that can reach it), then mark it stopped."""
    async with db() as session:
        row = await SandboxRepository(session, tenant_id).get(sandbox_id)
        runtime_id = row.runtime_id if row else None
    if runtime_id is not None and runtime is not None:
        await runtime.destroy(runtime_id)
    async with db() as session, session.begin():
        row = await SandboxRepository(session, tenant_id).get(sandbox_id, for_update=True)
        if row is not None and row.state == State.STOPPING:
            await transition(session, row, State.STOPPED, reason)

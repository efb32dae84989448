"""Sandbox lifecycle. No transaction is held across a runtime call: the intent is committed
first (`creating`, `stopping`), the runtime is called, and the outcome is recorded in a second
short transaction; the reconciler repairs rows a crash left in between."""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta

import msgspec
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.audit.recorder import AuditContext, record
from service.auth.principal import Principal
from service.db.base import utcnow
from service.db.models import Sandbox as SandboxRow
from service.db.models import Template, TemplateVersion, Tenant
from service.errors import (
    Conflict,
    Forbidden,
    IdempotencyKeyReused,
    NotFound,
    QuotaExceeded,
    SandboxNotUsable,
    Unprocessable,
)
from service.ids import new_id
from service.pagination import decode_cursor, page_of
from service.pool.service import WarmPool, label, try_claim
from service.runtime import SandboxRuntime, SandboxRuntimeError, SandboxSpec
from service.runtime.errors import InvalidSpec
from service.runtime.network import parse_allow
from service.runtime_holder import RuntimeHolder
from service.sandboxes.lifecycle import transition
from service.sandboxes.repository import SandboxRepository
from service.sandboxes.schemas import (
    PRESETS,
    SIZES,
    Preset,
    Sandbox,
    SandboxCreate,
    SandboxNetwork,
    SandboxPage,
    SandboxUpdate,
    Transition,
)
from service.sandboxes.states import State
from service.templates import starter
from service.templates.repository import TemplateRepository, ready_version
from service.tenants.schemas import Quotas
from service.tenants.service import quotas_of

log = logging.getLogger("airlock.sandboxes")

DEFAULT_IMAGE = "default"
Db = async_sessionmaker[AsyncSession]


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


def require_running(row: SandboxRow) -> None:
    """Execs and files need a running sandbox; anything else is a 409 that says why."""
    if row.state == State.RUNNING and row.runtime_id is not None:
        return
    if row.state == State.FAILED:
        raise SandboxNotUsable(
            f"sandbox {row.id} failed: {row.failure_reason}",
            extra={"state": row.state, "reason": row.failure_reason},
        )
    raise SandboxNotUsable(f"sandbox {row.id} is {row.state}", extra={"state": row.state})


def request_hash(data: msgspec.Struct) -> str:
    return hashlib.sha256(msgspec.json.encode(data)).hexdigest()


def check_network(network: SandboxNetwork, quotas: Quotas) -> None:
    """422 for a malformed policy, 403 for `open` unless the operator allowed it."""
    if network.allow and network.mode != "allowlist":
        raise Unprocessable(f"network mode {network.mode!r} takes no allow list")
    try:
        parse_allow(network.allow)
    except InvalidSpec as exc:
        raise Unprocessable(str(exc)) from exc
    if network.mode == "open" and not quotas.network_open_allowed:
        raise Forbidden("open network is not enabled for this tenant")


def _preset(data: SandboxCreate) -> Preset | None:
    return PRESETS[data.preset] if data.preset else None


def network_of(data: SandboxCreate) -> SandboxNetwork:
    if data.network is not None:
        return data.network
    return PRESETS[data.preset].network if data.preset else SandboxNetwork()


def _caps(data: SandboxCreate) -> tuple[str, int, int, int]:
    """Size name and caps: the size (small by default), or the preset's caps when no size is
    given, with explicit caps over either; "custom" when they match no size."""
    size = data.size or "small"
    cpus, memory, disk = SIZES[size]
    preset = _preset(data)
    from_preset = preset is not None and data.size is None
    if from_preset:
        assert preset is not None
        cpus, memory, disk = preset.cpus, preset.memory_mib, preset.disk_mib
    cpus = data.cpus if data.cpus is not None else cpus
    memory = data.memory_mib if data.memory_mib is not None else memory
    disk = data.disk_mib if data.disk_mib is not None else disk
    if (cpus, memory, disk) != SIZES[size]:
        same = [k for k, v in SIZES.items() if v == (cpus, memory, disk)]
        size = same[0] if same and from_preset else "custom"
    return size, cpus, memory, disk


async def _lock_tenant(session: AsyncSession, tenant_id: str) -> Tenant:
    # Serialises quota checks of one tenant across requests and replicas.
    tenant = await session.scalar(select(Tenant).where(Tenant.id == tenant_id).with_for_update())
    assert tenant is not None
    return tenant


async def _template_for(
    session: AsyncSession, tenant_id: str, data: SandboxCreate
) -> tuple[Template, TemplateVersion]:
    """The template a create names and its newest ready build; its size and caps are fixed
    by the build (the snapshot holds them), so a create may repeat them but not change them."""
    assert data.template is not None
    if data.image is not None:
        raise Unprocessable("give image or template, not both")
    template = await TemplateRepository(session, tenant_id).resolve(data.template)
    if template is None:
        raise NotFound(f"no template {data.template}")
    version = await ready_version(session, template.id)
    if version is None:
        raise Conflict(
            f"template {data.template} has no successful build yet",
            extra={"template": data.template},
        )
    caps = (version.cpus, version.memory_mib, version.disk_mib)
    asked = (data.cpus, data.memory_mib, data.disk_mib)
    if (data.size is not None and data.size != version.size) or any(
        a is not None and a != c for a, c in zip(asked, caps, strict=True)
    ):
        raise Unprocessable(
            f"template {data.template} is built for size {version.size}",
            extra={"size": version.size},
        )
    return template, version


async def create_sandbox(
    db: Db,
    holder: RuntimeHolder,
    principal: Principal,
    ctx: AuditContext,
    data: SandboxCreate,
    idempotency_key: str | None,
    pool: WarmPool | None = None,
) -> tuple[Sandbox, bool]:
    """Create and start a sandbox; returns it and whether this call created it.

    With a template: a member of its warm pool when one is free and within the tenant's fair
    share (no runtime call at all), else a start from its snapshot."""
    if principal.sandbox_id is not None:
        raise Forbidden("a token bound to a sandbox cannot create sandboxes")
    assert principal.tenant_id is not None
    runtime = await holder.get()  # no runtime: refuse before writing anything
    req_hash = request_hash(data)
    size, cpus, memory, disk = _caps(data)
    image = data.image or DEFAULT_IMAGE
    if data.template is None:
        await runtime.check_image(image)  # an unknown image writes nothing

    async with db() as session, session.begin():
        repo = repository(session, principal)
        if idempotency_key is not None:
            existing = await repo.get_by_idempotency_key(idempotency_key)
            if existing is not None:
                return _replayed(existing, req_hash), False
        template: Template | None = None
        recipe: starter.Recipe | None = None
        if data.template is not None:
            template, version = await _template_for(session, principal.tenant_id, data)
            recipe = starter.Recipe.of(version)
            size, cpus, memory, disk = (
                version.size,
                version.cpus,
                version.memory_mib,
                version.disk_mib,
            )
            image = version.image
        quotas = quotas_of(await _lock_tenant(session, principal.tenant_id))
        network = network_of(data)
        check_network(network, quotas)
        if template is not None and (network.mode != "none" or data.preset is not None):
            raise Unprocessable("sandboxes from templates take no network or preset for now")
        if data.ttl_s > quotas.max_sandbox_ttl_s:
            raise Unprocessable(
                f"ttl_s {data.ttl_s} exceeds this tenant's maximum of {quotas.max_sandbox_ttl_s}",
                extra={"max_ttl_s": quotas.max_sandbox_ttl_s},
            )
        count, used_cpus, used_memory = await repo.active_usage()
        if count + 1 > quotas.max_sandboxes:
            raise QuotaExceeded(
                f"the tenant has {count} of {quotas.max_sandboxes} sandboxes",
                retry_after_s=10,
                extra={"quota": "max_sandboxes", "limit": quotas.max_sandboxes},
            )
        if used_cpus + cpus > quotas.max_vcpus:
            raise QuotaExceeded(
                f"{cpus} more vCPUs would exceed the tenant's {quotas.max_vcpus}",
                retry_after_s=10,
                extra={"quota": "max_vcpus", "limit": quotas.max_vcpus, "in_use": used_cpus},
            )
        if used_memory + memory > quotas.max_memory_mib:
            raise QuotaExceeded(
                f"{memory} MiB more would exceed the tenant's {quotas.max_memory_mib} MiB",
                retry_after_s=10,
                extra={
                    "quota": "max_memory_mib",
                    "limit": quotas.max_memory_mib,
                    "in_use": used_memory,
                },
            )
        now = utcnow()
        row = SandboxRow(
            id=new_id("sbx"),
            tenant_id=principal.tenant_id,
            state=None,
            image=image,
            template=template.name if template else None,
            template_id=template.id if template else None,
            template_version=version.version if template else None,
            started_from=("snapshot" if version.snapshot_id else "image") if template else "image",
            size=size,
            cpus=cpus,
            memory_mib=memory,
            disk_mib=disk,
            network=msgspec.to_builtins(network),
            env=dict(data.env),
            labels=dict(data.labels),
            ttl_s=data.ttl_s,
            idempotency_key=idempotency_key,
            request_hash=req_hash,
            created_at=now,
            updated_at=now,
            expires_at=now + timedelta(seconds=data.ttl_s),
        )
        repo.add(row)
        try:
            await transition(session, row, State.CREATING)
        except IntegrityError:
            # The same Idempotency-Key raced in from a retry: answer as the first one did.
            await session.rollback()
            return await _after_race(db, principal, idempotency_key, req_hash)
        claim = None
        if template is not None and pool is not None:
            claim = await try_claim(
                session,
                pool,
                tenant_id=principal.tenant_id,
                template_id=template.id,
                template_label=label(template.name, template.owner),
                version_id=version.id,
                size=size,
                sandbox_id=row.id,
            )
        if claim is not None:
            # The member was started for nobody; the tenant's env, labels and TTL live in
            # this row (execs merge the row's env), so nothing needs the runtime now.
            row.runtime_id, row.runtime, row.started_from = claim.runtime_id, claim.runtime, "pool"
            await transition(session, row, State.RUNNING, "claimed from the warm pool")
        await record(
            session,
            ctx,
            chain=principal.tenant_id,
            action="sandbox.create",
            target=row.id,
            details={
                "image": image,
                "size": size,
                "cpus": cpus,
                "memory_mib": memory,
                "disk_mib": disk,
                "ttl_s": data.ttl_s,
                "network": row.network,
                "preset": data.preset,
                "labels": row.labels,
                "env_names": sorted(row.env),
                "template": row.template,
                "template_version": row.template_version,
                "started_from": row.started_from,
            },
        )
        sandbox_id = row.id
        if claim is not None:
            return to_schema(row), True

    spec = SandboxSpec(
        vcpus=float(cpus),
        memory_mib=memory,
        disk_mib=disk,
        env=dict(data.env),
        labels=data.labels,
        network=network.mode,
        network_allow=list(network.allow),
        **({"pids": preset.pids, "user": preset.user} if (preset := _preset(data)) else {}),
    )
    try:
        if recipe is not None:
            info = await starter.start(runtime, recipe)
        else:
            info = await runtime.create(image, spec)
    except SandboxRuntimeError as exc:
        await _record_failure(db, principal.tenant_id, sandbox_id, ctx, f"create failed: {exc}")
        raise
    except starter.SetupFailed as exc:
        # A template without a snapshot runs its setup in each new sandbox; it failed here.
        await _record_failure(db, principal.tenant_id, sandbox_id, ctx, f"template {exc}")
        raise Conflict(f"the template's {exc} in this sandbox") from exc
    return await _finish_create(
        db, runtime, principal, ctx, sandbox_id, info.id, info.runtime
    ), True


def _replayed(existing: SandboxRow, request_hash: str) -> Sandbox:
    if existing.request_hash != request_hash:
        raise IdempotencyKeyReused()
    return to_schema(existing)


async def _after_race(
    db: Db, principal: Principal, key: str | None, request_hash: str
) -> tuple[Sandbox, bool]:
    if key is None:
        raise Conflict("the sandbox could not be recorded; retry")
    async with db() as session:
        existing = await repository(session, principal).get_by_idempotency_key(key)
    if existing is None:
        raise Conflict("the sandbox could not be recorded; retry")
    return _replayed(existing, request_hash), False


async def _finish_create(
    db: Db,
    runtime: SandboxRuntime,
    principal: Principal,
    ctx: AuditContext,
    sandbox_id: str,
    runtime_id: str,
    runtime_name: str,
) -> Sandbox:
    destroy_now = False
    async with db() as session, session.begin():
        row = await repository(session, principal).get(sandbox_id, for_update=True)
        assert row is not None
        row.runtime_id, row.runtime = runtime_id, runtime_name
        if row.state == State.CREATING:
            await transition(session, row, State.RUNNING)
        elif row.state == State.STOPPING:
            # Deleted while it was starting: finish the delete now that there is something.
            destroy_now = True
        result = to_schema(row)
    if destroy_now:
        assert principal.tenant_id is not None
        await stop_sandbox(db, runtime, sandbox_id, principal.tenant_id, reason="deleted")
        async with db() as session:
            result = to_schema(await get_row(session, principal, sandbox_id))
    return result


async def _record_failure(
    db: Db, tenant_id: str, sandbox_id: str, ctx: AuditContext, reason: str
) -> None:
    async with db() as session, session.begin():
        row = await SandboxRepository(session, tenant_id).get(sandbox_id, for_update=True)
        if row is None or row.state in (State.FAILED, State.STOPPED):
            return
        if row.state == State.STOPPING:
            await transition(session, row, State.STOPPED, reason)
        else:
            await transition(session, row, State.FAILED, reason)
        await record(
            session,
            ctx,
            chain=tenant_id,
            action="sandbox.fail",
            target=sandbox_id,
            outcome="failed",
            details={"reason": reason[:500]},
        )


async def mark_failed(
    db: Db, tenant_id: str, sandbox_id: str, ctx: AuditContext, reason: str
) -> None:
    """The runtime reported the sandbox dead (for example `oom`)."""
    await _record_failure(db, tenant_id, sandbox_id, ctx, reason)


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
    after = decode_cursor(cursor, "sandboxes", str)
    rows = await repository(session, principal).list(
        limit=limit + 1,
        after_id=after,
        states=states,
        labels=labels,
    )
    items, next_cursor = page_of(rows, limit, "sandboxes", key=lambda r: r.id)
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
        _check_update(row, quotas_of(tenant), data)
        runtime_id = row.runtime_id
    if data.network is not None:
        await _change_network(holder, runtime_id, data.network)
    async with db() as session, session.begin():
        row = await get_row_scoped(
            session, principal.tenant_id, principal.sandbox_id, sandbox_id, for_update=True
        )
        if data.ttl_s is not None:
            if row.state not in (State.CREATING, State.RUNNING):
                raise Conflict(f"a {row.state} sandbox has no TTL to extend")
            await _extend_ttl(session, ctx, principal.tenant_id, row, data.ttl_s)
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
    if data.ttl_s is not None:
        if row.state not in (State.CREATING, State.RUNNING):
            raise Conflict(f"a {row.state} sandbox has no TTL to extend")
        if data.ttl_s > quotas.max_sandbox_ttl_s:
            raise Unprocessable(
                f"ttl_s {data.ttl_s} exceeds this tenant's maximum of {quotas.max_sandbox_ttl_s}",
                extra={"max_ttl_s": quotas.max_sandbox_ttl_s},
            )
    if data.network is not None:
        check_network(data.network, quotas)
        require_running(row)
        if row.network.get("mode", "none") == "none" or data.network.mode == "none":
            raise Unprocessable(
                "a sandbox's network can change between 'allowlist' and 'open' only; "
                "create the sandbox with a network to change it later"
            )


async def _change_network(
    holder: RuntimeHolder, runtime_id: str | None, network: SandboxNetwork
) -> None:
    assert runtime_id is not None
    runtime = await holder.get()
    update = getattr(runtime, "update_network", None)
    if update is None:
        raise Unprocessable(f"the {runtime.name} runtime cannot change a sandbox's network")
    try:
        await update(runtime_id, network.mode, list(network.allow))
    except InvalidSpec as exc:
        raise Unprocessable(str(exc)) from exc


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
        await record(
            session, ctx, chain=principal.tenant_id, action="sandbox.delete", target=row.id
        )
        await transition(session, row, State.STOPPING, "deleted")
        if row.runtime_id is None:
            # Still starting: the creating request finishes the delete once it has a handle.
            return
    await stop_sandbox(db, await holder.get(), sandbox_id, principal.tenant_id, reason="deleted")


async def stop_sandbox(
    db: Db, runtime: SandboxRuntime, sandbox_id: str, tenant_id: str, *, reason: str
) -> None:
    """Destroy the runtime side of a sandbox already marked `stopping`, then mark it stopped."""
    async with db() as session:
        row = await SandboxRepository(session, tenant_id).get(sandbox_id)
        runtime_id = row.runtime_id if row else None
    if runtime_id is not None:
        await runtime.destroy(runtime_id)
    async with db() as session, session.begin():
        row = await SandboxRepository(session, tenant_id).get(sandbox_id, for_update=True)
        if row is not None and row.state == State.STOPPING:
            await transition(session, row, State.STOPPED, reason)

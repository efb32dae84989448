"""Creating a sandbox: from an image, a template's snapshot or its warm pool.

The intent is committed first (`creating`), the runtime is called with no transaction open, and
the outcome is recorded in a second short transaction."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError

from service import telemetry
from service.audit.recorder import AuditContext, record
from service.auth.principal import Principal
from service.db.base import utcnow
from service.db.models import Sandbox as SandboxRow
from service.db.models import Template, Tenant
from service.errors import (
    Conflict,
    Forbidden,
    IdempotencyKeyReused,
    Unprocessable,
)
from service.nodes.local import LocalNode
from service.pool import claim as pool_claim
from service.pool.service import WarmPool, label, try_claim
from service.runtime import SandboxRuntime, SandboxRuntimeError, SandboxSpec
from service.runtime.holder import RuntimeHolder
from service.sandboxes import births, service
from service.sandboxes.births import RequestKey, TemplateRef, request_hash
from service.sandboxes.lifecycle import transition
from service.sandboxes.quotas import Caps, check_quotas, idle_timeout
from service.sandboxes.schemas import (
    Sandbox,
    SandboxCreate,
    SandboxNetwork,
)
from service.sandboxes.service import (
    Db,
    check_network,
    get_row,
    repository,
    stop_sandbox,
    to_schema,
)
from service.sandboxes.sizes import caps_of, network_of, preset_of
from service.sandboxes.states import State
from service.templates import starter
from service.templates.repository import template_for
from service.tenants.repository import lock_tenant
from service.tenants.service import quotas_of

DEFAULT_IMAGE = "default"


async def create_sandbox(
    db: Db,
    holder: RuntimeHolder,
    principal: Principal,
    ctx: AuditContext,
    data: SandboxCreate,
    idempotency_key: str | None,
    pool: WarmPool | None = None,
    *,
    node: LocalNode,
) -> tuple[Sandbox, bool]:
    """Create and start a sandbox; returns it and whether this call created it.

    With a template: a member of its warm pool when one is free and within the tenant's fair
    share (no runtime call at all), else a start from its snapshot."""
    if principal.sandbox_id is not None:
        raise Forbidden("a token bound to a sandbox cannot create sandboxes")
    assert principal.tenant_id is not None
    runtime = await holder.get()  # no runtime: refuse before writing anything
    req_hash = request_hash(data)
    size, cpus, memory, disk = caps_of(data)
    image = data.image or DEFAULT_IMAGE
    await _check_names(db, principal.tenant_id, network_of(data))
    if data.template is None:
        await runtime.check_image(image)  # an unknown image writes nothing
    elif pool is not None:
        row = await pool_claim.claim(
            db.kw["bind"],
            pool,
            principal.tenant_id,
            ctx,
            data,
            idempotency_key,
            req_hash,
            network_of(data),
        )
        if row is not None:
            return to_schema(row), True

    async with db() as session, session.begin():
        repo = repository(session, principal)
        if idempotency_key is not None:
            existing = await repo.get_by_idempotency_key(idempotency_key)
            if existing is not None:
                return _replayed(existing, req_hash), False
        template: Template | None = None
        recipe: starter.Recipe | None = None
        if data.template is not None:
            template, version = await template_for(session, principal.tenant_id, data)
            recipe = starter.Recipe.of(version)
            size, cpus, memory, disk = (
                version.size,
                version.cpus,
                version.memory_mib,
                version.disk_mib,
            )
            image = version.image
        quotas = quotas_of(await lock_tenant(session, principal.tenant_id))
        network = network_of(data)
        check_network(network, quotas)
        if template is not None and recipe is not None:
            # Its own template's setup, when it runs here, runs under the tenant's rules now.
            own = template.owner == principal.tenant_id
            starter.check_policy(recipe, quotas if own else None)
        if template is not None and data.preset is not None:
            raise Unprocessable("sandboxes from templates take no preset: the build fixes caps")
        caps = Caps(cpus, memory, disk)
        check_quotas(quotas, data.ttl_s, await repo.active_usage(), caps)
        await node.check_room(session, (float(cpus), memory, disk))
        now = utcnow()
        row = births.new_row(
            principal.tenant_id,
            data,
            image=image,
            size=size,
            caps=caps,
            network=network,
            template=TemplateRef(template.name, template.id, version.version) if template else None,
            started_from=("snapshot" if version.snapshot_id else "image") if template else "image",
            request=RequestKey(idempotency_key, req_hash),
            now=now,
            node_id=node.id,
        )
        row.idle_timeout_s = idle_timeout(quotas, data.idle_timeout_s)
        repo.add(row)
        try:
            await transition(session, row, State.CREATING)
        except IntegrityError:
            # The same Idempotency-Key raced in from a retry: answer as the first one did.
            await session.rollback()
            return await _after_race(db, principal, idempotency_key, req_hash)
        claim = None
        if template is not None and pool is not None and network.mode == "none":
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
            details=births.create_details(row, data.preset),
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
        network_private=list(quotas.network_private_cidrs),
        **({"pids": preset.pids, "user": preset.user} if (preset := preset_of(data)) else {}),
    )
    attributes = {"airlock.sandbox_id": sandbox_id, "airlock.runtime": runtime.name}
    try:
        with telemetry.span("airlock.sandbox.start", attributes):
            if recipe is not None:
                recipe = starter.with_grants(recipe, quotas.network_private_cidrs)
                info = await starter.start(runtime, recipe, (network.mode, tuple(network.allow)))
            else:
                info = await runtime.create(image, spec)
    except SandboxRuntimeError as exc:
        await service.record_failure(
            db, principal.tenant_id, sandbox_id, ctx, f"create failed: {exc.public()}"
        )
        raise
    except starter.SetupFailed as exc:
        # A template without a snapshot runs its setup in each new sandbox; it failed here.
        await service.record_failure(db, principal.tenant_id, sandbox_id, ctx, f"template {exc}")
        raise Conflict(f"the template's {exc} in this sandbox") from exc
    except Exception as exc:
        # Anything else (a fault of this host) still leaves a record that says the sandbox
        # failed, never one starting for ever; the caller gets the 500 with its request id.
        await service.record_failure(
            db,
            principal.tenant_id,
            sandbox_id,
            ctx,
            f"create failed: internal error ({type(exc).__name__})",
        )
        raise
    return await finish_create(db, runtime, principal, ctx, sandbox_id, info.id, info.runtime), True


async def _check_names(db: Db, tenant_id: str, network: SandboxNetwork) -> None:
    """Host names in the allowlist are resolved before anything is written (no transaction
    waits on DNS): one that cannot be reached is a 422, not a failed sandbox."""
    if network.mode != "allowlist" or not network.allow:
        return
    async with db() as session:
        tenant = await session.get(Tenant, tenant_id)
        assert tenant is not None
        quotas = quotas_of(tenant)
    await service.check_network_names(network, quotas)


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


async def finish_create(
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

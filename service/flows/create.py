"""Creating a sandbox: from an image, a template's snapshot or its warm pool.

The intent is committed first (`creating`), the runtime is called with no transaction open, and
the outcome is recorded in a second short transaction."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from service import telemetry
from service.audit.recorder import AuditContext, record
from service.auth.principal import Principal
from service.db.base import utcnow
from service.db.models import Sandbox as SandboxRow
from service.db.models import Template, TemplateVersion, Tenant
from service.errors import (
    Conflict,
    Forbidden,
    IdempotencyKeyReused,
    Unprocessable,
)
from service.nodes.local import LocalNode
from service.pool import claim as pool_claim
from service.pool.claiming import ClaimAsk
from service.pool.service import WarmPool, try_claim
from service.runtime import SandboxInfo, SandboxRuntime, SandboxRuntimeError, SandboxSpec
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
from service.tenants.schemas import Quotas
from service.tenants.service import quotas_of

DEFAULT_IMAGE = "default"


@dataclass(frozen=True, slots=True)
class SandboxStart:
    """What a new sandbox starts from: an image at a size, or a template's build (whose image,
    size and caps the build fixes) and the recipe that starts it."""

    image: str
    size: str
    caps: Caps
    template: Template | None = None
    build: TemplateVersion | None = None
    recipe: starter.Recipe | None = None

    @classmethod
    def of_request(cls, data: SandboxCreate) -> SandboxStart:
        """The image and size (or preset, or caps) the request names."""
        size, cpus, memory, disk = caps_of(data)
        return cls(data.image or DEFAULT_IMAGE, size, Caps(cpus, memory, disk))

    @classmethod
    def of_build(cls, template: Template, build: TemplateVersion) -> SandboxStart:
        caps = Caps(build.cpus, build.memory_mib, build.disk_mib)
        return cls(build.image, build.size, caps, template, build, starter.Recipe.of(build))

    def template_ref(self) -> TemplateRef | None:
        if self.template is None or self.build is None:
            return None
        return TemplateRef(self.template.name, self.template.id, self.build.version)

    def started_from(self) -> str:
        if self.build is None:
            return "image"
        return "snapshot" if self.build.snapshot_id else "image"


@dataclass(frozen=True, slots=True)
class _Asked:
    """One create call: who asks, for what, and what replays it."""

    principal: Principal
    tenant_id: str
    ctx: AuditContext
    data: SandboxCreate
    request: RequestKey


@dataclass(frozen=True, slots=True)
class _Intent:
    """A sandbox recorded as `creating`, for the runtime to start."""

    sandbox_id: str
    start: SandboxStart
    network: SandboxNetwork
    # The private ranges granted to the tenant now (what its sandbox's rules are built from).
    private: list[str]


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
    asked = _Asked(
        principal, principal.tenant_id, ctx, data, RequestKey(idempotency_key, request_hash(data))
    )
    plain = SandboxStart.of_request(data)
    await _check_names(db, asked.tenant_id, network_of(data))
    if data.template is None:
        await runtime.check_image(plain.image)  # an unknown image writes nothing
    elif pool is not None:
        claim_ask = ClaimAsk(asked.tenant_id, data, ctx, asked.request)
        row = await pool_claim.claim(db.kw["bind"], pool, claim_ask)
        if row is not None:
            return to_schema(row), True
    intended = await _intend(db, asked, plain, pool, node)
    if not isinstance(intended, _Intent):
        return intended  # replayed, or claimed from the warm pool
    return await _start(db, runtime, asked, intended), True


async def _intend(
    db: Db, asked: _Asked, plain: SandboxStart, pool: WarmPool | None, node: LocalNode
) -> tuple[Sandbox, bool] | _Intent:
    """Record the intent (`creating`) once the tenant's rules, quotas and this node's room
    allow it, in one transaction that also claims a free warm pool member when there is one
    (the sandbox then runs already). The answer instead when the request replays an earlier
    one (its Idempotency-Key) or the member was claimed."""
    async with db() as session, session.begin():
        repo = repository(session, asked.principal)
        key = asked.request.idempotency_key
        if key is not None:
            existing = await repo.get_by_idempotency_key(key)
            if existing is not None:
                return _replayed(existing, asked.request.request_hash), False
        start = await _what_starts(session, asked, plain)
        quotas, network = await _allowed(session, asked, start, node)
        row = _new_row(asked, start, network, quotas, node)
        repo.add(row)
        try:
            await transition(session, row, State.CREATING)
        except IntegrityError:
            # The same Idempotency-Key raced in from a retry: answer as the first one did.
            await session.rollback()
            return await _after_race(db, asked.principal, key, asked.request.request_hash)
        claimed = False
        if pool is not None and network.mode == "none":
            claimed = await _claim_member(session, pool, start, row)
        details = births.create_details(row, asked.data.preset)
        await record(
            session, asked.ctx, chain=asked.tenant_id, action="sandbox.create", target=row.id,
            details=details,
        )  # fmt: skip
        if claimed:
            return to_schema(row), True
        return _Intent(row.id, start, network, list(quotas.network_private_cidrs))


async def _what_starts(session: AsyncSession, asked: _Asked, plain: SandboxStart) -> SandboxStart:
    """The request's own image and size, or its template's newest ready build."""
    if asked.data.template is None:
        return plain
    return SandboxStart.of_build(*await template_for(session, asked.tenant_id, asked.data))


async def _allowed(
    session: AsyncSession, asked: _Asked, start: SandboxStart, node: LocalNode
) -> tuple[Quotas, SandboxNetwork]:
    """The tenant's quotas (its row locked, so its creates count one after another) and the
    sandbox's network, once its rules, quotas and this node's room allow the start."""
    quotas = quotas_of(await lock_tenant(session, asked.tenant_id))
    network = network_of(asked.data)
    check_network(network, quotas)
    if start.template is not None and start.recipe is not None:
        # Its own template's setup, when it runs here, runs under the tenant's rules now.
        own = start.template.owner == asked.tenant_id
        starter.check_policy(start.recipe, quotas if own else None)
    if start.template is not None and asked.data.preset is not None:
        raise Unprocessable("sandboxes from templates take no preset: the build fixes caps")
    usage = await repository(session, asked.principal).active_usage()
    check_quotas(quotas, asked.data.ttl_s, usage, start.caps)
    cpus, memory, disk = start.caps
    await node.check_room(session, (float(cpus), memory, disk))
    return quotas, network


def _new_row(
    asked: _Asked, start: SandboxStart, network: SandboxNetwork, quotas: Quotas, node: LocalNode
) -> SandboxRow:
    row = births.new_row(
        asked.tenant_id, asked.data, image=start.image, size=start.size, caps=start.caps,
        network=network, template=start.template_ref(), started_from=start.started_from(),
        request=asked.request, now=utcnow(), node_id=node.id,
    )  # fmt: skip
    row.idle_timeout_s = idle_timeout(quotas, asked.data.idle_timeout_s)
    return row


async def _claim_member(
    session: AsyncSession, pool: WarmPool, start: SandboxStart, row: SandboxRow
) -> bool:
    """In the intent's transaction: whether a free member of the template's warm pool is now
    this sandbox. The member was started for nobody; the tenant's env, labels and TTL live in
    this row (execs merge the row's env), so nothing needs the runtime now."""
    if start.template is None or start.build is None:
        return False
    claim = await try_claim(session, pool, row, start.template, start.build)
    if claim is None:
        return False
    row.runtime_id, row.runtime, row.started_from = claim.runtime_id, claim.runtime, "pool"
    await transition(session, row, State.RUNNING, "claimed from the warm pool")
    return True


async def _start(db: Db, runtime: SandboxRuntime, asked: _Asked, intent: _Intent) -> Sandbox:
    """Start the recorded sandbox on the runtime, with no transaction open; a start that
    fails leaves a record that says so, never one starting for ever."""
    sandbox_id = intent.sandbox_id
    failed = functools.partial(service.record_failure, db, asked.tenant_id, sandbox_id, asked.ctx)
    attributes = {"airlock.sandbox_id": sandbox_id, "airlock.runtime": runtime.name}
    try:
        with telemetry.span("airlock.sandbox.start", attributes):
            info = await _run(runtime, asked.data, intent)
    except SandboxRuntimeError as exc:
        await failed(f"create failed: {exc.public()}")
        raise
    except starter.SetupFailed as exc:
        # A template without a snapshot runs its setup in each new sandbox; it failed here.
        await failed(f"template {exc}")
        raise Conflict(f"the template's {exc} in this sandbox") from exc
    except Exception as exc:
        # Anything else (a fault of this host) still leaves a record that says the sandbox
        # failed; the caller gets the 500 with its request id.
        await failed(f"create failed: internal error ({type(exc).__name__})")
        raise
    principal, ctx = asked.principal, asked.ctx
    return await finish_create(db, runtime, principal, ctx, sandbox_id, info.id, info.runtime)


async def _run(runtime: SandboxRuntime, data: SandboxCreate, intent: _Intent) -> SandboxInfo:
    """The runtime sandbox: a template's build started by its recipe, or the image."""
    network, start = intent.network, intent.start
    if start.recipe is not None:
        recipe = starter.with_grants(start.recipe, intent.private)
        return await starter.start(runtime, recipe, (network.mode, tuple(network.allow)))
    spec = SandboxSpec(
        vcpus=float(start.caps.cpus),
        memory_mib=start.caps.memory_mib,
        disk_mib=start.caps.disk_mib,
        env=dict(data.env),
        labels=data.labels,
        network=network.mode,
        network_allow=list(network.allow),
        network_private=list(intent.private),
        **({"pids": preset.pids, "user": preset.user} if (preset := preset_of(data)) else {}),
    )
    return await runtime.create(start.image, spec)


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

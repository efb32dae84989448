"""Templates: a name, and versions built as jobs (`service.jobs.templates`).

A POST with a new name makes version 1; with an existing name, the next version. Tenants see
their own templates and the operator's (shared); their own win when names clash.
"""

from __future__ import annotations

import logging

import msgspec
from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import OPERATOR_CHAIN, AuditContext, record
from service.auth.principal import Principal
from service.db.base import utcnow
from service.db.models import Sandbox as SandboxRow
from service.db.models import Template as TemplateRow
from service.db.models import TemplateVersion, Tenant
from service.db.session import Db
from service.errors import Conflict, Forbidden, NotFound, SandboxNotUsable, Unprocessable
from service.ids import new_id
from service.nodes import cleanup
from service.nodes.credentials import NodeCredentials
from service.runtime.egress import OPERATOR_GRANTS
from service.runtime.holder import RuntimeHolder
from service.sandboxes.queues import check_queued
from service.sandboxes.schemas import SIZES, NetworkPolicy
from service.sandboxes.service import check_network_names, get_row_scoped
from service.sandboxes.states import State
from service.templates.repository import OPERATOR_OWNER, TemplateRepository
from service.templates.schemas import Template, TemplateCreate, TemplatePage
from service.templates.schemas import TemplateVersion as VersionView
from service.tenants.repository import lock_tenant
from service.tenants.schemas import Quotas
from service.tenants.service import quotas_of

log = logging.getLogger("airlock.templates")


def owner_of(principal: Principal) -> str:
    if principal.is_operator:
        return OPERATOR_OWNER
    assert principal.tenant_id is not None
    return principal.tenant_id


def chain_of(owner: str) -> str:
    return OPERATOR_CHAIN if owner == OPERATOR_OWNER else owner


def version_view(row: TemplateVersion) -> VersionView:
    mode = None
    if row.state == "ready":
        mode = "snapshot" if row.snapshot_id else "image"
    return VersionView(
        version=row.version,
        state=row.state,  # type: ignore[arg-type]
        image=row.image,
        setup=row.setup,
        size=row.size,
        env=row.env,
        network=msgspec.convert(row.network, NetworkPolicy),
        start_mode=mode,  # type: ignore[arg-type]
        snapshot_bytes=row.snapshot_bytes,
        build_log=row.build_log,
        error=row.error,
        created_at=row.created_at,
        started_at=row.started_at,
        finished_at=row.finished_at,
        from_sandbox=row.source_sandbox_id,
    )


def to_schema(
    row: TemplateRow, versions: list[TemplateVersion], *, detailed: bool = True
) -> Template:
    latest = versions[0]
    ready = next((v for v in versions if v.state == "ready"), None)
    return Template(
        id=row.id,
        name=row.name,
        shared=row.owner == OPERATOR_OWNER,
        state=latest.state,  # type: ignore[arg-type]
        version=ready.version if ready else None,
        latest_version=row.latest_version,
        snapshot_bytes=ready.snapshot_bytes if ready else None,
        created_at=row.created_at,
        updated_at=row.updated_at,
        versions=[version_view(v) for v in versions] if detailed else None,
    )


async def _check_network(session: AsyncSession, owner: str, network: NetworkPolicy) -> None:
    """The sandbox rules: 422 for a malformed policy or a destination the owner may not reach
    (host names resolved now); `open` only for a tenant the operator allowed it (the operator's
    own templates may use it, and any private range: the operator is who grants them)."""
    if owner == OPERATOR_OWNER:
        operator = Quotas(network_open_allowed=True, network_private_cidrs=[*OPERATOR_GRANTS])
        await check_network_names(network, operator)
        return
    tenant = await session.get(Tenant, owner)
    assert tenant is not None
    await check_network_names(network, quotas_of(tenant))


async def _queue_limit(session: AsyncSession, owner: str) -> int:
    """The owner's cap on queued builds, its tenant locked so that the count taken after
    this and the insert are one step."""
    if owner == OPERATOR_OWNER:
        return Quotas().max_queued_builds
    return quotas_of(await lock_tenant(session, owner)).max_queued_builds


async def create_template(
    session: AsyncSession, principal: Principal, ctx: AuditContext, data: TemplateCreate
) -> Template:
    owner = owner_of(principal)
    source = await _source_sandbox(session, principal, data) if data.from_sandbox else None
    # A version made from a sandbox takes the sandbox's network: the tenant's rules now apply
    # to it as to one asked for by name.
    network = msgspec.convert(source.network, NetworkPolicy) if source else data.network
    await _check_network(session, owner, network)
    repo = TemplateRepository(session, owner)
    now = utcnow()
    # The builder has one slot for everyone: no owner may fill its queue.
    limit = await _queue_limit(session, owner)
    queued = await session.scalar(
        select(func.count(TemplateVersion.id))
        .join(TemplateRow, TemplateRow.id == TemplateVersion.template_id)
        .where(TemplateRow.owner == owner, TemplateVersion.state == "queued")
    )
    check_queued("max_queued_builds", limit, queued or 0)
    row = await repo.own(data.name, for_update=True)
    if row is None:
        row = TemplateRow(
            id=new_id("tpl"),
            owner=owner,
            name=data.name,
            latest_version=1,
            created_at=now,
            updated_at=now,
        )
        session.add(row)
        try:
            async with session.begin_nested():
                await session.flush()
        except IntegrityError as exc:
            raise Conflict(f"template {data.name} is being created by another request") from exc
    else:
        row.latest_version += 1
        row.updated_at = now
    cpus, memory, disk = SIZES[data.size]
    version = TemplateVersion(
        id=new_id("tpv"),
        template_id=row.id,
        version=row.latest_version,
        state="queued",
        image=data.image,
        setup=[list(step) for step in data.setup],
        size=data.size,
        cpus=cpus,
        memory_mib=memory,
        disk_mib=disk,
        env=dict(data.env),
        network=msgspec.to_builtins(data.network),
        attempts=0,
        build_log="",
        created_at=now,
    )
    if source is not None:
        version.image, version.size, version.env, version.network = (
            source.image,
            source.size,
            dict(source.env),
            dict(source.network),
        )
        version.cpus, version.memory_mib, version.disk_mib = (
            source.cpus,
            source.memory_mib,
            source.disk_mib,
        )
        version.source_sandbox_id = source.id
    session.add(version)
    await session.flush()
    await record(
        session,
        ctx,
        chain=chain_of(owner),
        action="template.create",
        target=row.id,
        details={
            "name": data.name,
            "version": version.version,
            "image": data.image,
            "size": data.size,
            "setup_steps": len(data.setup),
            "env_names": sorted(version.env),
            "network": version.network,
            "from_sandbox": version.source_sandbox_id,
        },
    )
    return to_schema(row, await repo.versions(row.id))


async def _source_sandbox(
    session: AsyncSession, principal: Principal, data: TemplateCreate
) -> SandboxRow:
    """The tenant's sandbox a version is made from: running or paused (a paused one is woken
    by the build). It brings the image, size, env and network, so the request names none."""
    if principal.tenant_id is None:
        raise Unprocessable("the operator has no sandboxes to make a template from")
    default = TemplateCreate(name=data.name)
    named = [
        field
        for field in ("image", "setup", "size", "env", "network")
        if getattr(data, field) != getattr(default, field)
    ]
    if named:
        raise Unprocessable(
            f"a template from a sandbox takes its {', '.join(named)} from the sandbox",
            extra={"fields": named},
        )
    assert data.from_sandbox is not None
    row = await get_row_scoped(
        session, principal.tenant_id, principal.sandbox_id, data.from_sandbox
    )
    if row.state not in (State.RUNNING, State.PAUSED):
        raise SandboxNotUsable(f"sandbox {row.id} is {row.state}", extra={"state": row.state})
    return row


async def get_row(session: AsyncSession, principal: Principal, name: str) -> TemplateRow:
    row = await TemplateRepository(session, owner_of(principal)).resolve(name)
    if row is None:
        raise NotFound(f"no template {name}")
    return row


async def get_template(session: AsyncSession, principal: Principal, name: str) -> Template:
    row = await get_row(session, principal, name)
    return to_schema(row, await TemplateRepository(session, row.owner).versions(row.id))


async def list_templates(session: AsyncSession, principal: Principal) -> TemplatePage:
    repo = TemplateRepository(session, owner_of(principal))
    items = []
    for row in await repo.list():
        items.append(to_schema(row, await repo.versions(row.id), detailed=False))
    return TemplatePage(items=items)


async def delete_template(
    db: Db,
    holder: RuntimeHolder,
    principal: Principal,
    ctx: AuditContext,
    name: str,
    *,
    force: bool,
    credentials: NodeCredentials,
    local_node: str | None,
) -> None:
    """Refused (409) while sandboxes or pool members use it, unless forced. Sandboxes already
    started from it keep running; its pool members and snapshots are removed (on every node
    that holds them)."""
    owner = owner_of(principal)
    async with db() as session, session.begin():
        repo = TemplateRepository(session, owner)
        row = await repo.own(name, for_update=True)
        if row is None:
            if await repo.resolve(name) is not None:
                raise Forbidden(f"template {name} is shared by the operator; only it can delete it")
            raise NotFound(f"no template {name}")
        sandboxes, members = await repo.in_use(row.id)
        if (sandboxes or members) and not force:
            raise Conflict(
                f"template {name} is used by {sandboxes} sandboxes and {members} pool members; "
                "delete with ?force=true to remove it anyway",
                extra={"sandboxes": sandboxes, "pool_members": members},
            )
        leftovers = await cleanup.gather(session, row.id, local_node)
        await record(
            session,
            ctx,
            chain=chain_of(owner),
            action="template.delete",
            target=row.id,
            details={
                "name": name,
                "force": force,
                "sandboxes": sandboxes,
                "pool_members": members,
            },
        )
        await session.execute(delete(TemplateRow).where(TemplateRow.id == row.id))
    # Its pool members and snapshot copies, destroyed by the nodes that hold them.
    await cleanup.clean(db, holder, credentials, local_node, leftovers)

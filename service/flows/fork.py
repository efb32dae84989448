"""Fork: a new sandbox started from a live snapshot of a running one, on the same node.

The child has the parent's image, template, caps, network policy, environment and labels, and
everything the parent had in memory and on its writable mounts at that moment; from then on the
two diverge. Like a warm pool member it gets its own identity (id, hostname, network slot) and
fresh randomness from the host (on gVisor the restored kernel reseeds). The snapshot is deleted
once the child runs. The parent keeps running; a paused parent is woken first.

Running processes are in the child, background ones and those of the parent's running execs
alike; the execs themselves stay the parent's (in the child their processes run on, detached).
The snapshot is taken before anything is written: a fork the runtime refuses (it names what
it could not keep) leaves no child behind.

A fork is a birth: the parent's network policy must still be one the tenant may have (the
operator may have taken `open` or a private range away since the parent was made), and the
child's rules are built from the ranges granted now, not from those the snapshot holds.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.recorder import AuditContext, record
from service.auth.principal import Principal
from service.db.base import utcnow
from service.db.models import Sandbox as SandboxRow
from service.errors import Forbidden
from service.execs.sandbox_secrets import SandboxSecrets
from service.flows.create import finish_create
from service.flows.pause import PauseUnsupported, SandboxBusyConflict
from service.nodes.local import LocalNode
from service.runtime import SandboxBusy, SandboxInfo, SandboxRuntime, SandboxRuntimeError
from service.runtime.holder import RuntimeHolder
from service.runtime.types import SnapshotInfo
from service.sandboxes import births, service
from service.sandboxes.lifecycle import transition
from service.sandboxes.quotas import Caps, check_quotas, idle_timeout
from service.sandboxes.schemas import Sandbox, SandboxCreate, SandboxFork, SandboxNetwork
from service.sandboxes.service import Db, check_network, get_row_scoped, repository
from service.sandboxes.states import State
from service.sandboxes.waking import Wake
from service.tenants.repository import lock_tenant
from service.tenants.schemas import Quotas
from service.tenants.service import quotas_of


@dataclass(frozen=True, slots=True)
class _Asked:
    """A fork as asked: by whom, of which sandbox, and the node it would start on."""

    principal: Principal
    tenant_id: str
    sandbox_id: str
    data: SandboxFork
    node: LocalNode


async def fork_sandbox(
    db: Db,
    holder: RuntimeHolder,
    principal: Principal,
    ctx: AuditContext,
    sandbox_id: str,
    data: SandboxFork,
    *,
    node: LocalNode,
    wake: Wake,
    secrets: SandboxSecrets | None = None,
) -> Sandbox:
    if principal.sandbox_id is not None:
        raise Forbidden("a token bound to a sandbox cannot create sandboxes")
    tenant_id = principal.tenant_id
    assert tenant_id is not None
    runtime = await holder.get()
    if not forkable(runtime):
        raise PauseUnsupported(f"the {runtime.name} runtime cannot fork a running sandbox")
    await wake(tenant_id, None, ctx, sandbox_id, why="fork")
    asked = _Asked(principal, tenant_id, sandbox_id, data, node)
    async with db() as session, session.begin():
        # Checked before the snapshot (which costs the parent a moment) and again with the write.
        parent_runtime_id = (await _allowed_parent(session, asked))[0].runtime_id
    assert parent_runtime_id is not None
    snapshot = await _snapshot(runtime, parent_runtime_id)
    try:
        cut = list(snapshot.connections_cut)
        child_id, grants = await _record_child(db, ctx, asked, cut, secrets)
        info = await _start_child(db, runtime, tenant_id, ctx, child_id, (snapshot, grants))
    finally:
        await runtime.delete_snapshot(snapshot.id)
    return await finish_create(db, runtime, principal, ctx, child_id, info.id, info.runtime)


def forkable(runtime: SandboxRuntime) -> bool:
    """Whether the runtime can fork a running sandbox (a snapshot with its memory)."""
    return runtime.supports("snapshots") and runtime.snapshots_memory


async def _snapshot(runtime: SandboxRuntime, parent_runtime_id: str) -> SnapshotInfo:
    try:
        return await runtime.snapshot(parent_runtime_id)
    except SandboxBusy as exc:  # what it could not keep, by name
        raise SandboxBusyConflict(str(exc)) from exc


async def _allowed_parent(session: AsyncSession, asked: _Asked) -> tuple[SandboxRow, Quotas]:
    """The parent, once it runs, its network is one the tenant may have now, and a child of it
    fits the tenant's quotas and the node; and the tenant's quotas."""
    quotas = quotas_of(await lock_tenant(session, asked.tenant_id))
    parent = await get_row_scoped(session, asked.tenant_id, None, asked.sandbox_id, for_update=True)
    service.require_running(parent)
    check_network(msgspec.convert(parent.network, SandboxNetwork), quotas)
    caps = Caps(parent.cpus, parent.memory_mib, parent.disk_mib)
    usage = await repository(session, asked.principal).active_usage()
    check_quotas(quotas, asked.data.ttl_s or parent.ttl_s, usage, caps)
    await asked.node.check_room(session, (float(caps.cpus), *caps[1:]))
    return parent, quotas


async def _record_child(
    db: Db, ctx: AuditContext, asked: _Asked, cut: list[str], secrets: SandboxSecrets | None
) -> tuple[str, list[str]]:
    """The child's row (`creating`) and the audit events; its id and the private ranges granted
    to the tenant now. `cut`: the parent's TCP connections to outside that the fork's
    checkpoint reset (in the parent and, as copies, in the child): both rows and the fork's
    event name them. The child's processes hold what the parent's held: it gets the secret
    values the parent's execs were given (`secrets`), masked in its execs from the start."""
    data, tenant_id = asked.data, asked.tenant_id
    async with db() as session, session.begin():
        parent, quotas = await _allowed_parent(session, asked)
        wanted = SandboxCreate(
            ttl_s=data.ttl_s or parent.ttl_s,
            env=dict(parent.env),
            labels=dict(data.labels if data.labels is not None else parent.labels),
        )
        row = births.new_row(
            tenant_id,
            wanted,
            image=parent.image,
            size=parent.size,
            caps=Caps(parent.cpus, parent.memory_mib, parent.disk_mib),
            network=msgspec.convert(parent.network, SandboxNetwork),
            template=_template_of(parent),
            started_from="fork",
            request=births.RequestKey(None, births.request_hash(data)),
            now=utcnow(),
            node_id=asked.node.id,
        )
        row.idle_timeout_s = idle_timeout(quotas, data.idle_timeout_s)
        row.pause_cut = parent.pause_cut = cut
        repository(session, asked.principal).add(row)
        await transition(session, row, State.CREATING, f"forked from {parent.id}")
        details = {**births.create_details(row, None), "forked_from": parent.id}
        await record(
            session, ctx, chain=tenant_id, action="sandbox.fork", target=parent.id,
            details={"child": row.id, "connections_cut": cut},
        )  # fmt: skip
        await record(
            session, ctx, chain=tenant_id, action="sandbox.create", target=row.id, details=details
        )
        if secrets is not None:
            await session.flush()  # the child's row before the rows that name it
            await secrets.copy(session, tenant_id, parent.id, row.id)
        return row.id, list(quotas.network_private_cidrs)


def _template_of(parent: SandboxRow) -> births.TemplateRef | None:
    """The template build the parent started from, which its child started from too."""
    if parent.template and parent.template_id and parent.template_version:
        return births.TemplateRef(parent.template, parent.template_id, parent.template_version)
    return None


async def _start_child(
    db: Db,
    runtime: SandboxRuntime,
    tenant_id: str,
    ctx: AuditContext,
    child_id: str,
    source: tuple[SnapshotInfo, list[str]],
) -> SandboxInfo:
    """The child, from the parent's snapshot, with the private ranges granted now (`source`)."""
    snapshot, grants = source
    try:
        return await runtime.create_from_snapshot(snapshot.id, grants)
    except SandboxRuntimeError as exc:
        await service.record_failure(db, tenant_id, child_id, ctx, f"fork failed: {exc.public()}")
        raise
    except Exception as exc:
        await service.record_failure(
            db, tenant_id, child_id, ctx, f"fork failed: internal error ({type(exc).__name__})"
        )
        raise

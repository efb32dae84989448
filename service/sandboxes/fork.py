"""Fork: a new sandbox started from a live snapshot of a running one, on the same node.

The child has the parent's image, template, caps, network policy, environment and labels, and
everything the parent had in memory and on its writable mounts at that moment; from then on the
two diverge. Like a warm pool member it gets its own identity (id, hostname, network slot) and
fresh randomness from the host (on gVisor the restored kernel reseeds). The snapshot is deleted
once the child runs. The parent keeps running; a paused parent is woken first.
"""

from __future__ import annotations

import msgspec

from service.audit.recorder import AuditContext, record
from service.auth.principal import Principal
from service.db.base import utcnow
from service.errors import Forbidden
from service.nodes.capacity import check_room
from service.runtime import SandboxRuntimeError
from service.runtime.holder import RuntimeHolder
from service.sandboxes import service
from service.sandboxes.create import finish_create
from service.sandboxes.lifecycle import transition
from service.sandboxes.pause import PauseUnsupported, SandboxBusyConflict, running_execs, wake
from service.sandboxes.quotas import Caps, check_quotas, idle_timeout
from service.sandboxes.schemas import Sandbox, SandboxCreate, SandboxFork, SandboxNetwork
from service.sandboxes.service import Db, get_row_scoped, repository
from service.sandboxes.states import State
from service.tenants.repository import lock_tenant
from service.tenants.service import quotas_of


async def fork_sandbox(
    db: Db,
    holder: RuntimeHolder,
    principal: Principal,
    ctx: AuditContext,
    sandbox_id: str,
    data: SandboxFork,
    *,
    node_id: str | None,
    overcommit: tuple[float, float] | None,
) -> Sandbox:
    if principal.sandbox_id is not None:
        raise Forbidden("a token bound to a sandbox cannot create sandboxes")
    tenant_id = principal.tenant_id
    assert tenant_id is not None
    runtime = await holder.get()
    if not runtime.supports("snapshots") or not runtime.snapshots_memory:
        raise PauseUnsupported(f"the {runtime.name} runtime cannot fork a running sandbox")
    await wake(db, holder, tenant_id, None, ctx, sandbox_id, why="fork")
    async with db() as session, session.begin():
        quotas = quotas_of(await lock_tenant(session, tenant_id))
        parent = await get_row_scoped(session, tenant_id, None, sandbox_id, for_update=True)
        service.require_running(parent)
        if await running_execs(session, parent.id):
            # A snapshot waits for nothing: refused before anything is written.
            raise SandboxBusyConflict(f"sandbox {parent.id} has running execs: wait or kill them")
        ttl_s = data.ttl_s or parent.ttl_s
        caps = Caps(parent.cpus, parent.memory_mib, parent.disk_mib)
        check_quotas(quotas, ttl_s, await repository(session, principal).active_usage(), caps)
        if node_id is not None and overcommit is not None:
            await check_room(session, node_id, (float(caps.cpus), *caps[1:]), overcommit)
        asked = SandboxCreate(
            ttl_s=ttl_s,
            env=dict(parent.env),
            labels=dict(data.labels if data.labels is not None else parent.labels),
        )
        row = service.new_row(
            tenant_id,
            asked,
            image=parent.image,
            caps=(parent.size, parent.cpus, parent.memory_mib, parent.disk_mib),
            network=msgspec.convert(parent.network, SandboxNetwork),
            template=(parent.template, parent.template_id, parent.template_version)
            if parent.template and parent.template_id and parent.template_version
            else None,
            started_from="fork",
            request=(None, service.request_hash(data)),
            now=utcnow(),
            node_id=node_id,
        )
        row.idle_timeout_s = idle_timeout(quotas, data.idle_timeout_s)
        repository(session, principal).add(row)
        await transition(session, row, State.CREATING, f"forked from {parent.id}")
        details = {**service.create_details(row, None), "forked_from": parent.id}
        await record(
            session, ctx, chain=tenant_id, action="sandbox.fork", target=parent.id,
            details={"child": row.id},
        )  # fmt: skip
        await record(
            session, ctx, chain=tenant_id, action="sandbox.create", target=row.id, details=details
        )
        child_id, parent_runtime_id = row.id, parent.runtime_id
    assert parent_runtime_id is not None
    try:
        snapshot = await runtime.snapshot(parent_runtime_id)
        try:
            info = await runtime.create_from_snapshot(snapshot.id)
        finally:
            await runtime.delete_snapshot(snapshot.id)
    except SandboxRuntimeError as exc:
        await service.record_failure(db, tenant_id, child_id, ctx, f"fork failed: {exc.public()}")
        raise
    except Exception as exc:
        await service.record_failure(
            db, tenant_id, child_id, ctx, f"fork failed: internal error ({type(exc).__name__})"
        )
        raise
    return await finish_create(db, runtime, principal, ctx, child_id, info.id, info.runtime)

"""A template version made from a sandbox as it is now (`POST /v1/templates` with
`from_sandbox`): built on that sandbox's node by a snapshot of it, while it keeps running.

A sandbox without network is snapshotted whole, so sandboxes of the template start with its
files and its memory (its processes included), like a fork. A networked one has its files
carried into a fresh sandbox without network, which is snapshotted (as a template whose setup
ran with a network is: see starter.py). A paused sandbox is woken first."""

from __future__ import annotations

import contextlib

from service.audit.recorder import AuditContext
from service.db.models import Sandbox
from service.db.session import Db
from service.errors import Conflict
from service.runtime import SandboxRuntime, SandboxRuntimeError, SnapshotInfo
from service.sandboxes.states import State
from service.sandboxes.waking import Wake
from service.templates.starter import NO_NETWORK, BuildLog, Recipe, can_carry, carry

SYSTEM = AuditContext(actor="system:template-builder", request_id=None, client=None)


async def from_sandbox(
    db: Db,
    wake: Wake,
    runtime: SandboxRuntime,
    source: tuple[str, str],
    recipe: Recipe,
    text: BuildLog,
) -> SnapshotInfo:
    """The snapshot of the sandbox `source` (its tenant, its id) for a version built by
    `recipe`, the build's steps logged to `text`."""
    tenant_id, sandbox_id = source
    text.add(f"from sandbox {sandbox_id}\n")
    await wake(tenant_id, None, SYSTEM, sandbox_id, why="template")
    async with db() as session:
        row = await session.get(Sandbox, sandbox_id)
    if row is None or row.state != State.RUNNING or row.runtime_id is None:
        raise Conflict(f"sandbox {sandbox_id} is {row.state if row else 'gone'}")
    if row.network.get("mode", "none") == "none":
        snapshot = await runtime.snapshot(row.runtime_id)
    else:
        if not can_carry(runtime):
            raise Conflict(
                f"the {runtime.name} runtime cannot carry files out of a networked sandbox"
            )
        fresh = await carry(runtime, recipe, row.runtime_id, NO_NETWORK)
        text.add("its files carried to a sandbox without network for the snapshot\n")
        try:
            snapshot = await runtime.snapshot(fresh.id)
        finally:
            with contextlib.suppress(SandboxRuntimeError):
                await runtime.destroy(fresh.id)
    text.add(f"snapshot {snapshot.id}: {snapshot.size_bytes} bytes\n")
    return snapshot

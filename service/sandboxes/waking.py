"""What execs, files, ports and template builds need of pause and resume: a paused sandbox
resumed before a call that needs it running. The flow that does it
(service.flows.resume.Resumes.wake) sits above them; the app hands it to them bound to its
database and runtime."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from service.audit.recorder import AuditContext


@runtime_checkable  # an HTTP handler's dependency: Litestar checks it with isinstance
class Wake(Protocol):
    """Resume the sandbox if it is paused (waiting for a resume another call began); any other
    state is left for the caller to judge."""

    async def __call__(
        self,
        tenant_id: str,
        only_sandbox: str | None,
        ctx: AuditContext,
        sandbox_id: str,
        *,
        why: str,
    ) -> None: ...

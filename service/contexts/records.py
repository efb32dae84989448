"""What a context call reads and records, on the exec records' own path
(service.execs.records: fixed statements on the database's driver, no ORM session): the
sandbox, read with an exec start's lookup (scoped by tenant and token binding, with its state
and the tenant's quotas), and each audit event, appended to the tenant's chain as an exec's
are. A run pays for one read before it and one append after it."""

from __future__ import annotations

from typing import Any

from service.audit.recorder import AuditContext
from service.auth.principal import Principal
from service.contexts.live import ContextFacts
from service.db.base import utcnow
from service.db.session import Db
from service.errors import NotFound
from service.execs.records import Event, ExecRecords, SandboxFacts
from service.files.target import MIB, Target
from service.sandboxes import service as sandboxes
from service.tenants.service import quotas_of


class ContextRecords:
    def __init__(self, records: ExecRecords) -> None:
        self.records = records

    async def sandbox(self, principal: Principal, sandbox_id: str) -> SandboxFacts:
        """The sandbox when the caller may see it (404 otherwise), in any state."""
        assert principal.tenant_id is not None
        async with self.records.unit(reads_only=True) as tx:
            # `since` only bounds the exec rate's count, which a context does not use.
            facts = await tx.facts(principal.tenant_id, sandbox_id, principal.sandbox_id, utcnow())
        if facts is None:
            raise NotFound(f"no sandbox {sandbox_id}")
        return facts

    async def running(self, _db: Db, principal: Principal, sandbox_id: str) -> Target:
        """The sandbox, running (service.files.target.Lookup, so a paused one is woken)."""
        assert principal.tenant_id is not None
        facts = await self.sandbox(principal, sandbox_id)
        sandboxes.require_running(facts)
        assert facts.runtime_id is not None
        quotas = quotas_of(facts)
        return Target(
            tenant_id=principal.tenant_id,
            sandbox_id=facts.id,
            runtime_id=facts.runtime_id,
            upload_limit=quotas.max_upload_mib * MIB,
            max_exec_timeout_s=quotas.max_exec_timeout_s,
        )

    async def audit(
        self, ctx: AuditContext, of: ContextFacts, action: str, outcome: str = "ok", **details: Any
    ) -> None:
        """An event of context `of`, on its tenant's chain, its target the sandbox."""
        event = Event(ctx, of.tenant_id, action, of.sandbox_id, outcome, details)
        async with self.records.unit() as tx:
            await tx.append(event)

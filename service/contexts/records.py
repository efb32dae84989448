"""What a context call reads and records, on the exec records' own path
(service.execs.records: fixed statements on the database's driver, no ORM session): the
sandbox, read with an exec start's lookup (scoped by tenant and token binding, with its state
and the tenant's quotas), and each audit event, appended to the tenant's chain as an exec's
are. A run pays for one read before it and one append after it; on a sandbox this process
found running a moment ago, only for the append (`Known`)."""

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
from service.kept import Kept
from service.sandboxes import service as sandboxes
from service.sandboxes.lifecycle import SANDBOX_CHANGES
from service.tenants.service import quotas_of

# How long a sandbox found running is taken as running without asking the database, unless a
# state change in this process came first: as long as a tenant's quotas are kept for its rate
# limits (service.ratelimit.rates.TTL_S), the only facts of it that can change elsewhere.
KNOWN_S = 5.0
KNOWN_MAX = 10_000


class Known:
    """Sandboxes found running, as the runs of their contexts need them: a run in a warm
    context asks the database nothing before it runs. Any state change of a sandbox made in
    this process (`SANDBOX_CHANGES`: a pause, a stop, a failure) forgets them all, and a lookup
    that raced one is not kept (service.kept.Kept). Every such change of a sandbox with
    contexts is made here, on the node that runs it; what another process can change (the
    tenant's quotas) is kept at most KNOWN_S. The caller's scope is checked against the kept
    tenant and token binding exactly as the lookup's statement checks it."""

    def __init__(self) -> None:
        self._kept: Kept[str, Target] = Kept(SANDBOX_CHANGES, KNOWN_S, KNOWN_MAX)

    def get(self, principal: Principal, sandbox_id: str) -> Target | None:
        target = self._kept.get(sandbox_id)
        if target is None:
            return None
        if target.tenant_id != principal.tenant_id or principal.sandbox_id not in (
            None,
            sandbox_id,
        ):
            return None  # the lookup answers (a 404) as it would have
        return target

    def put(self, target: Target, mark: int) -> None:
        self._kept.put(target.sandbox_id, target, mark)


class ContextRecords:
    def __init__(self, records: ExecRecords) -> None:
        self.records = records
        self.known = Known()

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
        known = self.known.get(principal, sandbox_id)
        if known is not None:
            return known
        mark = SANDBOX_CHANGES.seen
        facts = await self.sandbox(principal, sandbox_id)
        sandboxes.require_running(facts)
        assert facts.runtime_id is not None
        quotas = quotas_of(facts)
        target = Target(
            tenant_id=principal.tenant_id,
            sandbox_id=facts.id,
            runtime_id=facts.runtime_id,
            upload_limit=quotas.max_upload_mib * MIB,
            max_exec_timeout_s=quotas.max_exec_timeout_s,
        )
        self.known.put(target, mark)
        return target

    async def audit(
        self, ctx: AuditContext, of: ContextFacts, action: str, outcome: str = "ok", **details: Any
    ) -> None:
        """An event of context `of`, on its tenant's chain, its target the sandbox."""
        event = Event(ctx, of.tenant_id, action, of.sandbox_id, outcome, details)
        async with self.records.unit() as tx:
            await tx.append(event)

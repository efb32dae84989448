"""A claimed review as the pipeline's steps read it: its row and its tenant's limits, loaded
once (no ORM object crosses a runtime call)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from service.audit.recorder import AuditContext
from service.auth.principal import SCOPES, Principal, PrincipalKind
from service.db.models import Review as ReviewRow
from service.db.models import Tenant
from service.db.session import Db
from service.tenants.service import quotas_of


@dataclass
class Job:
    """A claimed review as read from its row (no ORM object crosses a runtime call)."""

    id: str
    tenant_id: str
    repo: str
    base: str
    head: str
    template: str | None
    size: str
    install: list[str] | None
    test: list[str]
    timeout_s: int
    network: dict[str, Any]
    model: str | None
    attempts: int
    max_ttl_s: int
    max_timeout_s: int
    # The secret's name and the user name, never the value (read at fetch time).
    credentials: dict[str, str] | None = None
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def principal(self) -> Principal:
        # The review acts for its tenant: quotas, network policy and audit are the tenant's.
        return Principal(
            kind=PrincipalKind.API_KEY,
            actor=self.actor,
            tenant_id=self.tenant_id,
            scopes=frozenset(SCOPES),
        )

    @property
    def actor(self) -> str:
        return f"review:{self.id}"

    @property
    def ctx(self) -> AuditContext:
        return AuditContext(actor=self.actor, request_id=None, client=None)


async def load(db: Db, review_id: str) -> Job | None:
    async with db() as session:
        row = await session.get(ReviewRow, review_id)
        if row is None:
            return None
        tenant = await session.get(Tenant, row.tenant_id)
        assert tenant is not None
        quotas = quotas_of(tenant)
        return Job(
            id=row.id,
            tenant_id=row.tenant_id,
            repo=row.repo,
            base=row.base,
            head=row.head,
            template=row.template,
            size=row.size,
            install=list(row.install) if row.install else None,
            test=list(row.test),
            timeout_s=row.timeout_s,
            network=dict(row.network),
            model=row.model,
            attempts=row.attempts,
            max_ttl_s=min(quotas.max_sandbox_ttl_s, quotas.max_lifetime_s),
            max_timeout_s=quotas.max_exec_timeout_s,
            credentials=dict(row.credentials) if row.credentials else None,
        )

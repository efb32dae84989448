"""What a warm pool claim is decided on, and the decision, the same on both databases
(service.pool.claim)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any, Protocol

from service.audit.recorder import AuditContext
from service.db.models import Sandbox
from service.errors import AppError
from service.pool.service import fair_share
from service.sandboxes.births import RequestKey, TemplateRef, new_row
from service.sandboxes.quotas import Caps, Usage, check_quotas, idle_timeout
from service.sandboxes.schemas import SandboxCreate, SandboxNetwork
from service.sandboxes.sizes import asks_other_caps
from service.sandboxes.states import State
from service.tenants.service import quotas_from


class Named(Protocol):
    """A row read by column name: asyncpg's Record, sqlite3's Row."""

    def __getitem__(self, name: str, /) -> Any: ...


@dataclass(frozen=True, slots=True)
class ClaimAsk:
    """A create that may take a warm pool member: the tenant, its request, who asks, and what
    replays it (its Idempotency-Key and the request's hash)."""

    tenant_id: str
    data: SandboxCreate
    ctx: AuditContext
    request: RequestKey


@dataclass(frozen=True, slots=True)
class ClaimFacts:
    """What a claim is decided on, read in one statement (queries.PG_READ, SQLITE_READ)."""

    template_id: str
    owner: str
    template_name: str
    version_id: str
    version: int
    size: str
    cpus: int
    memory_mib: int
    disk_mib: int
    image: str
    pool_id: str | None  # None: no pool for the build's size
    target: int | None
    others: int  # other tenants that asked this pool lately
    mine: int  # this tenant's claims from it lately
    quotas: dict[str, Any]
    usage: Usage
    replay_id: str | None  # the sandbox already made with the request's Idempotency-Key
    head: tuple[int, str] | None  # the tenant's audit chain head (PostgreSQL's swap)

    @classmethod
    def read(cls, found: Named, quotas: dict[str, Any], head: tuple[int, str] | None) -> ClaimFacts:
        """The facts of a read's row, by column name, with its quotas and chain head decoded
        by the caller (each database has its own way)."""
        named = {f.name: found[f.name] for f in fields(cls) if f.name not in _NOT_COLUMNS}
        usage = Usage(*(found[f"used_{name}"] for name in Usage._fields))
        return cls(**named, quotas=quotas, usage=usage, head=head)


# The facts that are not one column of the read each.
_NOT_COLUMNS = frozenset({"quotas", "usage", "head"})


def planned(
    facts: ClaimFacts | None, ask: ClaimAsk, now: datetime, node_id: str | None
) -> Sandbox | None:
    """The new sandbox's row when the claim is the plain case, else None."""
    data = ask.data
    if facts is None or facts.pool_id is None or not facts.target or facts.target <= 0:
        return None  # no such template or build visible, or no pool for its size
    if facts.replay_id is not None:
        return None  # the Idempotency-Key was used: the general path replays
    size, cpus, memory, disk = facts.size, facts.cpus, facts.memory_mib, facts.disk_mib
    if asks_other_caps(data, size, (cpus, memory, disk)):
        return None
    caps = Caps(cpus, memory, disk)
    row = new_row(
        ask.tenant_id,
        data,
        image=facts.image,
        size=size,
        caps=caps,
        network=SandboxNetwork(),
        template=TemplateRef(facts.template_name, facts.template_id, facts.version),
        started_from="pool",
        request=ask.request,
        now=now,
    )
    row.state = State.RUNNING.value
    row.node_id = node_id
    quotas = quotas_from(facts.quotas)
    try:
        check_quotas(quotas, data.ttl_s, facts.usage, caps)
        row.idle_timeout_s = idle_timeout(quotas, data.idle_timeout_s)
    except AppError:
        return None
    if facts.mine >= fair_share(facts.target, facts.others + 1):
        return None
    return row

"""Taking a warm pool member without the general create path: the point of a pool is a sandbox
in milliseconds, and the general create path (service.flows.create) spends ~15 ORM
statements on the same work.

1. One read: the template the tenant sees by that name, its newest ready build, the pool for
   its size and the fair-share counts, the tenant's quotas and usage, any sandbox already made
   with the request's Idempotency-Key (`ClaimFacts`).
2. The checks (`planned`), the same on both databases.
3. One write: claim a ready member and, only if there was one, record the sandbox, its
   transitions, the pool request and the `sandbox.create` audit event.

On PostgreSQL (`claim_pg`) the read and the write are a statement each, the write appending to
the tenant's audit chain by compare-and-swap from the head the read saw: every sandbox creation
of a tenant appends to its chain, so a head that still matches means no other create of this
tenant happened in between, and the quota check made on the read holds at the write. On SQLite
(`claim_sqlite`) all three are one transaction of the database's writer, which holds the one
write lock throughout.

When anything is not the plain case (no pool, no member, a quota or fair share refusal, a size
that does not match, an Idempotency-Key seen before, on PostgreSQL a head that moved three
times), this returns None and the general path runs: it gives the errors, the misses, the
replays and the cold start, with its own locking.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.exc import IntegrityError

from service.db.models import Sandbox
from service.db.pg import is_postgres
from service.pool import claim_pg, claim_sqlite, metrics
from service.pool.claiming import ClaimAsk
from service.pool.service import WarmPool, label
from service.sandboxes.schemas import SandboxNetwork
from service.sandboxes.sizes import network_of


async def claim(engine: Any, pool: WarmPool, ask: ClaimAsk) -> Sandbox | None:
    """The new sandbox's row, made from a pool member; None to take the general path."""
    data = ask.data
    if data.template is None or data.image is not None or data.preset is not None:
        return None
    if network_of(data) != SandboxNetwork():
        return None  # any policy, valid or not, is the general path's (it checks and refuses)
    form = claim_pg if is_postgres(engine) else claim_sqlite
    try:
        claimed = await form.claim(engine, pool, ask)
    except IntegrityError:
        return None  # the same Idempotency-Key raced in: the general path replays it
    if claimed is None:
        return None
    row, facts = claimed
    metrics.CLAIMS.labels(label(facts.template_name, facts.owner), row.size).inc()
    pool.poke_after_claim()
    return row

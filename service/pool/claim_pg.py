"""A warm pool claim on PostgreSQL (service.pool.claim): a read and a write, one statement each,
the write appending to the tenant's audit chain by compare-and-swap."""

from __future__ import annotations

from typing import Any

import asyncpg

from service.audit.recorder import CHAIN_HEADS, AuditContext, next_event, pg_event_params
from service.db.base import utcnow
from service.db.models import Sandbox
from service.db.pg import driver_connection, dumps
from service.pool import queries
from service.pool.claiming import ClaimAsk, ClaimFacts, planned
from service.pool.repository import FAIR_SHARE_WINDOW
from service.pool.service import WarmPool
from service.sandboxes.births import create_details
from service.templates.repository import OPERATOR_OWNER

ATTEMPTS = 3

_JSON_COLUMNS = frozenset({"network", "env", "labels"})


async def claim(engine: Any, pool: WarmPool, ask: ClaimAsk) -> tuple[Sandbox, ClaimFacts] | None:
    # The tenant's chain is this claim's while it reads the head and appends to it: the
    # tenant's exec records in this process take turns with it instead of racing its
    # compare-and-swap.
    async with CHAIN_HEADS.turn(ask.tenant_id), driver_connection(engine) as conn:
        for _ in range(ATTEMPTS):
            now = utcnow()
            found = await conn.fetchrow(
                queries.PG_READ,
                ask.tenant_id,
                ask.data.template,
                OPERATOR_OWNER,
                now - FAIR_SHARE_WINDOW,
                ask.request.idempotency_key,
            )
            facts = _facts(found)
            row = planned(facts, ask, now, pool.node_id)
            if row is None or facts is None:
                return None
            if facts.head is None:
                return None  # a tenant's first event: the general path makes its chain
            outcome = await _write(conn, pool.host, facts, row, ask.ctx)
            if outcome == "claimed":
                return row, facts
            if outcome == "empty":
                return None
        return None


def _facts(found: asyncpg.Record | None) -> ClaimFacts | None:
    if found is None:
        return None
    head = (found["head_seq"], found["head_hash"]) if found["head_seq"] is not None else None
    return ClaimFacts.read(found, found["quotas"], head)


async def _write(conn: Any, host: str, facts: ClaimFacts, row: Sandbox, ctx: AuditContext) -> str:
    """Claim a ready member of this host for the planned row (made at the claim's moment,
    `created_at`) and record it, appending to the chain from the head the read saw:
    "claimed", "empty" (no ready member) or "moved" (the chain's head moved: read again)."""
    assert facts.head is not None
    head, now = facts.head, row.created_at
    event = next_event(
        ctx,
        chain=row.tenant_id,
        head=head,
        action="sandbox.create",
        target=row.id,
        outcome="ok",
        details=create_details(row, preset=None),
    )
    sandbox_values = [
        dumps(getattr(row, c)) if c in _JSON_COLUMNS else getattr(row, c)
        for c in queries.SANDBOX_COLUMNS
    ]
    event_values = pg_event_params(event)
    # One statement in autocommit: it claims and records everything, or nothing.
    try:
        member = await conn.fetchrow(
            queries.PG_WRITE,
            facts.pool_id,
            facts.version_id,
            host,
            now,
            *sandbox_values,
            *event_values,
        )
    except asyncpg.DivisionByZeroError:
        return "moved"
    if member["runtime_id"] is None:
        return "empty"
    CHAIN_HEADS[row.tenant_id] = (event["seq"], event["hash"])  # the claimer's first exec
    row.runtime_id, row.runtime = member["runtime_id"], member["runtime"]
    return "claimed"

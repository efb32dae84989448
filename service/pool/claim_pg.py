"""A warm pool claim on PostgreSQL (service.pool.claim): a read and a write, one statement each,
the write appending to the tenant's audit chain by compare-and-swap."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg

from service.audit.recorder import (
    CHAIN_HEADS,
    AuditContext,
    next_event,
    pg_append_sql,
    pg_casts,
    pg_event_params,
    pg_params,
)
from service.db.base import utcnow
from service.db.models import Sandbox, SandboxTransition
from service.db.pg import driver_connection, dumps
from service.pool.claiming import ACTIVE_STATES, SANDBOX_COLUMNS, ClaimFacts, planned
from service.pool.repository import FAIR_SHARE_WINDOW
from service.pool.service import WarmPool
from service.sandboxes.quotas import Usage
from service.sandboxes.schemas import SandboxCreate
from service.sandboxes.service import RequestKey, create_details
from service.templates.repository import OPERATOR_OWNER

ATTEMPTS = 3

_READ = """
WITH tpl AS (
  SELECT id, owner, name FROM templates
  WHERE name = $2 AND owner IN ($1, $3) ORDER BY (owner = $1) DESC LIMIT 1
), ver AS (
  SELECT v.id, v.version, v.size, v.cpus, v.memory_mib, v.disk_mib, v.image
  FROM template_versions v JOIN tpl ON v.template_id = tpl.id
  WHERE v.state = 'ready' ORDER BY v.version DESC LIMIT 1
)
SELECT tpl.id, tpl.owner, tpl.name,
  ver.id, ver.version, ver.size, ver.cpus, ver.memory_mib, ver.disk_mib, ver.image,
  pt.id, pt.target,
  (SELECT count(DISTINCT r.tenant_id) FROM pool_requests r
     WHERE r.pool_id = pt.id AND r.at >= $4 AND r.tenant_id <> $1),
  (SELECT count(*) FROM pool_requests r
     WHERE r.pool_id = pt.id AND r.tenant_id = $1 AND r.claimed AND r.at >= $4),
  t.quotas, u.n + b.n AS used_sandboxes, u.cpus + b.cpus AS used_cpus,
  u.memory + b.memory AS used_memory,
  (SELECT s.id FROM sandboxes s WHERE s.tenant_id = $1 AND s.idempotency_key = $5),
  h.seq, h.hash, u.disk + b.disk AS used_disk
FROM tpl JOIN ver ON true JOIN tenants t ON t.id = $1
CROSS JOIN LATERAL (
  SELECT count(*) AS n, coalesce(sum(s.cpus), 0) AS cpus,
    coalesce(sum(s.memory_mib), 0) AS memory, coalesce(sum(s.disk_mib), 0) AS disk
  FROM sandboxes s WHERE s.tenant_id = $1 AND s.state = ANY($6::varchar[])
) u
CROSS JOIN LATERAL (
  SELECT count(*) AS n, coalesce(sum(v.cpus), 0) AS cpus,
    coalesce(sum(v.memory_mib), 0) AS memory, coalesce(sum(v.disk_mib), 0) AS disk
  FROM template_versions v JOIN templates bt ON bt.id = v.template_id
  WHERE bt.owner = $1 AND v.state = 'building'
) b
LEFT JOIN pool_targets pt ON pt.template_id = tpl.id AND pt.size = ver.size
LEFT JOIN audit_chain_heads h ON h.chain = $1
"""


_JSON_COLUMNS = frozenset({"network", "env", "labels"})

# $1 pool id, $2 version id, $3 host, $4 now; the sandbox's columns, then the event's.
_S = pg_params(SANDBOX_COLUMNS, pg_casts(Sandbox.__table__, SANDBOX_COLUMNS), 5)
_TRANSITION_CAST = pg_casts(SandboxTransition.__table__, ("to_state",))[0]

_MEMBER = """member AS (
  UPDATE pool_members SET state = 'claimed', claimed_at = $4, sandbox_id = {sandbox_id}
  WHERE id = (
    SELECT id FROM pool_members
    WHERE pool_id = $1 AND version_id = $2 AND host = $3 AND state = 'ready'
    ORDER BY ready_at LIMIT 1 FOR UPDATE SKIP LOCKED
  ) AND state = 'ready'
  RETURNING runtime_id, runtime
)""".format(sandbox_id=_S["id"])  # noqa: S608 (fixed names)

_WRITE = pg_append_sql(
    5 + len(SANDBOX_COLUMNS),
    before=_MEMBER,
    guard="EXISTS (SELECT 1 FROM member WHERE runtime_id IS NOT NULL)",
    action=f"""
  INSERT INTO sandboxes ({", ".join(SANDBOX_COLUMNS)}, runtime, runtime_id)
  SELECT {", ".join(_S.values())}, m.runtime, m.runtime_id
  FROM member m WHERE EXISTS (SELECT 1 FROM head)""",  # noqa: S608 (fixed names)
    more={
        "transitions": f"""
  INSERT INTO sandbox_transitions (sandbox_id, from_state, to_state, reason, at)
  SELECT {_S["id"]}, v.from_state, v.to_state, v.reason, $4
  FROM (VALUES
    (1, NULL::{_TRANSITION_CAST}, 'creating'::{_TRANSITION_CAST}, NULL::{_TRANSITION_CAST}),
    (2, 'creating', 'running', 'claimed from the warm pool')
  ) AS v(n, from_state, to_state, reason)
  WHERE EXISTS (SELECT 1 FROM head) ORDER BY v.n""",  # noqa: S608 (fixed names)
        "request": f"""
  INSERT INTO pool_requests (pool_id, tenant_id, claimed, at)
  SELECT $1, {_S["tenant_id"]}, true, $4
  WHERE EXISTS (SELECT 1 FROM head)""",  # noqa: S608 (fixed names)
    },
    # A member claimed while the chain's head moved (the append did not happen) must not stay
    # claimed: dividing by the empty `head` fails the statement, and with it the claim.
    result="""SELECT (SELECT runtime_id FROM member), (SELECT runtime FROM member),
  CASE WHEN EXISTS (SELECT 1 FROM member) THEN 1 / (SELECT count(*) FROM head)::int END""",
)


async def claim(
    engine: Any,
    pool: WarmPool,
    tenant_id: str,
    ctx: AuditContext,
    data: SandboxCreate,
    request: RequestKey,
) -> tuple[Sandbox, ClaimFacts] | None:
    # The tenant's chain is this claim's while it reads the head and appends to it: the
    # tenant's exec records in this process take turns with it instead of racing its
    # compare-and-swap.
    async with CHAIN_HEADS.turn(tenant_id), driver_connection(engine) as conn:
        for _ in range(ATTEMPTS):
            now = utcnow()
            found = await conn.fetchrow(
                _READ,
                tenant_id,
                data.template,
                OPERATOR_OWNER,
                now - FAIR_SHARE_WINDOW,
                request.idempotency_key,
                ACTIVE_STATES,
            )
            facts = _facts(found)
            row = planned(facts, tenant_id, data, request, now, pool.node_id)
            if row is None or facts is None:
                return None
            if facts.head is None:
                return None  # a tenant's first event: the general path makes its chain
            outcome = await _write(conn, pool, facts, row, ctx, facts.head, now)
            if outcome == "claimed":
                return row, facts
            if outcome == "empty":
                return None
        return None


def _facts(found: Any) -> ClaimFacts | None:
    if found is None:
        return None
    usage = Usage(
        found["used_sandboxes"], found["used_cpus"], found["used_memory"], found["used_disk"]
    )
    head = (found[19], found[20]) if found[19] is not None else None
    return ClaimFacts(*found[:15], usage=usage, replay_id=found[18], head=head)


async def _write(
    conn: Any,
    pool: WarmPool,
    facts: ClaimFacts,
    row: Sandbox,
    ctx: AuditContext,
    head: tuple[int, str],
    now: datetime,
) -> str:
    """ "claimed", "empty" (no ready member) or "moved" (the chain's head moved: read again)."""
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
        dumps(getattr(row, c)) if c in _JSON_COLUMNS else getattr(row, c) for c in SANDBOX_COLUMNS
    ]
    event_values = pg_event_params(event)
    # One statement in autocommit: it claims and records everything, or nothing.
    try:
        runtime_id, runtime, _ = await conn.fetchrow(
            _WRITE, facts.pool_id, facts.version_id, pool.host, now, *sandbox_values, *event_values
        )
    except asyncpg.DivisionByZeroError:
        return "moved"
    if runtime_id is None:
        return "empty"
    CHAIN_HEADS[row.tenant_id] = (event["seq"], event["hash"])  # the claimer's first exec
    row.runtime_id, row.runtime = runtime_id, runtime
    return "claimed"

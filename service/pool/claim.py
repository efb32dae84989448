"""Taking a warm pool member on PostgreSQL in two statements: the point of a pool is a sandbox
in milliseconds, and the general create path (service.sandboxes.create) spends ~15 ORM
statements on the same work.

1. One read: the template the tenant sees by that name, its newest ready build, the pool for
   its size and the fair-share counts, the tenant's quotas and usage, any sandbox already made
   with the request's Idempotency-Key, and the head of the tenant's audit chain.
2. One write, a single statement: claim a ready member (skipping rows other claims hold), and only
   if there was one, extend the audit chain from the head read in 1 (compare-and-swap) and
   record the sandbox, its transitions, the pool request and the audit event.

Every tenant's sandbox creation appends to the tenant's chain, so a head that still matches
means no other create of this tenant happened in between: the quota check made on the read
holds at the write. When anything is not the plain case (no pool, no member, a quota or fair
share refusal, a size that does not match, an Idempotency-Key seen before, a head that moved
three times), this returns None and the general path runs: it gives the errors, the misses,
the replays and the cold start, with its own locking.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import asyncpg
from sqlalchemy.exc import IntegrityError

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
from service.errors import AppError
from service.pool import metrics
from service.pool.repository import FAIR_SHARE_WINDOW
from service.pool.service import WarmPool, fair_share, label
from service.sandboxes.quotas import Caps, Usage, check_quotas, idle_timeout
from service.sandboxes.schemas import SandboxCreate, SandboxNetwork
from service.sandboxes.service import asks_other_caps, create_details, new_row
from service.sandboxes.states import ACTIVE, State
from service.templates.repository import OPERATOR_OWNER
from service.tenants.service import quotas_from

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

_SANDBOX_COLUMNS = (
    "id",
    "tenant_id",
    "node_id",
    "state",
    "image",
    "template",
    "template_id",
    "template_version",
    "started_from",
    "size",
    "cpus",
    "memory_mib",
    "disk_mib",
    "network",
    "env",
    "labels",
    "ttl_s",
    "idempotency_key",
    "request_hash",
    "created_at",
    "updated_at",
    "expires_at",
    "idle_timeout_s",
    "last_activity_at",
)


_JSON_COLUMNS = frozenset({"network", "env", "labels"})
_ACTIVE_STATES = [s.value for s in ACTIVE]

# $1 pool id, $2 version id, $3 host, $4 now; the sandbox's columns, then the event's.
_S = pg_params(_SANDBOX_COLUMNS, pg_casts(Sandbox.__table__, _SANDBOX_COLUMNS), 5)
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
    5 + len(_SANDBOX_COLUMNS),
    before=_MEMBER,
    guard="EXISTS (SELECT 1 FROM member WHERE runtime_id IS NOT NULL)",
    action=f"""
  INSERT INTO sandboxes ({", ".join(_SANDBOX_COLUMNS)}, runtime, runtime_id)
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
    idempotency_key: str | None,
    request_hash: str,
    network: SandboxNetwork,
) -> Sandbox | None:
    """The new sandbox's row, made from a pool member; None to take the general path."""
    if data.template is None or data.image is not None or data.preset is not None:
        return None
    if network != SandboxNetwork():
        return None  # any policy, valid or not, is the general path's (it checks and refuses)
    try:
        return await _claim(engine, pool, tenant_id, ctx, data, (idempotency_key, request_hash))
    except IntegrityError:
        return None  # the same Idempotency-Key raced in: the general path replays it


async def _claim(
    engine: Any,
    pool: WarmPool,
    tenant_id: str,
    ctx: AuditContext,
    data: SandboxCreate,
    key_and_hash: tuple[str | None, str],
) -> Sandbox | None:
    idempotency_key, request_hash = key_and_hash
    network = SandboxNetwork()
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
                idempotency_key,
                _ACTIVE_STATES,
            )
            row = _plan(found, tenant_id, data, idempotency_key, request_hash, network, now)
            if row is not None:
                row.node_id = pool.node_id
            if row is None or found is None:
                return None
            quotas = quotas_from(found[14])
            try:
                check_quotas(
                    quotas, data.ttl_s, _usage(found), Caps(row.cpus, row.memory_mib, row.disk_mib)
                )
                row.idle_timeout_s = idle_timeout(quotas, data.idle_timeout_s)
            except AppError:
                return None
            others, mine, target = found[12], found[13], found[11]
            if mine >= fair_share(target, others + 1):
                return None
            head = (found[19], found[20]) if found[19] is not None else None
            if head is None:
                return None  # a tenant's first event: the general path makes its chain
            outcome = await _write(conn, pool, found, row, ctx, head, now)
            if outcome == "claimed":
                metrics.CLAIMS.labels(label(found[2], found[1]), row.size).inc()
                pool.poke_after_claim()
                return row
            if outcome == "empty":
                return None
        return None


def _usage(found: Any) -> Usage:
    return Usage(
        found["used_sandboxes"], found["used_cpus"], found["used_memory"], found["used_disk"]
    )


def _plan(
    found: Any,
    tenant_id: str,
    data: SandboxCreate,
    idempotency_key: str | None,
    request_hash: str,
    network: SandboxNetwork,
    now: datetime,
) -> Sandbox | None:
    if found is None or found[10] is None or not found[11] or found[11] <= 0:
        return None  # no such template or build visible, or no pool for its size
    if found[18] is not None:
        return None  # the Idempotency-Key was used: the general path replays
    size, cpus, memory, disk = found[5], found[6], found[7], found[8]
    if asks_other_caps(data, size, (cpus, memory, disk)):
        return None
    row = new_row(
        tenant_id,
        data,
        image=found[9],
        caps=(size, cpus, memory, disk),
        network=network,
        template=(found[2], found[0], found[4]),
        started_from="pool",
        request=(idempotency_key, request_hash),
        now=now,
    )
    row.state = State.RUNNING.value
    return row


async def _write(
    conn: Any,
    pool: WarmPool,
    found: Any,
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
        dumps(getattr(row, c)) if c in _JSON_COLUMNS else getattr(row, c) for c in _SANDBOX_COLUMNS
    ]
    event_values = pg_event_params(event)
    # One statement in autocommit: it claims and records everything, or nothing.
    try:
        runtime_id, runtime, _ = await conn.fetchrow(
            _WRITE, found[10], found[3], pool.host, now, *sandbox_values, *event_values
        )
    except asyncpg.DivisionByZeroError:
        return "moved"
    if runtime_id is None:
        return "empty"
    CHAIN_HEADS[row.tenant_id] = (event["seq"], event["hash"])  # the claimer's first exec
    row.runtime_id, row.runtime = runtime_id, runtime
    return "claimed"

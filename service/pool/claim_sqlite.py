"""A warm pool claim on SQLite (service.pool.claim): the read, the checks and the write in one
transaction of the database's writer (service.db.sqlite.Direct), which holds the one write lock
throughout, so what the checks counted is what the write extends."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from service.audit.recorder import AuditContext, sqlite_append
from service.db import sqlite
from service.db.base import utcnow
from service.db.models import PoolMember, PoolRequest, Sandbox, SandboxTransition, Tenant
from service.db.sqlite import Codec
from service.pool.claiming import ACTIVE_STATES, SANDBOX_COLUMNS, ClaimFacts, planned
from service.pool.repository import FAIR_SHARE_WINDOW
from service.pool.service import WarmPool
from service.sandboxes.quotas import Usage
from service.sandboxes.schemas import SandboxCreate
from service.sandboxes.service import RequestKey, create_details
from service.templates.repository import OPERATOR_OWNER

_ACTIVE = ", ".join(f"'{state}'" for state in ACTIVE_STATES)  # fixed names

_READ = f"""
WITH tpl AS (
  SELECT id, owner, name FROM templates
  WHERE name = :name AND owner IN (:tenant, :operator) ORDER BY (owner = :tenant) DESC LIMIT 1
), ver AS (
  SELECT v.id, v.version, v.size, v.cpus, v.memory_mib, v.disk_mib, v.image
  FROM template_versions v JOIN tpl ON v.template_id = tpl.id
  WHERE v.state = 'ready' ORDER BY v.version DESC LIMIT 1
)
SELECT tpl.id, tpl.owner, tpl.name,
  ver.id, ver.version, ver.size, ver.cpus, ver.memory_mib, ver.disk_mib, ver.image,
  pt.id, pt.target,
  (SELECT count(DISTINCT r.tenant_id) FROM pool_requests r
     WHERE r.pool_id = pt.id AND r.at >= :since AND r.tenant_id <> :tenant),
  (SELECT count(*) FROM pool_requests r
     WHERE r.pool_id = pt.id AND r.tenant_id = :tenant AND r.claimed AND r.at >= :since),
  t.quotas, u.n + b.n, u.cpus + b.cpus, u.memory + b.memory, u.disk + b.disk,
  (SELECT s.id FROM sandboxes s WHERE s.tenant_id = :tenant AND s.idempotency_key = :key)
FROM tpl JOIN ver JOIN tenants t ON t.id = :tenant
JOIN (
  SELECT count(*) AS n, coalesce(sum(s.cpus), 0) AS cpus,
    coalesce(sum(s.memory_mib), 0) AS memory, coalesce(sum(s.disk_mib), 0) AS disk
  FROM sandboxes s WHERE s.tenant_id = :tenant AND s.state IN ({_ACTIVE})
) u
JOIN (
  SELECT count(*) AS n, coalesce(sum(v.cpus), 0) AS cpus,
    coalesce(sum(v.memory_mib), 0) AS memory, coalesce(sum(v.disk_mib), 0) AS disk
  FROM template_versions v JOIN templates bt ON bt.id = v.template_id
  WHERE bt.owner = :tenant AND v.state = 'building'
) b
LEFT JOIN pool_targets pt ON pt.template_id = tpl.id AND pt.size = ver.size
"""  # noqa: S608 (fixed names)

_QUOTAS = Codec(Tenant.__table__, ("quotas",))
_REQUEST_AT = Codec(PoolRequest.__table__, ("at",))
_CLAIMED_AT = Codec(PoolMember.__table__, ("claimed_at",))
_TRANSITION_AT = Codec(SandboxTransition.__table__, ("at",))
_SANDBOX = Codec(Sandbox.__table__, (*SANDBOX_COLUMNS, "runtime", "runtime_id"))

_MEMBER = """
UPDATE pool_members SET state = 'claimed', claimed_at = ?, sandbox_id = ?
WHERE id = (
  SELECT id FROM pool_members
  WHERE pool_id = ? AND version_id = ? AND host = ? AND state = 'ready'
  ORDER BY ready_at LIMIT 1
)
RETURNING runtime_id, runtime
"""
_INSERT_SANDBOX = f"INSERT INTO sandboxes ({_SANDBOX.columns()}) VALUES ({_SANDBOX.placeholders()})"  # noqa: S608
_TRANSITIONS = """
INSERT INTO sandbox_transitions (sandbox_id, from_state, to_state, reason, at)
VALUES (?, NULL, 'creating', NULL, ?), (?, 'creating', 'running', 'claimed from the warm pool', ?)
"""
_REQUEST = "INSERT INTO pool_requests (pool_id, tenant_id, claimed, at) VALUES (?, ?, 1, ?)"


class _Unclaimable(Exception):
    """The member taken has no runtime sandbox: its claim is rolled back."""


async def claim(
    engine: Any,
    pool: WarmPool,
    tenant_id: str,
    ctx: AuditContext,
    data: SandboxCreate,
    request: RequestKey,
) -> tuple[Sandbox, ClaimFacts] | None:
    try:
        async with sqlite.direct(engine).write() as conn:
            now = utcnow()
            facts = _read(conn, tenant_id, data, request.idempotency_key, now)
            row = planned(facts, tenant_id, data, request, now, pool.node_id)
            if row is None or facts is None:
                return None
            if not _write(conn, pool, facts, row, ctx, now):
                return None
            return row, facts
    except _Unclaimable:
        return None


def _read(
    conn: sqlite3.Connection,
    tenant_id: str,
    data: SandboxCreate,
    key: str | None,
    now: datetime,
) -> ClaimFacts | None:
    since = _REQUEST_AT.one("at", now - FAIR_SHARE_WINDOW)
    found = conn.execute(
        _READ,
        {
            "tenant": tenant_id,
            "name": data.template,
            "operator": OPERATOR_OWNER,
            "since": since,
            "key": key,
        },
    ).fetchone()
    if found is None:
        return None
    (quotas,) = _QUOTAS.row(found[14:15])
    usage = Usage(*found[15:19])
    return ClaimFacts(*found[:14], quotas=quotas, usage=usage, replay_id=found[19], head=None)


def _write(
    conn: sqlite3.Connection,
    pool: WarmPool,
    facts: ClaimFacts,
    row: Sandbox,
    ctx: AuditContext,
    now: datetime,
) -> bool:
    """Whether a ready member was there and is now the caller's sandbox, recorded."""
    claimed_at = _CLAIMED_AT.one("claimed_at", now)
    member = conn.execute(
        _MEMBER, (claimed_at, row.id, facts.pool_id, facts.version_id, pool.host)
    ).fetchone()
    if member is None:
        return False
    if member[0] is None:
        raise _Unclaimable()
    row.runtime_id, row.runtime = member
    values = {c: getattr(row, c) for c in _SANDBOX.names}
    conn.execute(_INSERT_SANDBOX, _SANDBOX.params(values))
    at = _TRANSITION_AT.one("at", now)
    conn.execute(_TRANSITIONS, (row.id, at, row.id, at))
    requested_at = _REQUEST_AT.one("at", now)
    conn.execute(_REQUEST, (facts.pool_id, row.tenant_id, requested_at))
    what = {
        "chain": row.tenant_id,
        "action": "sandbox.create",
        "target": row.id,
        "outcome": "ok",
        "details": create_details(row, preset=None),
    }
    sqlite_append(conn, ctx, what)
    return True

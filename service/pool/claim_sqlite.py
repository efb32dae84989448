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
from service.pool import queries
from service.pool.claiming import ClaimAsk, ClaimFacts, planned
from service.pool.repository import FAIR_SHARE_WINDOW
from service.pool.service import WarmPool
from service.sandboxes.births import create_details
from service.templates.repository import OPERATOR_OWNER

_QUOTAS = Codec(Tenant.__table__, ("quotas",))
_REQUEST_AT = Codec(PoolRequest.__table__, ("at",))
_CLAIMED_AT = Codec(PoolMember.__table__, ("claimed_at",))
_TRANSITION_AT = Codec(SandboxTransition.__table__, ("at",))
_SANDBOX = Codec(Sandbox.__table__, queries.SQLITE_SANDBOX_COLUMNS)


class _Unclaimable(Exception):
    """The member taken has no runtime sandbox: its claim is rolled back."""


async def claim(engine: Any, pool: WarmPool, ask: ClaimAsk) -> tuple[Sandbox, ClaimFacts] | None:
    try:
        async with sqlite.direct(engine).write() as conn:
            now = utcnow()
            facts = _read(conn, ask, now)
            row = planned(facts, ask, now, pool.node_id)
            if row is None or facts is None:
                return None
            if not _write(conn, pool.host, facts, row, ask.ctx):
                return None
            return row, facts
    except _Unclaimable:
        return None


def _read(conn: sqlite3.Connection, ask: ClaimAsk, now: datetime) -> ClaimFacts | None:
    since = _REQUEST_AT.one("at", now - FAIR_SHARE_WINDOW)
    read = conn.execute(
        queries.SQLITE_READ,
        {
            "tenant": ask.tenant_id,
            "name": ask.data.template,
            "operator": OPERATOR_OWNER,
            "since": since,
            "key": ask.request.idempotency_key,
        },
    )
    read.row_factory = sqlite3.Row
    found = read.fetchone()
    if found is None:
        return None
    (quotas,) = _QUOTAS.row([found["quotas"]])
    return ClaimFacts.read(found, quotas, head=None)


def _write(
    conn: sqlite3.Connection, host: str, facts: ClaimFacts, row: Sandbox, ctx: AuditContext
) -> bool:
    """Whether a ready member of this host was there and is now the caller's sandbox,
    recorded at the claim's moment (the planned row's `created_at`)."""
    now = row.created_at
    claimed_at = _CLAIMED_AT.one("claimed_at", now)
    taken = conn.execute(
        queries.SQLITE_MEMBER, (claimed_at, row.id, facts.pool_id, facts.version_id, host)
    )
    taken.row_factory = sqlite3.Row
    member = taken.fetchone()
    if member is None:
        return False
    if member["runtime_id"] is None:
        raise _Unclaimable()
    row.runtime_id, row.runtime = member["runtime_id"], member["runtime"]
    values = {c: getattr(row, c) for c in _SANDBOX.names}
    conn.execute(queries.SQLITE_INSERT_SANDBOX, _SANDBOX.params(values))
    at = _TRANSITION_AT.one("at", now)
    conn.execute(queries.SQLITE_TRANSITIONS, (row.id, at, row.id, at))
    requested_at = _REQUEST_AT.one("at", now)
    conn.execute(queries.SQLITE_REQUEST, (facts.pool_id, row.tenant_id, requested_at))
    what = {
        "chain": row.tenant_id,
        "action": "sandbox.create",
        "target": row.id,
        "outcome": "ok",
        "details": create_details(row, preset=None),
    }
    sqlite_append(conn, ctx, what)
    return True

"""Audit reads and verification."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.chain import GENESIS, row_hash
from service.audit.recorder import OPERATOR_CHAIN, PURGE_ACTION
from service.audit.repository import AuditRepository
from service.audit.schemas import AuditEventOut, AuditPage, AuditVerification, BrokenLink
from service.db.models import AuditEvent
from service.pagination import decode_cursor, page_of


def to_schema(row: AuditEvent) -> AuditEventOut:
    return AuditEventOut(
        id=row.id,
        tenant_id=None if row.chain == OPERATOR_CHAIN else row.chain,
        seq=row.seq,
        ts=row.ts,
        actor=row.actor,
        action=row.action,
        target=row.target,
        request_id=row.request_id,
        client=row.client,
        outcome=row.outcome,
        details=row.details,
        prev_hash=row.prev_hash,
        hash=row.hash,
    )


async def list_events(
    session: AsyncSession,
    chain: str,
    *,
    limit: int,
    cursor: str | None,
    action: str | None,
    target: str | None,
    since: datetime | None,
    until: datetime | None,
) -> AuditPage:
    before = decode_cursor(cursor, "audit", int)
    rows = await AuditRepository(session, chain).list(
        limit=limit + 1, before_seq=before, action=action, target=target, since=since, until=until
    )
    items, next_cursor = page_of(rows, limit, "audit", key=lambda r: r.seq)
    return AuditPage(items=[to_schema(r) for r in items], next_cursor=next_cursor)


async def verify_chain(session: AsyncSession, chain: str) -> AuditVerification:
    repo = AuditRepository(session, chain)
    tenant_id = None if chain == OPERATOR_CHAIN else chain
    checked = 0
    first_seq: int | None = None
    prev: tuple[int, str] | None = None
    anchored = False
    # Where recorded purges ended: a chain may start only right after one of them.
    purged_through: set[int] = set()

    def broken(seq: int, event_id: int | None, reason: str) -> AuditVerification:
        return AuditVerification(
            tenant_id=tenant_id,
            valid=False,
            events_checked=checked,
            first_seq=first_seq,
            last_seq=prev[0] if prev else None,
            anchored_after_purge=anchored,
            broken=BrokenLink(seq=seq, event_id=event_id, reason=reason),
        )

    async for row in repo.stream():
        if prev is None:
            first_seq = row.seq
            if row.seq == 1 and row.prev_hash != GENESIS:
                return broken(row.seq, row.id, "first event does not start the chain")
            # Events before this one were removed by the retention purge; this one anchors.
            anchored = row.seq != 1
        else:
            if row.seq != prev[0] + 1:
                return broken(prev[0] + 1, None, "event missing from the chain")
            if row.prev_hash != prev[1]:
                return broken(row.seq, row.id, "link to the previous event does not match")
        if row_hash(row) != row.hash:
            return broken(row.seq, row.id, "event content does not match its hash")
        if row.action == PURGE_ACTION and isinstance(row.details.get("purged_through_seq"), int):
            purged_through.add(row.details["purged_through_seq"])
        checked += 1
        prev = (row.seq, row.hash)

    if anchored and first_seq is not None and first_seq - 1 not in purged_through:
        return broken(
            first_seq - 1, None, "events at the start of the chain were removed without a purge"
        )

    head = await repo.head()
    if head is not None and head.seq > 0:
        if prev is None or head.seq != prev[0] or head.hash != prev[1]:
            after = prev[0] + 1 if prev else 1
            return broken(after, None, "events at the end of the chain are missing")
    return AuditVerification(
        tenant_id=tenant_id,
        valid=True,
        events_checked=checked,
        first_seq=first_seq,
        last_seq=prev[0] if prev else None,
        anchored_after_purge=anchored,
        broken=None,
    )

"""Audit reads and verification."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from service.audit.chain import GENESIS, checkpoint_mac, row_hash
from service.audit.queries import ChainHead
from service.audit.recorder import OPERATOR_CHAIN, PURGE_ACTION
from service.audit.repository import AuditRepository
from service.audit.schemas import AuditEventOut, AuditPage, AuditVerification, BrokenLink
from service.db.models import AuditChainHead, AuditEvent
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
    before = decode_cursor(cursor, int)
    rows = await AuditRepository(session, chain).list(
        limit=limit + 1, before_seq=before, action=action, target=target, since=since, until=until
    )
    items, next_cursor = page_of(rows, limit, key=lambda r: r.seq)
    return AuditPage(items=[to_schema(r) for r in items], next_cursor=next_cursor)


@dataclass
class _Walk:
    """What a verify has seen so far."""

    tenant_id: str | None
    keyed_from: int
    checked: int = 0
    first_seq: int | None = None
    prev: ChainHead | None = None
    anchored: bool = False
    from_checkpoint: int | None = None

    def result(self, broken: BrokenLink | None = None) -> AuditVerification:
        return AuditVerification(
            tenant_id=self.tenant_id,
            valid=broken is None,
            events_checked=self.checked,
            first_seq=self.first_seq,
            last_seq=self.prev.seq if self.prev else None,
            anchored_after_purge=self.anchored,
            broken=broken,
            checked_from_seq=self.from_checkpoint,
            keyed_from_seq=self.keyed_from,
        )

    def broken(self, seq: int, event_id: int | None, reason: str) -> AuditVerification:
        return self.result(BrokenLink(seq=seq, event_id=event_id, reason=reason))

    def content_matches(self, row: AuditEvent) -> bool:
        return hmac.compare_digest(row_hash(row, keyed=row.seq >= self.keyed_from), row.hash)


async def verify_chain(
    session: AsyncSession, chain: str, *, full: bool = False
) -> AuditVerification:
    """Check the chain from its last verified point (or, with `full` or none, from its start)
    to its head, and record the new verified point when it is whole."""
    repo = AuditRepository(session, chain)
    head = await repo.head()
    walk = _Walk(
        tenant_id=None if chain == OPERATOR_CHAIN else chain,
        keyed_from=head.keyed_from_seq if head is not None else 1,
    )
    if head is not None and head.verified_seq is not None and not full:
        failed = await _start_at_checkpoint(repo, walk, head)
        if failed is not None:
            return failed
    failed = await _walk_events(repo, walk, head.seq if head is not None else None)
    if failed is not None:
        return failed
    if head is not None and head.seq > 0:
        if walk.prev != (head.seq, head.hash):
            after = walk.prev.seq + 1 if walk.prev else 1
            return walk.broken(after, None, "events at the end of the chain are missing")
        seq, hash_at_seq = walk.prev
        await repo.save_verified(
            seq, hash_at_seq, checkpoint_mac(chain, seq, hash_at_seq, walk.keyed_from)
        )
    return walk.result()


async def _start_at_checkpoint(
    repo: AuditRepository, walk: _Walk, head: AuditChainHead
) -> AuditVerification | None:
    """Continue from the head's last verified point; a point that was altered is a broken
    chain. A point the retention purge removed since means a walk from the start."""
    seq, hash_at_seq = int(head.verified_seq or 0), head.verified_hash or ""
    expected = checkpoint_mac(head.chain, seq, hash_at_seq, walk.keyed_from)
    if not hmac.compare_digest(expected, head.verified_mac or ""):
        return walk.broken(seq, None, "the chain's last verified point was altered")
    row = await repo.event(seq)
    if row is None:
        return None
    if row.hash != hash_at_seq or not walk.content_matches(row):
        return walk.broken(seq, row.id, "event content does not match its hash")
    walk.prev = ChainHead(row.seq, row.hash)
    walk.from_checkpoint = row.seq
    return None


async def _walk_events(
    repo: AuditRepository, walk: _Walk, through: int | None
) -> AuditVerification | None:
    # Where recorded purges ended: a chain may start only right after one of them.
    purged_through: set[int] = set()
    # Up to the head read first: events appended meanwhile are for the next verify.
    async for row in repo.stream(after=walk.prev.seq if walk.prev else 0, through=through):
        if walk.prev is None:
            walk.first_seq = row.seq
            if row.seq == 1 and row.prev_hash != GENESIS:
                return walk.broken(row.seq, row.id, "first event does not start the chain")
            # Events before this one were removed by the retention purge; this one anchors.
            walk.anchored = row.seq != 1
        else:
            if row.seq != walk.prev.seq + 1:
                return walk.broken(walk.prev.seq + 1, None, "event missing from the chain")
            if row.prev_hash != walk.prev.hash:
                return walk.broken(row.seq, row.id, "link to the previous event does not match")
        if not walk.content_matches(row):
            return walk.broken(row.seq, row.id, "event content does not match its hash")
        if row.action == PURGE_ACTION and isinstance(row.details.get("purged_through_seq"), int):
            purged_through.add(row.details["purged_through_seq"])
        walk.checked += 1
        walk.prev = ChainHead(row.seq, row.hash)
    first = walk.first_seq
    if walk.anchored and first is not None and first - 1 not in purged_through:
        return walk.broken(
            first - 1, None, "events at the start of the chain were removed without a purge"
        )
    return None

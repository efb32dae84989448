"""The hash chain: each event's hash covers its content and the previous event's hash."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

GENESIS = "0" * 64
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _micros(ts: datetime) -> int:
    return (ts.astimezone(UTC) - _EPOCH) // _ONE_MICRO


_ONE_MICRO = datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - _EPOCH


def event_hash(
    *,
    chain: str,
    seq: int,
    ts: datetime,
    actor: str,
    action: str,
    target: str | None,
    request_id: str | None,
    client: str | None,
    outcome: str,
    details: dict[str, Any],
    prev_hash: str,
) -> str:
    canonical = json.dumps(
        [
            chain,
            seq,
            _micros(ts),
            actor,
            action,
            target,
            request_id,
            client,
            outcome,
            details,
            prev_hash,
        ],
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def row_hash(row: Any) -> str:
    return event_hash(
        chain=row.chain,
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
    )

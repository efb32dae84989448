"""The chain: each event's hash covers its content and the previous event's hash.

Hashes are HMAC-SHA256 under the server's audit key (`<state dir>/audit.key`, see `key.py`), so
whoever can write the database but not read the key cannot rewrite an event and chain the rest
again. Events recorded before the key existed (`keyed_from_seq` of the chain's head) keep their
plain SHA-256. The last verified point of a chain carries a MAC too, so a verify can start there.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

GENESIS = "0" * 64
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MICRO = datetime(1970, 1, 1, 0, 0, 0, 1, tzinfo=UTC) - _EPOCH

_key: bytes | None = None


def use_key(key: bytes) -> None:
    """The audit key of this process (loaded once at start-up, before anything is recorded)."""
    global _key
    _key = key


def _mac(data: bytes) -> str:
    if _key is None:
        raise RuntimeError("the audit key is not loaded (service.bootstrap.prepare loads it)")
    return hmac.new(_key, data, hashlib.sha256).hexdigest()


def _micros(ts: datetime) -> int:
    return (ts.astimezone(UTC) - _EPOCH) // _ONE_MICRO


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
    keyed: bool = True,
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
    ).encode()
    return _mac(canonical) if keyed else hashlib.sha256(canonical).hexdigest()


def row_hash(row: Any, keyed: bool = True) -> str:
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
        keyed=keyed,
    )


def checkpoint_mac(chain: str, seq: int, hash_at_seq: str, keyed_from_seq: int) -> str:
    """The MAC of a verified point: the chain was whole up to event `seq`, whose hash it was."""
    fields = ("airlock-audit-verified", chain, str(seq), hash_at_seq, str(keyed_from_seq))
    return _mac("\x00".join(fields).encode())

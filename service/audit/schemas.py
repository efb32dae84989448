from __future__ import annotations

from datetime import datetime
from typing import Any

import msgspec


class AuditEventOut(msgspec.Struct, kw_only=True):
    id: int
    tenant_id: str | None
    seq: int
    ts: datetime
    actor: str
    action: str
    target: str | None
    request_id: str | None
    client: str | None
    outcome: str
    details: dict[str, Any]
    prev_hash: str
    hash: str


class AuditPage(msgspec.Struct, kw_only=True):
    items: list[AuditEventOut]
    next_cursor: str | None


class BrokenLink(msgspec.Struct, kw_only=True):
    seq: int
    event_id: int | None
    reason: str


class AuditVerification(msgspec.Struct, kw_only=True):
    tenant_id: str | None
    valid: bool
    events_checked: int
    first_seq: int | None
    last_seq: int | None
    # Set when retention removed the oldest events: the first kept event anchors the chain.
    anchored_after_purge: bool
    broken: BrokenLink | None
    # Where this verify started: the last verified point (the events after it were checked),
    # or None when it walked the whole chain.
    checked_from_seq: int | None = None
    # Events from this seq on carry the audit key's MAC; older ones (recorded before the key
    # existed) plain SHA-256.
    keyed_from_seq: int = 1

"""Callers told to wait, told again before they are authenticated.

A refused request costs the server most of what a served one does when it is authenticated
first (on SQLite a key is looked up on every request), and a client that does not honour
Retry-After sends the next one at once. So a refusal is remembered by the digest of the
credential it came with: until its Retry-After has passed, a request with that credential for
the same class of route is refused at once, with no lookup. Only the holder of that exact
credential is answered so (a credential revoked meanwhile is told to wait, not refused, until
then); every other request is authenticated and counted as usual.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

from service.ratelimit.buckets import Rate

MAX_ENTRIES = 10_000


@dataclass(frozen=True, slots=True)
class Refusal:
    counted_as: str
    rate: Rate
    until: float  # time.monotonic()

    def wait(self, now: float) -> float:
        return self.until - now


class Refusals:
    def __init__(self, max_entries: int = MAX_ENTRIES) -> None:
        self.max_entries = max_entries
        self._tenant_of: dict[bytes, str] = {}  # credential digest -> its tenant
        self._buckets: dict[str, Refusal] = {}  # bucket key -> until when it is empty

    def remember(self, scope: dict[str, Any], tenant_id: str, key: str, refusal: Refusal) -> None:
        credential = _credential(scope)
        if credential is None:  # a preview link's cookie: authenticated as usual
            return
        if len(self._tenant_of) >= self.max_entries or len(self._buckets) >= self.max_entries:
            self._tenant_of.clear()
            self._buckets.clear()
        self._tenant_of[_digest(credential)] = tenant_id
        self._buckets[key] = refusal

    def pending(self, scope: dict[str, Any], key_of: Any) -> Refusal | None:
        """The refusal still in force for this request's caller and class, if any. `key_of`:
        the bucket key of a tenant for this request."""
        if not self._tenant_of:
            return None
        credential = _credential(scope)
        tenant_id = None if credential is None else self._tenant_of.get(_digest(credential))
        if tenant_id is None:
            return None
        refusal = self._buckets.get(key_of(tenant_id))
        if refusal is None or refusal.wait(time.monotonic()) <= 0:
            return None
        return refusal


def _credential(scope: dict[str, Any]) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            return bytes(value)
    return None


def _digest(credential: bytes) -> bytes:
    return hashlib.sha256(credential).digest()

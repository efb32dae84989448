"""Token buckets counted in this process's memory: the whole count where one process serves
the API (the embedded SQLite database).

A bucket holds up to `burst` tokens and gains `per_s` a second; a request takes one, and is
refused while none is left, told how long until one is.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

# A bucket holds this many seconds of its rate: a client may save up a short burst.
BURST_S = 5
# Past this many buckets, those refilled to the brim (as good as absent) are dropped.
MAX_BUCKETS = 50_000


@dataclass(frozen=True, slots=True)
class Rate:
    per_s: float

    @property
    def burst(self) -> float:
        return self.per_s * BURST_S


@dataclass(slots=True)
class TokenBucket:
    tokens: float
    at: float  # time.monotonic() of the last refill
    rate: Rate  # the rate it was last refilled at (a tenant's quota may change)

    def take(self, rate: Rate, now: float) -> float:
        """0 when a token was taken, else the seconds until one is there."""
        self.tokens = min(rate.burst, self.tokens + (now - self.at) * rate.per_s)
        self.at, self.rate = now, rate
        if self.tokens >= 1:
            self.tokens -= 1
            return 0.0
        return (1 - self.tokens) / rate.per_s

    def full(self, now: float) -> bool:
        return self.tokens + (now - self.at) * self.rate.per_s >= self.rate.burst


class MemoryBuckets:
    """Every bucket of this process, by key."""

    def __init__(self, max_buckets: int = MAX_BUCKETS) -> None:
        self.max_buckets = max_buckets
        self._buckets: dict[str, TokenBucket] = {}

    async def take(self, key: str, rate: Rate) -> float:
        now = time.monotonic()
        bucket = self._buckets.get(key)
        if bucket is None:
            if len(self._buckets) >= self.max_buckets:
                self._prune(now)
            bucket = self._buckets[key] = TokenBucket(rate.burst, now, rate)
        return bucket.take(rate, now)

    def _prune(self, now: float) -> None:
        kept = {key: b for key, b in self._buckets.items() if not b.full(now)}
        if len(kept) >= self.max_buckets // 2:
            # More callers at once than the map holds (many addresses): the oldest buckets
            # go, which lets those callers through again, rather than memory grow unbounded.
            kept = dict(list(kept.items())[len(kept) - self.max_buckets // 2 :])
        self._buckets = kept

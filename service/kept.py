"""Answers kept for a few seconds, all forgotten at once when what they depend on changes.

A `Kept` holds at most `max_entries` answers, each for `ttl_s`. It reads a count of changes
(`Changes`): whenever the count has moved since it last looked, every answer is forgotten. An
answer is stored only if the count has not moved since its lookup began (`mark()`, taken
before the lookup and handed to `put`), so a lookup that raced a change is never kept. When
full, the answer stored first makes room.
"""

from __future__ import annotations

import time
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class Changes:
    """A count of the changes this process has seen, which the `Kept` answers depending on
    them compare (read as an attribute: it is on every authenticated request)."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = 0

    def note(self) -> None:
        self.seen += 1


class Kept(Generic[K, V]):
    __slots__ = ("_as_of", "_changes", "_entries", "max_entries", "ttl_s")

    def __init__(self, changes: Changes, ttl_s: float, max_entries: int) -> None:
        self._changes = changes
        self.ttl_s = ttl_s
        self.max_entries = max_entries
        self._entries: dict[K, tuple[V, float]] = {}
        self._as_of = changes.seen

    def mark(self) -> int:
        """Taken before a lookup, handed back to `put`."""
        return self._changes.seen

    def _forget_if_changed(self) -> None:
        seen = self._changes.seen
        if self._as_of != seen:
            self._entries.clear()
            self._as_of = seen

    def get(self, key: K) -> V | None:
        seen = self._changes.seen
        if self._as_of != seen:
            self._entries.clear()
            self._as_of = seen
            return None
        entry = self._entries.get(key)
        if entry is None:
            return None
        value, until = entry
        if until <= time.monotonic():
            del self._entries[key]
            return None
        return value

    def put(self, key: K, value: V, mark: int) -> None:
        if mark != self._changes.seen:
            return
        self._forget_if_changed()
        if key not in self._entries and len(self._entries) >= self.max_entries:
            del self._entries[next(iter(self._entries))]
        self._entries[key] = (value, time.monotonic() + self.ttl_s)

    def discard(self, key: K) -> None:
        self._entries.pop(key, None)

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

"""Kept answers: each lapses after its time, all are forgotten when the change count moves, an
answer looked up across a change is not stored, and a full store makes room from its oldest."""

from __future__ import annotations

import pytest

from service import kept as kept_module
from service.kept import Changes, Kept

pytestmark = pytest.mark.sqlite


class Clock:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1000.0
        monkeypatch.setattr(kept_module.time, "monotonic", lambda: self.now)


def test_an_answer_lapses_after_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock(monkeypatch)
    kept: Kept[str, int] = Kept(Changes(), ttl_s=5.0, max_entries=10)
    kept.put("a", 1, kept.mark())
    clock.now += 4.9
    assert kept.get("a") == 1
    clock.now += 0.1
    assert kept.get("a") is None
    assert len(kept) == 0


def test_a_change_forgets_every_answer() -> None:
    count = Changes()
    kept: Kept[str, int] = Kept(count, ttl_s=60.0, max_entries=10)
    kept.put("a", 1, kept.mark())
    kept.put("b", 2, kept.mark())
    count.note()
    assert kept.get("b") is None and len(kept) == 0
    kept.put("b", 3, kept.mark())  # after the change: kept again
    assert kept.get("b") == 3


def test_a_lookup_that_raced_a_change_is_not_stored() -> None:
    count = Changes()
    kept: Kept[str, int] = Kept(count, ttl_s=60.0, max_entries=10)
    mark = kept.mark()
    count.note()  # a revocation while the lookup ran
    kept.put("a", 1, mark)
    assert kept.get("a") is None


def test_a_full_store_makes_room_from_its_oldest() -> None:
    kept: Kept[str, int] = Kept(Changes(), ttl_s=60.0, max_entries=2)
    kept.put("a", 1, kept.mark())
    kept.put("b", 2, kept.mark())
    kept.put("b", 20, kept.mark())  # a replaced answer takes no room
    assert (kept.get("a"), kept.get("b")) == (1, 20)
    kept.put("c", 3, kept.mark())
    assert (kept.get("a"), kept.get("b"), kept.get("c")) == (None, 20, 3)
    kept.discard("b")
    assert kept.get("b") is None and len(kept) == 1

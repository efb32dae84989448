"""The `Server-Timing` header (W3C Server Timing): where a request's time went, measured
inside the server, so a client can tell the API's own time from its command's.

A route opens a collection for its request (`collect`); code on the request's path, and the
tasks it starts (they copy the request's context), add what they measured (`add`); the route
puts the collection in its answer's header. Nothing is collected outside a route that asks.
"""

from __future__ import annotations

from contextvars import ContextVar

_current: ContextVar[Timings | None] = ContextVar("server_timing", default=None)


class Timings:
    __slots__ = ("entries",)

    def __init__(self) -> None:
        self.entries: list[tuple[str, float]] = []

    def header(self) -> dict[str, str]:
        """The answer's header, or none when nothing was measured."""
        if not self.entries:
            return {}
        return {"Server-Timing": ", ".join(f"{n};dur={s * 1e3:.3f}" for n, s in self.entries)}


def collect() -> Timings:
    """A collection for this request (and the tasks it starts from now on)."""
    timings = Timings()
    _current.set(timings)
    return timings


def add(name: str, seconds: float) -> None:
    """Record a measured step, when the request being served collects them."""
    timings = _current.get()
    if timings is not None:
        timings.entries.append((name, seconds))

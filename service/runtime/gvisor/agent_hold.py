"""What the host side of an agent link holds back around a checkpoint, and for how long.

A checkpoint freezes the agent wherever it is; a frame half-way through a pipe at that moment
would be cut in two when the sandbox is restored onto new pipes. So before a checkpoint both
sides hold what they have to say (the agent once it answered HOLD, the host from then on):
the host's frames wait here, in order, until the link is released on the pipes it has then.
The time held is counted, so an exec's deadline counts only the time its sandbox ran.
"""

from __future__ import annotations

import asyncio
import time


class Hold:
    def __init__(self) -> None:
        self.queued: list[bytes] = []
        self._since: float | None = None
        self._total = 0.0
        self._released = asyncio.Event()
        self._released.set()

    @property
    def held(self) -> bool:
        return self._since is not None

    def begin(self) -> None:
        if self._since is None:
            self._since = time.monotonic()
            self._released.clear()

    def end(self) -> list[bytes]:
        """Stop holding; the frames held back, oldest first."""
        if self._since is not None:
            self._total += time.monotonic() - self._since
            self._since = None
            self._released.set()
        frames, self.queued = self.queued, []
        return frames

    def total_s(self) -> float:
        """Seconds held so far, the current hold included."""
        now = time.monotonic()
        return self._total + (now - self._since if self._since is not None else 0.0)

    async def released(self) -> None:
        await self._released.wait()

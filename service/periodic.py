"""The loop every background job runs in: one pass at a time, failures logged, never fatal."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from service.errors import ServiceUnavailable

log = logging.getLogger("airlock.jobs")


class PeriodicJob:
    """Runs `run_once` every `interval_s`; a pass that returns True is followed at once."""

    name = "job"

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._task: asyncio.Task[None] | None = None

    async def run_once(self) -> bool:
        raise NotImplementedError

    async def pause(self) -> None:
        """Between passes; a job that can be woken early overrides this."""
        await asyncio.sleep(self.interval_s)

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name=self.name)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    async def _loop(self) -> None:
        while True:
            again = False
            try:
                again = await self.run_once()
            except asyncio.CancelledError:
                raise
            except ServiceUnavailable as exc:
                log.warning("%s skipped: %s", self.name, exc.detail)
            except Exception:
                log.exception("%s pass failed; retrying next interval", self.name)
            if not again:
                await self.pause()

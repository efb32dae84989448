"""The shape of a periodic pass over this node's sandboxes (every node's when it has no id):
the TTL reaper's (service.jobs.ttl) and the idle sleeper's. A pass returns the ids of the
sandboxes it acted on, and the log says which."""

from __future__ import annotations

import logging

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.periodic import PeriodicJob
from service.runtime.holder import RuntimeHolder


class SandboxPass(PeriodicJob):
    # What the log says of the sandboxes a pass acted on, and in which logger.
    acted = "sandboxes"
    log = logging.getLogger("airlock.jobs")

    def __init__(
        self,
        db: async_sessionmaker[AsyncSession],
        holder: RuntimeHolder,
        interval_s: float,
        node_id: str | None = None,
    ) -> None:
        super().__init__(interval_s)
        self.db = db
        self.holder = holder
        self.node_id = node_id

    async def one_pass(self) -> list[str]:
        """One pass; the ids of the sandboxes it acted on."""
        raise NotImplementedError

    async def run_once(self) -> bool:
        ids = await self.one_pass()
        if ids:
            self.log.info("%s: %s", self.acted, ", ".join(ids))
        return False

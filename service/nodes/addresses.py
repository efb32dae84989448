"""Where each node is reached and whether it is lost, read again every ADDRESS_TTL_S."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from service.db.models import Node
from service.errors import NodeUnavailable
from service.nodes.leases import LOST

ADDRESS_TTL_S = 2.0


class Addresses:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._addresses: dict[str, str] = {}
        self._states: dict[str, str] = {}
        self._at = 0.0

    async def address(self, node_id: str) -> str:
        await self._fresh(node_id)
        address = self._addresses.get(node_id)
        if address is None:
            raise NodeUnavailable(f"node {node_id} is not registered")
        return address

    async def is_lost(self, node_id: str) -> bool:
        await self._fresh(node_id)
        return self._states.get(node_id) == LOST

    def remember(self, nodes: Iterable[Any]) -> None:
        """Every node's address and state, as just read (rows or placement's views)."""
        nodes = list(nodes)
        self._addresses = {n.id: n.address for n in nodes}
        self._states = {n.id: n.state for n in nodes}
        self._at = time.monotonic()

    async def _fresh(self, node_id: str) -> None:
        """Read again when older than ADDRESS_TTL_S or when this node is not among them (one
        table: what sandboxes hold is placement's business)."""
        if time.monotonic() - self._at <= ADDRESS_TTL_S and node_id in self._addresses:
            return
        async with self.engine.connect() as conn:
            self.remember((await conn.execute(select(Node.id, Node.address, Node.state))).all())

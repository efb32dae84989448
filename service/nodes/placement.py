"""Where sandboxes go: the nodes as the database has them, and placement of a sandbox on the
freest of a few nodes with room.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row
from sqlalchemy.ext.asyncio import AsyncEngine

from service.nodes import queries
from service.nodes.capacity import promised_memory
from service.nodes.leases import READY, db_now

# Placement looks at this many nodes with room, picked at random, and takes the freest: close
# to the best choice at a fraction of the contention of everyone picking the same node.
CANDIDATES = 3


@dataclass(frozen=True, slots=True)
class NodeView:
    id: str
    address: str
    state: str
    live: bool  # its lease has not run out
    runtime: str
    platform: str
    vcpus: float
    memory_mib: int
    held_vcpus: float
    held_memory_mib: int  # as capacity.promised_memory counts it on this node

    def room(self, ask: Ask, overcommit: tuple[float, float]) -> float | None:
        """The fraction left free once a sandbox of this size is here; None if it does not fit
        within the node's capacity times the (CPU, memory) overcommit ratios."""
        cpu_cap = self.vcpus * overcommit[0]
        memory_cap = self.memory_mib * overcommit[1]
        cpu_left = cpu_cap - self.held_vcpus - ask.vcpus
        memory_left = (
            memory_cap - self.held_memory_mib - promised_memory(self.runtime, ask.memory_mib,
                                                                ask.disk_mib)
        )  # fmt: skip
        if cpu_left < 0 or memory_left < 0:
            return None
        return min(cpu_left / cpu_cap, memory_left / memory_cap)


def place(
    nodes: list[NodeView],
    ask: Ask,
    overcommit: tuple[float, float],
    rng: random.Random | None = None,
) -> list[NodeView]:
    """The nodes to try, best first: the freest of CANDIDATES ready nodes with room, then the
    others with room. Empty when none has room."""
    rng = rng or random.Random()  # noqa: S311 (spreading load, not secrecy)
    fits = [
        (free, n)
        for n in nodes
        if n.state == READY and n.live and ask.runtime in (None, n.runtime)
        for free in [n.room(ask, overcommit)]
        if free is not None
    ]
    picked = rng.sample(fits, min(CANDIDATES, len(fits)))
    rest = [f for f in fits if f not in picked]
    ordered = sorted(picked, key=lambda f: -f[0]) + sorted(rest, key=lambda f: -f[0])
    return [n for _, n in ordered]


async def node_views(engine: AsyncEngine) -> list[NodeView]:
    """Every node with what its live sandboxes hold, as the database has it now."""
    async with engine.connect() as conn:
        rows = (await conn.execute(queries.nodes_and_held(db_now(engine)))).all()
    return [_view(row) for row in rows]


def _view(row: Row[Any]) -> NodeView:
    held = queries.Held.read(row)
    return NodeView(
        id=row.id,
        address=row.address,
        state=row.state,
        live=bool(row.live),
        runtime=row.runtime,
        platform=row.platform,
        vcpus=float(row.vcpus),
        memory_mib=int(row.memory_mib),
        held_vcpus=held.vcpus,
        held_memory_mib=promised_memory(row.runtime, held.memory_mib, held.disk_mib),
    )


@dataclass(frozen=True, slots=True)
class Ask:
    """What a create asks of a node, and where it should go first."""

    vcpus: float
    memory_mib: int
    disk_mib: int
    only_on: str | None = None
    warm: frozenset[str] = frozenset()
    holding: frozenset[str] = frozenset()
    runtime: str | None = None

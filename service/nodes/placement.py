"""Where sandboxes go and where they are: the nodes as the database has them, placement of a
sandbox on the freest of a few nodes with room, and the owner caches of this process's
routers (forgotten when a sandbox moves: service.nodes.moves).
"""

from __future__ import annotations

import random
import weakref
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncEngine

from service.db.models import Node as NodeRow
from service.db.models import Sandbox as SandboxRow
from service.nodes.capacity import promised_memory
from service.nodes.leases import READY, db_now
from service.sandboxes.states import ACTIVE

_ACTIVE = [s.value for s in ACTIVE]

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
    held = (
        select(
            SandboxRow.node_id,
            func.coalesce(func.sum(SandboxRow.cpus), 0).label("cpus"),
            func.coalesce(func.sum(SandboxRow.memory_mib), 0).label("memory"),
            func.coalesce(func.sum(SandboxRow.disk_mib), 0).label("disk"),
        )
        .where(SandboxRow.state.in_(_ACTIVE), SandboxRow.node_id.is_not(None))
        .group_by(SandboxRow.node_id)
        .subquery()
    )
    query = select(
        NodeRow.id,
        NodeRow.address,
        NodeRow.state,
        NodeRow.lease_expires_at > db_now(engine),
        NodeRow.vcpus,
        NodeRow.memory_mib,
        held.c.cpus,
        held.c.memory,
        held.c.disk,
        NodeRow.runtime,
        NodeRow.platform,
    ).outerjoin(held, held.c.node_id == NodeRow.id)
    async with engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    views = [
        NodeView(
            id=r[0],
            address=r[1],
            state=r[2],
            live=bool(r[3]),
            runtime=r[9],
            platform=r[10],
            vcpus=float(r[4]),
            memory_mib=int(r[5]),
            held_vcpus=float(r[6] or 0),
            held_memory_mib=promised_memory(r[9], int(r[7] or 0), int(r[8] or 0)),
        )
        for r in rows
    ]
    return views


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


class OwnerCache(Protocol):
    def forget(self, sandbox_id: str) -> None: ...

    def forget_all(self) -> None: ...


_caches: weakref.WeakSet[OwnerCache] = weakref.WeakSet()


def remember(cache: OwnerCache) -> None:
    _caches.add(cache)


def forget_owner(sandbox_id: str) -> None:
    """This process moved the sandbox to another node: no router here keeps its old owner."""
    for cache in list(_caches):
        cache.forget(sandbox_id)


def forget_owners() -> None:
    """This process's node was lost and registers again: other processes may have moved its
    sandboxes meanwhile, so every owner is read again."""
    for cache in list(_caches):
        cache.forget_all()

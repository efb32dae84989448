"""A node never takes a sandbox past its capacity times the overcommit ratios.

Placement (service.nodes.routing) picks a node with room from what the record says; two
replicas may pick the same node at once, so the node checks again as it records the sandbox,
holding its own row locked (PostgreSQL) so concurrent creates on it count one after another.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from service.errors import NODE_FULL_HEADER, NoCapacity
from service.nodes import queries


def promised_memory(runtime: str, memory_mib: int, disk_mib: int) -> int:
    """The host memory a sandbox is promised on a node of this runtime: its memory, on every
    runtime (a gVisor sandbox's writable space is a file system on the node's disk, which the
    runtime allocates in full when it starts the sandbox, refusing what does not fit; its
    own admission stays the last word on memory)."""
    del runtime, disk_mib
    return memory_mib


async def check_room(
    session: AsyncSession,
    node_id: str,
    caps: tuple[float, int, int],
    overcommit: tuple[float, float],
) -> None:
    """`caps`: the sandbox's vCPUs, memory and writable space (MiB)."""
    vcpus, memory_mib, disk_mib = caps
    node = await _capacity(session, node_id)
    if node is None:
        return  # not registered yet (its first heartbeat is due): no capacity on record
    on_node = await _held(session, node_id)
    held_vcpus = on_node.vcpus
    held = promised_memory(node.runtime, on_node.memory_mib, on_node.disk_mib)
    asked = promised_memory(node.runtime, memory_mib, disk_mib)
    cpu_cap, memory_cap = node.vcpus * overcommit[0], node.memory_mib * overcommit[1]
    if held_vcpus + vcpus > cpu_cap or held + asked > memory_cap:
        raise NoCapacity(
            f"node {node_id} has no room for {vcpus:g} vCPUs and {asked} MiB of memory now "
            f"({held_vcpus:g} of {cpu_cap:g} vCPUs and {held} of {memory_cap:.0f} MiB "
            "promised)",
            headers={NODE_FULL_HEADER: "1"},
        )


async def _capacity(session: AsyncSession, node_id: str) -> queries.NodeCapacity | None:
    """The node's capacity, its row held locked on PostgreSQL until the transaction ends."""
    query = queries.NODE_CAPACITY
    if session.bind.dialect.name == "postgresql":
        query = query.with_for_update()
    found = (await session.execute(query, {"node_id": node_id})).one_or_none()
    return None if found is None else queries.NodeCapacity(**found._mapping)


async def _held(session: AsyncSession, node_id: str) -> queries.Held:
    found = (await session.execute(queries.HELD_ON_NODE, {"node_id": node_id})).one()
    return queries.Held.read(found)

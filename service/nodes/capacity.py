"""A node never takes a sandbox past its capacity times the overcommit ratios.

Placement (service.nodes.routing) picks a node with room from what the record says; two
replicas may pick the same node at once, so the node checks again as it records the sandbox,
holding its own row locked (PostgreSQL) so concurrent creates on it count one after another.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from service.db.models import Node
from service.db.models import Sandbox as SandboxRow
from service.errors import NODE_FULL_HEADER, NoCapacity
from service.sandboxes.states import ACTIVE

_ACTIVE = [s.value for s in ACTIVE]


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
    query = select(Node.vcpus, Node.memory_mib, Node.runtime).where(Node.id == node_id)
    if session.bind.dialect.name == "postgresql":
        query = query.with_for_update()
    node = (await session.execute(query)).one_or_none()
    if node is None:
        return  # not registered yet (its first heartbeat is due): no capacity on record
    held_vcpus, held_memory, held_disk = (
        await session.execute(
            select(
                func.coalesce(func.sum(SandboxRow.cpus), 0),
                func.coalesce(func.sum(SandboxRow.memory_mib), 0),
                func.coalesce(func.sum(SandboxRow.disk_mib), 0),
            ).where(SandboxRow.node_id == node_id, SandboxRow.state.in_(_ACTIVE))
        )
    ).one()
    held = promised_memory(node.runtime, held_memory, held_disk)
    asked = promised_memory(node.runtime, memory_mib, disk_mib)
    cpu_cap, memory_cap = node.vcpus * overcommit[0], node.memory_mib * overcommit[1]
    if held_vcpus + vcpus > cpu_cap or held + asked > memory_cap:
        raise NoCapacity(
            f"node {node_id} has no room for {vcpus:g} vCPUs and {asked} MiB of memory now "
            f"({held_vcpus:g} of {cpu_cap:g} vCPUs and {held} of {memory_cap:.0f} MiB "
            "promised)",
            headers={NODE_FULL_HEADER: "1"},
        )

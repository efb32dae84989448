"""The SQL of placement and of a node's capacity check, named here, each read by column into
its record (service.nodes.placement, service.nodes.capacity)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, Select, bindparam, func, select

from service.db.models import Node
from service.db.models import Sandbox as SandboxRow
from service.sandboxes.states import ACTIVE

_ACTIVE = [s.value for s in ACTIVE]


@dataclass(frozen=True, slots=True)
class Held:
    """What a node's active sandboxes hold together."""

    vcpus: float
    memory_mib: int
    disk_mib: int

    @classmethod
    def read(cls, row: Any) -> Held:
        """From a row's `held_vcpus`, `held_memory_mib` and `held_disk_mib` (NULL: nothing)."""
        return cls(
            vcpus=float(row.held_vcpus or 0),
            memory_mib=int(row.held_memory_mib or 0),
            disk_mib=int(row.held_disk_mib or 0),
        )


@dataclass(frozen=True, slots=True)
class NodeCapacity:
    """A node's capacity as its record has it, and its runtime."""

    vcpus: float
    memory_mib: int
    runtime: str


# What the active sandboxes of each node hold, by node.
_HELD_BY_NODE = (
    select(
        SandboxRow.node_id,
        func.coalesce(func.sum(SandboxRow.cpus), 0).label("vcpus"),
        func.coalesce(func.sum(SandboxRow.memory_mib), 0).label("memory_mib"),
        func.coalesce(func.sum(SandboxRow.disk_mib), 0).label("disk_mib"),
    )
    .where(SandboxRow.state.in_(_ACTIVE), SandboxRow.node_id.is_not(None))
    .group_by(SandboxRow.node_id)
    .subquery("held")
)


def nodes_and_held(now: ColumnElement[object]) -> Select[Any]:
    """Every node, whether its lease still runs at `now` (`live`), and what its active
    sandboxes hold (`held_*`, NULL when none)."""
    return select(
        Node.id,
        Node.address,
        Node.state,
        (Node.lease_expires_at > now).label("live"),
        Node.vcpus,
        Node.memory_mib,
        Node.runtime,
        Node.platform,
        _HELD_BY_NODE.c.vcpus.label("held_vcpus"),
        _HELD_BY_NODE.c.memory_mib.label("held_memory_mib"),
        _HELD_BY_NODE.c.disk_mib.label("held_disk_mib"),
    ).outerjoin(_HELD_BY_NODE, _HELD_BY_NODE.c.node_id == Node.id)


# One node's capacity (NodeCapacity), by :node_id; no row when it is not registered.
NODE_CAPACITY = select(Node.vcpus, Node.memory_mib, Node.runtime).where(
    Node.id == bindparam("node_id")
)

# What the active sandboxes on :node_id hold (Held).
HELD_ON_NODE = select(
    func.coalesce(func.sum(SandboxRow.cpus), 0).label("held_vcpus"),
    func.coalesce(func.sum(SandboxRow.memory_mib), 0).label("held_memory_mib"),
    func.coalesce(func.sum(SandboxRow.disk_mib), 0).label("held_disk_mib"),
).where(SandboxRow.node_id == bindparam("node_id"), SandboxRow.state.in_(_ACTIVE))

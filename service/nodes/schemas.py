from __future__ import annotations

from datetime import datetime
from typing import Literal

import msgspec

NodeState = Literal["ready", "draining", "lost"]


class Capacity(msgspec.Struct, kw_only=True):
    vcpus: float
    memory_mib: int
    disk_mib: int


class NodeCapacity(Capacity, kw_only=True):
    pids: int


class Node(msgspec.Struct, kw_only=True):
    """A host that runs sandboxes: what it offers, what its live sandboxes hold, its lease."""

    id: str
    address: str
    runtime: str
    platform: str | None
    state: NodeState
    capacity: NodeCapacity
    allocated: Capacity  # the caps of its sandboxes that are not stopped or failed
    sandboxes: int
    labels: dict[str, str]
    version: str
    registered_at: datetime
    lease_expires_at: datetime


class NodeList(msgspec.Struct, kw_only=True):
    items: list[Node]

"""The node in this process: what it says of itself, and its heartbeat's set-up."""

from __future__ import annotations

import os
import shutil
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.errors import ServiceUnavailable
from service.nodes import capacity
from service.nodes.heartbeat import NodeHeartbeat, node_id_for
from service.nodes.leases import Leases, NodeInfo
from service.runtime.gvisor import cgroups
from service.runtime.gvisor.host_memory import default_budget_mib
from service.runtime.holder import RuntimeHolder
from service.settings import Role, Settings

MIB = 1 << 20

# A node's CPU and memory overcommit ratios (AIRLOCK_CPU_OVERCOMMIT, AIRLOCK_MEMORY_OVERCOMMIT).
Overcommit = tuple[float, float]


def local_node_id(settings: Settings) -> str:
    return settings.node_id or node_id_for(settings.state_dir)


@dataclass(frozen=True, slots=True)
class LocalNode:
    """What this process is and, when it runs a node, the node's id and ratios: built once by
    `create_app` and handed to what starts sandboxes here (creates, forks, wakes)."""

    # This process's node; None on an API replica and in tools that start sandboxes alone.
    id: str | None = None
    # A start here checks the node's room with these; None: unchecked (tools, tests).
    overcommit: Overcommit | None = None
    role: Role = Role.ALL

    @classmethod
    def of(cls, settings: Settings) -> LocalNode:
        return cls(
            local_node_id(settings) if settings.runs_node else None,
            (settings.cpu_overcommit, settings.memory_overcommit),
            settings.role,
        )

    async def check_room(self, session: AsyncSession, caps: tuple[float, int, int]) -> None:
        """NoCapacity when this node cannot take a sandbox of `caps` (vCPUs, memory and disk in
        MiB) more; nothing is checked without a node here or its ratios."""
        if self.id is not None and self.overcommit is not None:
            await capacity.check_room(session, self.id, caps, self.overcommit)

    @classmethod
    def unchecked(cls, settings: Settings) -> LocalNode:
        """This host's node for starts that do not check its room (a review's own sandboxes)."""
        return cls(local_node_id(settings), None, settings.role)


def _pids_capacity() -> int:
    """The share of the host's pid space all sandboxes together are held to."""
    return int((cgroups.pid_max() or 32768) * cgroups.SANDBOX_PID_SHARE)


def describe(settings: Settings, runtimes: RuntimeHolder, version: str) -> NodeInfo:
    """This host's node as it stands now (the runtime's name once one is open)."""
    runtime = runtimes.current
    return NodeInfo(
        id=local_node_id(settings),
        address=settings.node_address or f"http://{settings.host}:{settings.port}",
        runtime=runtime.name if runtime is not None else "unavailable",
        platform=None,
        vcpus=float(os.cpu_count() or 1),
        memory_mib=settings.host_memory_mib or default_budget_mib(),
        disk_mib=shutil.disk_usage(settings.state_dir).free // MIB,
        pids=_pids_capacity(),
        version=version,
    )


def heartbeat(
    settings: Settings,
    db: async_sessionmaker[AsyncSession],
    runtimes: RuntimeHolder,
    version: str,
    on_return: Callable[[], Awaitable[None]] | None = None,
) -> NodeHeartbeat:
    """The job that registers this host's node and keeps its lease; `on_return` runs when the
    node registers again after it was lost (the start-up one has its own repair)."""
    registrations = 0

    async def registered(_node_id: str) -> None:
        nonlocal registrations
        registrations += 1
        if registrations > 1 and on_return is not None:
            await on_return()

    async def current() -> NodeInfo:
        try:
            await runtimes.get()  # the node says which runtime it runs, once one opens
        except ServiceUnavailable:
            pass
        return describe(settings, runtimes, version)

    return NodeHeartbeat(
        Leases(db, settings.node_lease_s), current, settings.node_heartbeat_s, registered
    )

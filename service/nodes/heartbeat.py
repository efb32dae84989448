"""A node's heartbeat: register at start, renew the lease every interval, register again when
the lease ran out (then the runtime reconciles), and stop when another start of the same
node took its place."""

from __future__ import annotations

import hashlib
import logging
import re
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

from service.nodes.leases import LOST, REPLACED, Leases, NodeInfo
from service.periodic import PeriodicJob

log = logging.getLogger("airlock.nodes")

_NOT_ID = re.compile(r"[^a-z0-9-]+")


def node_id_for(state_dir: Path, hostname: str | None = None) -> str:
    """A stable id for the node of this host and state dir: the host name, made safe for a
    URL path, and a short hash of the state dir (two state dirs on one host are two nodes)."""
    host = _NOT_ID.sub("-", (hostname or socket.gethostname()).lower()).strip("-")[:40]
    host = host.strip("-") or "host"
    digest = hashlib.sha256(str(Path(state_dir).resolve()).encode()).hexdigest()[:8]
    return f"{host}-{digest}"


class NodeHeartbeat(PeriodicJob):
    name = "node heartbeat"

    def __init__(
        self,
        leases: Leases,
        describe: Callable[[], Awaitable[NodeInfo]],
        interval_s: float,
        on_registered: Callable[[str], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(interval_s)
        self.leases = leases
        self.describe = describe
        self.on_registered = on_registered
        self.node_id: str | None = None
        self.incarnation: str | None = None
        self.state: str | None = None
        self.retired = False  # another process registered this node: nothing more to do

    async def run_once(self) -> bool:
        if self.retired:
            return False
        if self.incarnation is not None and self.node_id is not None:
            self.state = await self.leases.renew(self.node_id, self.incarnation)
            if self.state == REPLACED:
                # Another start of this node holds its place now: two processes acting for one
                # node would fight over its sandboxes, so this one stops.
                log.error("node %s was registered by another process: this one stops", self.node_id)
                self.retired = True
                return False
            if self.state != LOST:
                return False
            log.warning("node %s lost its lease: registering again", self.node_id)
        info = await self.describe()
        self.incarnation = await self.leases.register(info)
        self.node_id = info.id
        log.info("node %s registered (%s, %s)", info.id, info.address, info.runtime)
        if self.on_registered is not None:
            await self.on_registered(info.id)
        self.state = await self.leases.renew(info.id, self.incarnation)
        return False

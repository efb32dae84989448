"""Sandbox calls go to the node that holds the sandbox; a create goes to the node placement picks.

A route says it is about one sandbox's runtime with `opt={"routed": "sandbox"}` (exec, files,
archives, kill, network and TTL changes, delete), or `"create"`. On an API replica
(`AIRLOCK_ROLE=api`) such a request is forwarded, once authenticated, to the owning node's
internal address (service.nodes.proxy). Reads the database answers (a sandbox, its execs, its
transitions) are answered by the replica itself. On the all-in-one server the sandboxes are its
own and nothing is forwarded, unless a sandbox is on another node of the same database.

`NodeRouter` holds the parts the routing middleware (service.middleware.routing) asks: which
node holds a sandbox (owners.py, cached: a sandbox's node changes only while it is paused), where
each node is reached (addresses.py, read again every ADDRESS_TTL_S), the proxy, and the
placement of a create (here).
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncEngine, AsyncSession, async_sessionmaker

from service.auth.principal import Principal
from service.db.pg import is_postgres
from service.errors import NoCapacity
from service.nodes import placement
from service.nodes.addresses import Addresses
from service.nodes.credentials import NodeCredentials
from service.nodes.local import LocalNode
from service.nodes.owners import Owners
from service.nodes.placement import Ask
from service.nodes.proxy import NodeProxy, read_all
from service.settings import Role


class Asked(Protocol):
    """What a tenant's create asks for (caps, and where its template's snapshot is), from the
    request's body."""

    def __call__(self, tenant_id: str, body: bytes) -> Awaitable[Ask]: ...


class NodeRouter:
    def __init__(
        self,
        db: async_sessionmaker[AsyncSession],
        node: LocalNode,
        credentials: NodeCredentials,
        *,
        asked: Asked,
        owners: Owners,
    ) -> None:
        # What a create asks of placement, from its body (service.flows.placing).
        self.asked = asked
        self.engine: AsyncEngine = db.kw["bind"]
        # What this process is; its node's id is None on an API replica.
        self.node = node
        # The embedded database serves one process: every sandbox in it is this node's.
        self.alone = node.role == Role.ALL and not is_postgres(self.engine)
        # Which node holds a sandbox: the app's one cache, told of moves by the resume flow.
        self.owners = owners
        self.addresses = Addresses(self.engine)
        self.proxy = NodeProxy(credentials, self.addresses, self.owners.forget)

    async def create(
        self, scope: dict[str, Any], receive: Any, send: Any, principal: Principal
    ) -> None:
        """Place a new sandbox: the request goes to the first node with room that answers."""
        assert principal.tenant_id is not None
        body = await read_all(receive)
        ask = await self.asked(principal.tenant_id, body)
        views = await placement.node_views(self.engine)
        self.addresses.remember(views)  # read anyway: the cache is fresh
        assert self.node.overcommit is not None
        order = placement.place(views, ask, self.node.overcommit)
        if ask.only_on is not None:
            order = [n for n in order if n.id == ask.only_on]
        else:
            # A claim from the warm pool starts nothing: nodes holding free members go first,
            # then nodes that have the snapshot on disk (the others fetch it first).
            order.sort(key=lambda n: (n.id not in ask.warm, n.id not in ask.holding))
        if not order:
            where = f"node {ask.only_on}" if ask.only_on else "ready node"
            raise NoCapacity(
                f"no {where} has room for {ask.vcpus:g} vCPUs, {ask.memory_mib} MiB of memory "
                f"and {ask.disk_mib} MiB of writable space now"
            )
        for node in order:
            if await self.proxy.forward(
                scope, receive, send, node.id, principal, body=body, placing=True
            ):
                return
        raise NoCapacity("no node with room could take the sandbox now")

    async def close(self) -> None:
        await self.proxy.close()

"""Which node holds a tenant's sandbox, as the record says, kept until it may have moved.

A sandbox's node changes only while it is paused (service.nodes.moves): one `Owners` is built
per app and handed to the router and to the flow that moves sandboxes (service.flows.resume),
which tells it what it moved; a node that says a sandbox is no longer its own makes the router
forget it, and a node that registers again after it was lost forgets them all.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine

from service.db.models import Sandbox as SandboxRow
from service.db.pg import driver_connection, is_postgres

OWNERS_MAX = 65536
# One read on the hot path of every routed call: asyncpg's own connection on PostgreSQL.
OWNER_SQL = "SELECT node_id FROM sandboxes WHERE id = $1 AND tenant_id = $2"


class Owners:
    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._owners: dict[str, str | None] = {}

    async def lookup(self, tenant_id: str, sandbox_id: str) -> tuple[bool, str | None]:
        """Whether the tenant has this sandbox, and its node (None for one with no node
        recorded, made before there were nodes), in one read; a node found is remembered."""
        key = f"{tenant_id}/{sandbox_id}"
        if key in self._owners:
            return True, self._owners[key]
        found, node = await self._read(tenant_id, sandbox_id)
        if not found:
            return False, None
        if node is not None:
            if len(self._owners) >= OWNERS_MAX:
                self._owners.clear()
            self._owners[key] = node
        return True, node

    async def _read(self, tenant_id: str, sandbox_id: str) -> tuple[bool, str | None]:
        if is_postgres(self.engine):
            async with driver_connection(self.engine) as conn:
                record = await conn.fetchrow(OWNER_SQL, sandbox_id, tenant_id)
            return (False, None) if record is None else (True, record["node_id"])
        query = select(SandboxRow.node_id).where(
            SandboxRow.id == sandbox_id, SandboxRow.tenant_id == tenant_id
        )
        async with self.engine.connect() as conn:
            row = (await conn.execute(query)).first()
        return (False, None) if row is None else (True, row.node_id)

    async def owner(self, tenant_id: str, sandbox_id: str) -> str | None:
        """The node of the tenant's sandbox; None when it has none or is not the tenant's (the
        replica then answers itself: a 404 for another tenant's)."""
        return (await self.lookup(tenant_id, sandbox_id))[1]

    def forget(self, sandbox_id: str) -> None:
        suffix = f"/{sandbox_id}"
        for key in [k for k in self._owners if k.endswith(suffix)]:
            self._owners.pop(key, None)

    def forget_all(self) -> None:
        self._owners.clear()

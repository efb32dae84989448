"""A tenant's stored exec output: the counter and what takes from it.

`tenant_usage.stored_output_bytes` is the sum of the tenant's `execs.stored_bytes`, the bytes
each finished exec left in `exec_chunks`. An exec's finish adds its bytes in the finish's own
statement (records.py); everything that deletes output goes through `purge` here, which
subtracts exactly what it deleted. Like a log store, nothing is refused for old output: past
the tenant's `max_stored_output_mib`, `trim` deletes the output of its oldest finished execs
until it is back under the cap (`OutputTrims`, after a finish). Their records stay, marked
`output_purged`.

Each change of the counter other than a finish holds the tenant's usage row locked for its
transaction, so two trims never both delete for the same excess.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, AsyncSession

from service.db.models import Exec, ExecChunk, TenantUsage
from service.tenants.schemas import Quotas

MIB = 1 << 20
DEFAULT_CAP_MIB = Quotas().max_stored_output_mib
# Execs looked at per step of a trim.
TRIM_BATCH = 200

Conn = AsyncConnection | AsyncSession

log = logging.getLogger("airlock.execs")


def cap_of(quotas: dict[str, Any]) -> int:
    """The tenant's cap in bytes, from its stored quotas (merged over the default)."""
    return int(quotas.get("max_stored_output_mib", DEFAULT_CAP_MIB)) * MIB


async def stored_output_bytes(conn: Conn, tenant_id: str) -> int:
    total = await conn.scalar(
        select(TenantUsage.stored_output_bytes).where(TenantUsage.tenant_id == tenant_id)
    )
    return int(total or 0)


async def _lock(conn: Conn, tenant_id: str) -> int:
    """The tenant's usage row, made if missing and locked to the end of the transaction (on
    SQLite transactions begin IMMEDIATE, so they already run one at a time)."""
    bind = conn.get_bind() if isinstance(conn, AsyncSession) else conn
    dialect = postgresql if bind.dialect.name == "postgresql" else sqlite
    await conn.execute(
        dialect.insert(TenantUsage)
        .values(tenant_id=tenant_id, stored_output_bytes=0)
        .on_conflict_do_nothing(index_elements=["tenant_id"])
    )
    total = await conn.scalar(
        select(TenantUsage.stored_output_bytes)
        .where(TenantUsage.tenant_id == tenant_id)
        .with_for_update()
    )
    return int(total or 0)


async def _purge(conn: Conn, tenant_id: str, execs: Sequence[tuple[str, int]]) -> int:
    """Delete the output of these finished execs (id, stored bytes) under the usage lock;
    returns the bytes freed."""
    if not execs:
        return 0
    ids = [exec_id for exec_id, _ in execs]
    await conn.execute(delete(ExecChunk).where(ExecChunk.exec_id.in_(ids)))
    await conn.execute(
        update(Exec)
        .where(Exec.tenant_id == tenant_id, Exec.id.in_(ids))
        .values(stored_bytes=0, output_purged=True)
    )
    freed = sum(size for _, size in execs)
    await conn.execute(
        update(TenantUsage)
        .where(TenantUsage.tenant_id == tenant_id)
        .values(stored_output_bytes=TenantUsage.stored_output_bytes - freed)
    )
    return freed


def _holding(tenant_id: str) -> Any:
    """The tenant's finished execs that hold output, oldest first."""
    return (
        select(Exec.id, Exec.stored_bytes)
        .where(Exec.tenant_id == tenant_id, Exec.stored_bytes > 0, Exec.state != "running")
        .order_by(Exec.created_at, Exec.id)
    )


async def trim(conn: Conn, tenant_id: str, cap: int) -> int:
    """Delete the output of the tenant's oldest finished execs until what it stores is at
    most `cap` bytes; returns how many execs lost their output."""
    total = await _lock(conn, tenant_id)
    freed = purged = 0
    while total - freed > cap:
        rows = (await conn.execute(_holding(tenant_id).limit(TRIM_BATCH))).all()
        if not rows:
            break  # what is left belongs to execs still running
        chosen: list[tuple[str, int]] = []
        for exec_id, size in rows:
            if total - freed - sum(s for _, s in chosen) <= cap:
                break
            chosen.append((exec_id, int(size)))
        freed += await _purge(conn, tenant_id, chosen)
        purged += len(chosen)
    return purged


async def purge_before(conn: Conn, tenant_id: str, cutoff: datetime) -> int:
    """Delete the output of the tenant's finished execs created before `cutoff`; returns how
    many execs lost their output."""
    await _lock(conn, tenant_id)
    purged = 0
    while True:
        stmt = _holding(tenant_id).where(Exec.created_at < cutoff).limit(TRIM_BATCH)
        rows = [(exec_id, int(size)) for exec_id, size in (await conn.execute(stmt)).all()]
        if not rows:
            return purged
        await _purge(conn, tenant_id, rows)
        purged += len(rows)


async def count_ended(conn: Conn, exec_ids: Sequence[str]) -> None:
    """Count the output of execs that ended without a finish of their own (cut off by a
    crash, then marked by the reconciler) into their tenants' usage."""
    for exec_id in exec_ids:
        row = (
            await conn.execute(select(Exec.tenant_id, Exec.stored_bytes).where(Exec.id == exec_id))
        ).one_or_none()
        if row is None or row.stored_bytes is not None:
            continue
        await _lock(conn, row.tenant_id)
        size = await conn.scalar(
            select(func.coalesce(func.sum(func.length(ExecChunk.data)), 0)).where(
                ExecChunk.exec_id == exec_id
            )
        )
        await conn.execute(update(Exec).where(Exec.id == exec_id).values(stored_bytes=size))
        await conn.execute(
            update(TenantUsage)
            .where(TenantUsage.tenant_id == row.tenant_id)
            .values(stored_output_bytes=TenantUsage.stored_output_bytes + int(size or 0))
        )


class OutputTrims:
    """Trims a tenant's stored output after an exec's finish took it past its cap: in a task
    of its own, after that exec's answer; a finish while one runs asks it for another round."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        # Tenants whose stored output passed their cap: the cap to trim to, and the trim task.
        self.over_cap: dict[str, int] = {}
        self.tasks: dict[str, asyncio.Task[None]] = {}

    def soon(self, tenant_id: str, cap: int) -> None:
        self.over_cap[tenant_id] = cap
        if tenant_id not in self.tasks:
            self.tasks[tenant_id] = asyncio.create_task(
                self._trim(tenant_id), name=f"trim-output-{tenant_id}"
            )

    async def _trim(self, tenant_id: str) -> None:
        try:
            while tenant_id in self.over_cap:
                cap = self.over_cap.pop(tenant_id)
                try:
                    async with self.engine.begin() as conn:
                        await trim(conn, tenant_id, cap)
                except Exception:  # the retention job's trim is the backstop
                    log.exception("trimming the stored output of %s failed", tenant_id)
        finally:
            self.tasks.pop(tenant_id, None)

    async def wait(self) -> None:
        """The trims under way, ended."""
        for task in list(self.tasks.values()):
            with contextlib.suppress(BaseException):
                await task

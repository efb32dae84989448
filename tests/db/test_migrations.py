"""The migrations build the schema the models describe, and take it down again cleanly."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import bindparam, inspect, text
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import async_sessionmaker

from service.db import migrate, models
from service.db.base import UTCDateTime
from service.db.models import Base
from service.db.session import make_engine
from tests.conftest import create_pg_database, database_kind

# Every table the models describe, and at least the foundation's.
TABLES = set(Base.metadata.tables)
assert {"tenants", "api_keys", "revoked_tokens", "audit_chain_heads", "audit_events"} <= TABLES


@pytest.fixture(params=["postgresql", "sqlite"])
async def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A database with nothing in it, of each kind this run can reach."""
    if request.param == "postgresql":
        if database_kind() != "postgresql":
            pytest.skip("PostgreSQL is not part of the SQLite smoke run")
        url, drop = await create_pg_database("airlock_migrations")
        yield url
        await drop()
    else:
        yield f"sqlite+aiosqlite:///{tmp_path / 'migrations.db'}"


async def on_connection(url: str, fn: Any) -> Any:
    engine = make_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(fn)
    finally:
        await engine.dispose()


def table_names(conn: Connection) -> set[str]:
    return set(inspect(conn).get_table_names())


def schema_differences(conn: Connection) -> list[Any]:
    context = MigrationContext.configure(conn, opts={"compare_type": True})
    return compare_metadata(context, Base.metadata)


@pytest.mark.sqlite
async def test_upgrade_downgrade_upgrade(empty_database: str) -> None:
    url = empty_database
    assert await on_connection(url, table_names) == set()

    await asyncio.to_thread(migrate.upgrade, url)
    assert await on_connection(url, table_names) == TABLES | {"alembic_version"}
    engine = make_engine(url)
    try:
        assert await migrate.current_revision(engine) == migrate.head_revision(url)
        await migrate.ensure_migrated(engine, url)
    finally:
        await engine.dispose()

    await asyncio.to_thread(migrate.downgrade, url, "base")
    assert await on_connection(url, table_names) == {"alembic_version"}

    # Nothing the first upgrade made (triggers, functions) is left behind to trip the second.
    await asyncio.to_thread(migrate.upgrade, url)
    assert await on_connection(url, table_names) == TABLES | {"alembic_version"}


@pytest.mark.sqlite
async def test_downgrade_removes_the_audit_guard(empty_database: str) -> None:
    url = empty_database
    await asyncio.to_thread(migrate.upgrade, url)
    await asyncio.to_thread(migrate.downgrade, url, "base")

    def leftovers(conn: Connection) -> list[str]:
        if conn.dialect.name == "postgresql":
            rows = conn.execute(
                text(
                    "SELECT proname FROM pg_proc WHERE proname = 'airlock_audit_events_guard' "
                    "UNION ALL SELECT tgname FROM pg_trigger WHERE tgname LIKE 'audit_events_%'"
                )
            )
        else:
            rows = conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger'"))
        return [r[0] for r in rows]

    assert await on_connection(url, leftovers) == []


@pytest.mark.sqlite
async def test_models_match_the_migrations(empty_database: str) -> None:
    url = empty_database
    await asyncio.to_thread(migrate.upgrade, url)
    assert await on_connection(url, schema_differences) == []


async def test_an_unmigrated_database_is_refused_with_the_fix(empty_database: str) -> None:
    from service.errors import ConfigurationError

    url = empty_database
    engine = make_engine(url)
    try:
        with pytest.raises(ConfigurationError, match="airlock migrate"):
            await migrate.ensure_migrated(engine, url)
    finally:
        await engine.dispose()


def audit_guards(conn: Connection) -> set[str]:
    if conn.dialect.name == "postgresql":
        rows = conn.execute(
            text(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = 'audit_events'::regclass "
                "AND NOT tgisinternal"
            )
        )
    else:
        rows = conn.execute(
            text(
                "SELECT name FROM sqlite_master "
                "WHERE type = 'trigger' AND tbl_name = 'audit_events'"
            )
        )
    return {r[0] for r in rows}


@pytest.mark.sqlite
async def test_the_audit_guard_survives_every_migration(empty_database: str) -> None:
    """A later migration that rebuilds audit_events (SQLite batch mode) must keep the guard."""
    url = empty_database
    await asyncio.to_thread(migrate.upgrade, url)
    expected = {"audit_events_append_only"}
    if url.startswith("postgresql"):
        expected.add("audit_events_no_truncate")
    assert await on_connection(url, audit_guards) == expected


@pytest.mark.sqlite
async def test_upgrading_keeps_existing_records(empty_database: str) -> None:
    url = empty_database
    await asyncio.to_thread(migrate.upgrade, url, "0001")

    def seed(conn: Connection) -> None:
        conn.execute(
            text(
                "INSERT INTO tenants (id, name, status, quotas, created_at, updated_at) "
                "VALUES ('ten_kept', 'kept', 'active', '{}', :ts, :ts)"
            ).bindparams(bindparam("ts", type_=UTCDateTime())),
            {"ts": datetime(2026, 1, 1, tzinfo=UTC)},
        )
        conn.commit()

    await on_connection(url, seed)
    await asyncio.to_thread(migrate.upgrade, url)

    def names(conn: Connection) -> list[str]:
        return [r[0] for r in conn.execute(text("SELECT name FROM tenants"))]

    assert await on_connection(url, names) == ["kept"]
    # Stepping back to the foundation keeps the foundation's records too.
    await asyncio.to_thread(migrate.downgrade, url, "0001")
    assert await on_connection(url, names) == ["kept"]


@pytest.mark.sqlite
async def test_the_rate_buckets_start_with_the_last_minutes_execs(empty_database: str) -> None:
    """An upgrade counts the execs of the last 61 seconds into `exec_start_buckets`, so no
    tenant is let past `execs_per_minute` by it."""
    url = empty_database
    await asyncio.to_thread(migrate.upgrade, url, "0020")
    now = datetime.now(UTC).replace(microsecond=250_000)
    engine = make_engine(url)
    try:
        async with async_sessionmaker(engine)() as session, session.begin():
            session.add(models.Tenant(id="ten_rate", name="rate", status="active", quotas={}))
            await session.flush()
            sandbox = {"id": "sbx_rate", "tenant_id": "ten_rate", "state": "running",
                       "image": "default", "size": "small", "cpus": 1, "memory_mib": 512,
                       "disk_mib": 1024, "network": {}, "env": {}, "labels": {}, "ttl_s": 60,
                       "created_at": now, "updated_at": now, "expires_at": now}  # fmt: skip
            session.add(models.Sandbox(**sandbox))
            await session.flush()
            for n, ago in enumerate((300, 20, 20, 5)):
                at = now - timedelta(seconds=ago)
                exec_row = {"id": f"exe_rate{n}", "tenant_id": "ten_rate",
                            "sandbox_id": "sbx_rate", "state": "finished", "cmd": ["true"],
                            "cwd": "/work", "env": {}, "secret_names": [], "timeout_s": 5.0,
                            "created_at": at}  # fmt: skip
                session.add(models.Exec(**exec_row))
    finally:
        await engine.dispose()
    await asyncio.to_thread(migrate.upgrade, url)

    def buckets(conn: Connection) -> list[tuple[str, int, int]]:
        query = "SELECT tenant_id, second, starts FROM exec_start_buckets ORDER BY second"
        return [tuple(r) for r in conn.execute(text(query))]

    second = math.floor(now.timestamp())
    assert await on_connection(url, buckets) == [
        ("ten_rate", second - 20, 2),
        ("ten_rate", second - 5, 1),
    ]


async def test_service_connections_plan_statements_once(empty_database: str) -> None:
    """The service's PostgreSQL connections reuse one plan per prepared statement."""
    if empty_database.startswith("sqlite"):
        pytest.skip("a PostgreSQL setting")
    engine = make_engine(empty_database)
    try:
        async with engine.connect() as conn:
            mode = (await conn.execute(text("SHOW plan_cache_mode"))).scalar_one()
    finally:
        await engine.dispose()
    assert mode == "force_generic_plan"

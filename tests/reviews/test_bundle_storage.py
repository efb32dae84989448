"""Review bundles are stored as ordered pieces of at most 1 MiB: an upload is cut as it
arrives, retention takes a bundle's pieces with it, and the migration that introduced the
pieces moves existing bundles into them (and back on a downgrade), on both databases."""

from __future__ import annotations

import asyncio
import hashlib
import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import bindparam, func, select, text, update
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.db import migrate
from service.db.base import UTCDateTime
from service.db.models import ReviewBundle, ReviewBundleChunk
from service.db.session import make_engine
from service.jobs.output_retention import purge_outputs
from service.reviews.repository import BUNDLE_PIECE
from tests.conftest import Api, create_pg_database, database_kind

MIB = 1 << 20
HEADER = b"# v2 git bundle\n"


async def pieces_of(sessionmaker: async_sessionmaker[AsyncSession], bundle_id: str) -> list[bytes]:
    async with sessionmaker() as session:
        rows = await session.scalars(
            select(ReviewBundleChunk.data)
            .where(ReviewBundleChunk.bundle_id == bundle_id)
            .order_by(ReviewBundleChunk.seq)
        )
        return [bytes(r) for r in rows]


@pytest.mark.sqlite
async def test_an_upload_is_stored_in_pieces_and_retention_takes_them(
    api: Api, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    tenant = await api.tenant(bundle_retention_days=1)
    body = HEADER + secrets.token_bytes(2 * MIB + MIB // 2)
    r = await api.client.post("/v1/reviews/bundles", content=body, headers=tenant.headers)
    assert r.status_code == 201, r.text
    bundle = r.json()
    assert bundle["size"] == len(body)
    assert bundle["sha256"] == hashlib.sha256(body).hexdigest()
    stored = await pieces_of(sessionmaker, bundle["id"])
    assert [len(p) for p in stored] == [BUNDLE_PIECE, BUNDLE_PIECE, len(body) - 2 * BUNDLE_PIECE]
    assert b"".join(stored) == body
    # Two days later (the row aged rather than the clock moved), retention deletes it; its
    # pieces go with it through the foreign key (on SQLite too: foreign keys are on).
    async with sessionmaker() as session, session.begin():
        await session.execute(
            update(ReviewBundle)
            .where(ReviewBundle.id == bundle["id"])
            .values(created_at=datetime.now(UTC) - timedelta(days=2))
        )
    async with sessionmaker() as session, session.begin():
        assert (await purge_outputs(session, datetime.now(UTC)))[tenant.id] >= 1
    assert await pieces_of(sessionmaker, bundle["id"]) == []


@pytest.mark.sqlite
async def test_a_refused_upload_leaves_no_piece(
    api: Api, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    tenant = await api.tenant(max_upload_mib=2)
    async with sessionmaker() as session:
        before = await session.scalar(select(func.count()).select_from(ReviewBundleChunk))
    too_big = HEADER + secrets.token_bytes(2 * MIB)
    r = await api.client.post("/v1/reviews/bundles", content=too_big, headers=tenant.headers)
    assert r.status_code == 413, r.text
    not_a_bundle = b"PACK" + secrets.token_bytes(MIB + 7)
    r = await api.client.post("/v1/reviews/bundles", content=not_a_bundle, headers=tenant.headers)
    assert r.status_code == 422, r.text
    r = await api.client.post("/v1/reviews/bundles", content=b"", headers=tenant.headers)
    assert r.status_code == 422, r.text
    async with sessionmaker() as session:
        after = await session.scalar(select(func.count()).select_from(ReviewBundleChunk))
        held = await session.scalar(select(func.count()).where(ReviewBundle.tenant_id == tenant.id))
    assert (after, held) == (before, 0)


# --- the migration --------------------------------------------------------------------------


@pytest.fixture(params=["postgresql", "sqlite"])
async def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    if request.param == "postgresql":
        if database_kind() != "postgresql":
            pytest.skip("PostgreSQL is not part of the SQLite smoke run")
        url, drop = await create_pg_database("airlock_bundles")
        yield url
        await drop()
    else:
        yield f"sqlite+aiosqlite:///{tmp_path / 'bundles.db'}"


async def on_connection(url: str, fn: Any) -> Any:
    engine = make_engine(url)  # as the service connects: foreign keys on for SQLite
    try:
        async with engine.begin() as conn:
            return await conn.run_sync(fn)
    finally:
        await engine.dispose()


def before_pieces(url: str) -> str:
    revision = ScriptDirectory.from_config(migrate.alembic_config(url)).get_revision("0009")
    assert revision is not None and isinstance(revision.down_revision, str)
    return revision.down_revision


@pytest.mark.sqlite
async def test_the_migration_moves_existing_bundles_into_pieces_and_back(
    empty_database: str,
) -> None:
    url = empty_database
    await asyncio.to_thread(migrate.upgrade, url, before_pieces(url))
    bundles = {
        "bdl_big": HEADER + secrets.token_bytes(2 * MIB + 123),
        "bdl_exact": HEADER + secrets.token_bytes(MIB - len(HEADER)),
        "bdl_small": HEADER + b"PACK",
    }
    ts = bindparam("ts", type_=UTCDateTime())

    def seed(conn: Connection) -> None:
        conn.execute(
            text(
                "INSERT INTO tenants (id, name, status, quotas, created_at, updated_at) "
                "VALUES ('ten_b', 'b', 'active', '{}', :ts, :ts)"
            ).bindparams(ts),
            {"ts": datetime(2026, 1, 1, tzinfo=UTC)},
        )
        for bundle_id, data in bundles.items():
            conn.execute(
                text(
                    "INSERT INTO review_bundles (id, tenant_id, size, sha256, data, created_at) "
                    "VALUES (:id, 'ten_b', :size, 'x', :data, :ts)"
                ).bindparams(ts),
                {"id": bundle_id, "size": len(data), "data": data, "ts": datetime.now(UTC)},
            )

    await on_connection(url, seed)
    await asyncio.to_thread(migrate.upgrade, url)

    def stored(conn: Connection) -> dict[str, list[bytes]]:
        found: dict[str, list[bytes]] = {}
        rows = conn.execute(
            text("SELECT bundle_id, seq, data FROM review_bundle_chunks ORDER BY bundle_id, seq")
        )
        for bundle_id, seq, data in rows:
            assert seq == len(found.setdefault(bundle_id, []))
            found[bundle_id].append(bytes(data))
        return found

    pieces = await on_connection(url, stored)
    assert {k: b"".join(v) for k, v in pieces.items()} == bundles
    assert [len(p) for p in pieces["bdl_big"]] == [MIB, MIB, len(bundles["bdl_big"]) - 2 * MIB]
    assert [len(p) for p in pieces["bdl_exact"]] == [MIB]
    assert len(pieces["bdl_small"]) == 1

    def delete_one(conn: Connection) -> None:
        conn.execute(text("DELETE FROM review_bundles WHERE id = 'bdl_small'"))

    await on_connection(url, delete_one)
    del bundles["bdl_small"]
    assert set(await on_connection(url, stored)) == set(bundles)  # its pieces went with it

    await asyncio.to_thread(migrate.downgrade, url, before_pieces(url))

    def whole(conn: Connection) -> dict[str, bytes]:
        rows = conn.execute(text("SELECT id, data FROM review_bundles"))
        return {bundle_id: bytes(data) for bundle_id, data in rows}

    assert await on_connection(url, whole) == bundles

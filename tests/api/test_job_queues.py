"""Queued reviews and template builds: capped per tenant (429 with Retry-After), and claimed
in turns across tenants, so one tenant's backlog never holds back another tenant's next job.

The app runs without its job loops here; the runners' own claim (`claim_next`) is called
between requests, so the order is the one the runners would take."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.app import create_app
from service.db import migrate
from service.db.session import make_engine, make_sessionmaker
from service.jobs import templates as builds
from service.reviews import job as reviews
from service.settings import Settings
from tests.conftest import OPERATOR_KEY, Api, Tenant, create_pg_database

REVIEW = {"repo": "https://git.example.com/acme/billing.git", "base": "main", "head": "pr-42"}
Db = async_sessionmaker[AsyncSession]


@pytest.fixture(scope="module")
async def queues(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Api, Db]]:
    """The app on a database of its own: every queued job in it is this module's."""
    url, drop = await create_pg_database("airlock_queues")
    await asyncio.to_thread(migrate.upgrade, url)
    state: Path = tmp_path_factory.mktemp("queues-state")
    settings = Settings.from_env({}, state_dir=state, database_url=url, operator_key=OPERATOR_KEY)
    engine = make_engine(url)
    try:
        async with AsyncTestClient(app=create_app(settings, run_jobs=False)) as client:
            yield Api(client=client, settings=settings), make_sessionmaker(engine)
    finally:
        await engine.dispose()
        await drop()


async def post_review(api: Api, tenant: Tenant) -> Any:
    return await api.client.post("/v1/reviews", json=REVIEW, headers=tenant.headers)


async def post_build(api: Api, tenant: Tenant) -> Any:
    body = {"name": f"t{secrets.token_hex(4)}", "setup": [["true"]]}
    return await api.client.post("/v1/templates", json=body, headers=tenant.headers)


def assert_queue_full(r: Any, quota: str) -> None:
    assert r.status_code == 429, r.text
    assert r.json()["code"] == "quota_exceeded" and r.json()["quota"] == quota
    assert int(r.headers["Retry-After"]) >= 1


async def finish_all(db: Db) -> None:
    """The runners' work ends (what a finished review or build leaves behind)."""
    async with db() as session, session.begin():
        await session.execute(
            text(
                "UPDATE reviews SET state = 'finished', finished_at = now() WHERE state = 'running'"
            )
        )
        await session.execute(
            text(
                "UPDATE template_versions SET state = 'failed', finished_at = now() "
                "WHERE state = 'building'"
            )
        )


async def review_owner(db: Db, review_id: str | None) -> str | None:
    async with db() as session:
        return await session.scalar(
            text("SELECT tenant_id FROM reviews WHERE id = :id"), {"id": review_id}
        )


async def test_queued_reviews_are_capped_per_tenant(queues: tuple[Api, Db]) -> None:
    api, db = queues
    tenant = await api.tenant(max_queued_reviews=2)
    for _ in range(2):
        assert (await post_review(api, tenant)).status_code == 202
    assert_queue_full(await post_review(api, tenant), "max_queued_reviews")
    other = await api.tenant()
    assert (await post_review(api, other)).status_code == 202  # another tenant's own queue
    # A review taken by a runner no longer waits: there is room again.
    while await reviews.claim_next(db):
        pass
    assert (await post_review(api, tenant)).status_code == 202
    await finish_all(db)
    while await reviews.claim_next(db):
        pass
    await finish_all(db)


async def test_queued_builds_are_capped_per_tenant(queues: tuple[Api, Db]) -> None:
    api, db = queues
    tenant = await api.tenant(max_queued_builds=1)
    assert (await post_build(api, tenant)).status_code == 202
    assert_queue_full(await post_build(api, tenant), "max_queued_builds")
    assert await builds.claim_next(db) is not None
    assert (await post_build(api, tenant)).status_code == 202
    await finish_all(db)
    while await builds.claim_next(db):
        pass
    await finish_all(db)


async def test_reviews_are_claimed_in_turns(queues: tuple[Api, Db]) -> None:
    """Tenant A queues three reviews, then B one: with two runner slots, B's review is the
    second one taken (plain FIFO would take it fourth)."""
    api, db = queues
    a, b = await api.tenant(), await api.tenant()
    for _ in range(3):
        assert (await post_review(api, a)).status_code == 202
    assert (await post_review(api, b)).status_code == 202
    order = []
    while (claimed := await reviews.claim_next(db)) is not None:
        order.append(await review_owner(db, claimed))
    assert order == [a.id, b.id, a.id, a.id]
    await finish_all(db)


async def test_builds_are_claimed_in_turns(queues: tuple[Api, Db]) -> None:
    """With the builder's one slot: after A's first build, B's build goes before A's next."""
    api, db = queues
    a, b = await api.tenant(), await api.tenant()
    for _ in range(3):
        assert (await post_build(api, a)).status_code == 202
    assert (await post_build(api, b)).status_code == 202
    order = []
    while (claimed := await builds.claim_next(db)) is not None:
        order.append(claimed.owner)
        await finish_all(db)  # one at a time, as the builder runs them
    assert order == [a.id, b.id, a.id, a.id]

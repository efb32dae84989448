"""A suspension fails the tenant's queued reviews and builds at once, saying why; one that slips
into the queue beside the suspension is failed by the next claim instead of run; making the
tenant active again runs none of them.

The app runs without its job loops; the runners' own claim (`claim_next`) is called directly."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from typing import Any

import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.app import create_app
from service.db import migrate
from service.db.models import AuditEvent, Review, TemplateVersion
from service.db.session import make_engine, make_sessionmaker
from service.jobs import templates as builds
from service.reviews import job as reviews
from service.settings import Settings
from service.tenants.suspension import REASON
from tests.conftest import OPERATOR_KEY, Api, Tenant, create_pg_database, database_kind

REVIEW = {"repo": "https://git.example.com/acme/billing.git", "base": "main", "head": "pr-42"}
Db = async_sessionmaker[AsyncSession]


pytestmark = pytest.mark.sqlite


@pytest.fixture(scope="module")
async def queues(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Api, Db]]:
    """The app on a database of its own: every queued job in it is this module's."""
    state = tmp_path_factory.mktemp("suspended-state")
    if database_kind() == "sqlite":
        url, drop = f"sqlite+aiosqlite:///{state / 'queues.db'}", None
    else:
        url, drop = await create_pg_database("airlock_suspended")
    await asyncio.to_thread(migrate.upgrade, url)
    settings = Settings.from_env({}, state_dir=state, database_url=url, operator_key=OPERATOR_KEY)
    engine = make_engine(url)
    try:
        async with AsyncTestClient(app=create_app(settings, run_jobs=False)) as client:
            yield Api(client=client, settings=settings), make_sessionmaker(engine)
    finally:
        await engine.dispose()
        if drop is not None:
            await drop()


async def queue_both(api: Api, tenant: Tenant) -> tuple[str, str]:
    """A queued review and a queued build of the tenant: their ids."""
    r = await api.client.post("/v1/reviews", json=REVIEW, headers=tenant.headers)
    assert r.status_code == 202, r.text
    review_id = r.json()["id"]
    body = {"name": f"t{secrets.token_hex(4)}", "setup": [["true"]]}
    r = await api.client.post("/v1/templates", json=body, headers=tenant.headers)
    assert r.status_code == 202, r.text
    return review_id, r.json()["id"]


async def set_status(api: Api, tenant: Tenant, status: str) -> None:
    r = await api.client.patch(
        f"/v1/tenants/{tenant.id}", json={"status": status}, headers=api.operator
    )
    assert r.status_code == 200, r.text


async def states(db: Db, review_id: str, template_id: str) -> dict[str, Any]:
    async with db() as session:
        review = await session.get(Review, review_id)
        build = await session.scalar(
            select(TemplateVersion).where(TemplateVersion.template_id == template_id)
        )
    assert review is not None and build is not None
    return {"review": (review.state, review.error), "build": (build.state, build.error)}


async def drain(db: Db) -> tuple[list[str], list[str]]:
    """Everything the runners would take now: review ids, build owners."""
    taken_reviews, taken_builds = [], []
    while (review_id := await reviews.claim_next(db)) is not None:
        taken_reviews.append(review_id)
    while (build := await builds.claim_next(db)) is not None:
        taken_builds.append(build.owner)
    return taken_reviews, taken_builds


async def test_a_suspension_fails_the_queued_work_and_activation_runs_none_of_it(
    queues: tuple[Api, Db],
) -> None:
    api, db = queues
    tenant, other = await api.tenant(), await api.tenant()
    mine = await queue_both(api, tenant)
    theirs = await queue_both(api, other)
    await set_status(api, tenant, "suspended")
    failed = {"review": ("failed", REASON), "build": ("failed", REASON)}
    assert await states(db, *mine) == failed
    assert await states(db, *theirs) == {"review": ("queued", None), "build": ("queued", None)}
    async with db() as session:
        events = (
            await session.scalars(
                select(AuditEvent).where(
                    AuditEvent.chain == tenant.id, AuditEvent.outcome == "failed"
                )
            )
        ).all()
    assert sorted(e.action for e in events) == ["review.finish", "template.build"]
    assert all(e.details["error"] == REASON for e in events)
    await set_status(api, tenant, "active")
    taken_reviews, taken_builds = await drain(db)
    assert taken_reviews == [theirs[0]] and taken_builds == [other.id]
    assert await states(db, *mine) == failed


async def test_work_queued_beside_the_suspension_is_failed_by_the_next_claim(
    queues: tuple[Api, Db],
) -> None:
    """A request that passed authentication just before the suspension can commit its job
    just after: the runners' claim fails it instead of running it."""
    api, db = queues
    tenant = await api.tenant()
    mine = await queue_both(api, tenant)
    await set_status(api, tenant, "suspended")
    async with db() as session, session.begin():  # as if they had committed after it
        await session.execute(update(Review).where(Review.id == mine[0]).values(state="queued"))
        await session.execute(
            update(TemplateVersion)
            .where(TemplateVersion.template_id == mine[1])
            .values(state="queued", error=None)
        )
    assert await drain(db) == ([], [])
    assert await states(db, *mine) == {"review": ("failed", REASON), "build": ("failed", REASON)}

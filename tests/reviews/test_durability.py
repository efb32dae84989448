"""Reviews are rows, claimed once: a review cut off by a restart goes back in the queue (or
fails after three tries), two claims never take the same review, and the settings parse."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.db.models import Review
from service.errors import ConfigurationError
from service.reviews.job import MAX_ATTEMPTS, claim_next, requeue_interrupted
from service.settings import Settings
from tests.conftest import Api, Tenant

Db = async_sessionmaker[AsyncSession]
BODY = {"repo": "https://git.example.com/acme/billing.git", "head": "pr-42"}


async def _new(api: Api, tenant: Tenant) -> str:
    r = await api.client.post("/v1/reviews", json=BODY, headers=tenant.headers)
    assert r.status_code == 202, r.text
    return str(r.json()["id"])


async def _state(db: Db, review_id: str) -> tuple[str, int, str | None]:
    async with db() as session:
        row = await session.get(Review, review_id, populate_existing=True)
        assert row is not None
        return row.state, row.attempts, row.error


async def _set(db: Db, review_id: str, **values: Any) -> None:
    async with db() as session, session.begin():
        await session.execute(update(Review).where(Review.id == review_id).values(**values))


@pytest.mark.sqlite
async def test_a_cut_off_review_is_queued_again_then_given_up(
    api: Api, tenant: Tenant, sessionmaker: Db
) -> None:
    retried, exhausted = await _new(api, tenant), await _new(api, tenant)
    await _set(sessionmaker, retried, state="running", attempts=1)
    await _set(sessionmaker, exhausted, state="running", attempts=MAX_ATTEMPTS)
    assert await requeue_interrupted(sessionmaker) >= 2
    assert (await _state(sessionmaker, retried))[:2] == ("queued", 1)
    state, _, error = await _state(sessionmaker, exhausted)
    assert state == "failed" and "cut off by restarts" in (error or "")
    r = await api.client.get("/v1/audit", params={"target": retried}, headers=tenant.headers)
    assert "review.requeue" in [e["action"] for e in r.json()["items"]]
    # Leave nothing queued for other suites' runners in this database.
    await _set(sessionmaker, retried, state="failed")


async def test_concurrent_claims_never_take_the_same_review(
    api: Api, tenant: Tenant, sessionmaker: Db
) -> None:
    made = {await _new(api, tenant) for _ in range(6)}
    try:
        claims: list[str | None] = []
        while True:  # until the queue (which other tests also fill) is empty
            batch = await asyncio.gather(*(claim_next(sessionmaker) for _ in range(6)))
            claims += batch
            if not any(batch):
                break
        mine = [c for c in claims if c in made]
        assert sorted(mine) == sorted(made)  # each exactly once
        for review_id in made:
            state, attempts, _ = await _state(sessionmaker, review_id)
            assert (state, attempts) == ("running", 1)
    finally:
        for review_id in made:
            await _set(sessionmaker, review_id, state="failed")


@pytest.mark.sqlite
def test_review_settings() -> None:
    settings = Settings.from_env(
        {
            "AIRLOCK_REVIEW_ALLOW_LOCAL_REPOS": "true",
            "AIRLOCK_LLM_BASE_URL": "http://127.0.0.1:11434/v1",
            "AIRLOCK_LLM_API_KEY": "sk-local",
            "AIRLOCK_LLM_MODEL": "qwen",
            "AIRLOCK_LLM_TIMEOUT_S": "15",
        }
    )
    assert settings.review_allow_local_repos is True
    assert (settings.llm_base_url, settings.llm_api_key, settings.llm_model) == (
        "http://127.0.0.1:11434/v1",
        "sk-local",
        "qwen",
    )
    assert settings.llm_timeout_s == 15
    defaults = Settings.from_env({})
    assert defaults.review_allow_local_repos is False and defaults.llm_base_url == ""
    for bad in ({"AIRLOCK_LLM_BASE_URL": "ftp://x"}, {"AIRLOCK_LLM_TIMEOUT_S": "0"},
                {"AIRLOCK_REVIEW_ALLOW_LOCAL_REPOS": "perhaps"}):  # fmt: skip
        with pytest.raises(ConfigurationError):
            Settings.from_env(bad)

"""A tenant's review queue and bundle caps hold under concurrent posts: the count and the
insert are one step per tenant, so racing requests cannot pass the cap by their number. The
shared app's settings are served over TCP (uvicorn on a loopback port, so requests really
overlap) with no review runner: the queued reviews stay queued."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from tests.conftest import Api, served_over_tcp
from tests.reviews.test_api import GOOD, _bundle_bytes

RACERS = 20
CAP = 3


@pytest.fixture(scope="module")
async def served(api: Api) -> AsyncIterator[Api]:
    async with served_over_tcp(api) as api_over_tcp:
        yield api_over_tcp


@pytest.mark.sqlite
async def test_concurrent_reviews_do_not_pass_the_queue_cap(served: Api) -> None:
    tenant = await served.tenant(max_queued_reviews=CAP)

    async def post() -> int:
        r = await served.client.post("/v1/reviews", json=GOOD, headers=tenant.headers)
        assert r.status_code in (202, 429), r.text
        if r.status_code == 429:
            assert r.json()["quota"] == "max_queued_reviews"
            assert int(r.headers["Retry-After"]) >= 1
        return r.status_code

    statuses = Counter(await asyncio.gather(*(post() for _ in range(RACERS))))
    assert statuses == {202: CAP, 429: RACERS - CAP}, statuses
    r = await served.client.get("/v1/reviews", params={"state": "queued"}, headers=tenant.headers)
    assert len(r.json()["items"]) == CAP


@pytest.mark.sqlite
async def test_concurrent_bundle_uploads_do_not_pass_the_bundle_cap(served: Api) -> None:
    tenant = await served.tenant(max_bundles=CAP)
    bundle = _bundle_bytes()

    async def upload() -> int:
        r = await served.client.post("/v1/reviews/bundles", content=bundle, headers=tenant.headers)
        assert r.status_code in (201, 429), r.text
        if r.status_code == 429:
            assert r.json()["quota"] == "max_bundles"
        return r.status_code

    statuses = Counter(await asyncio.gather(*(upload() for _ in range(RACERS))))
    assert statuses == {201: CAP, 429: RACERS - CAP}, statuses

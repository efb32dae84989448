"""A tenant flooding `airlock serve` with requests (16 clients, back to back, on gVisor;
PostgreSQL, and SQLite on the SQLite run) is answered 429 `rate_limited` with Retry-After past
its rate, while another tenant's requests and execs in the same seconds are all answered as
usual."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import httpx
import pytest
from airlock_sdk import AsyncSandbox, errors

from tests.e2e.conftest import Airlock

FLOOD_S = 3.0
CLIENTS = 16


@pytest.mark.sqlite
async def test_a_tenant_flooding_the_api_gets_429s_and_another_is_served(
    site: Airlock,
) -> None:
    airlock = site  # counted in memory on SQLite, in request_buckets on PostgreSQL
    flooder = await airlock.tenant(reads_per_s=5)
    other = await airlock.tenant()
    sandbox = await airlock.sandbox(other)
    statuses: Counter[int] = Counter()
    refusals: list[httpx.Response] = []
    served: list[int] = []

    async def hammer(http: httpx.AsyncClient, until: float) -> None:
        while time.monotonic() < until:
            r = await http.get("/v1/sandboxes")
            statuses[r.status_code] += 1
            if r.status_code == 429:
                refusals.append(r)

    async def meanwhile(http: httpx.AsyncClient, until: float) -> None:
        while time.monotonic() < until:
            r = await http.get("/v1/sandboxes")
            served.append(r.status_code)
            r = await http.post(f"/v1/sandboxes/{sandbox.id}/execs", json={"cmd": ["true"]})
            served.append(r.status_code)

    async with airlock.http(flooder.key) as flooding, airlock.http(other.key) as calm:
        until = time.monotonic() + FLOOD_S
        await asyncio.gather(
            *(hammer(flooding, until) for _ in range(CLIENTS)), meanwhile(calm, until)
        )
    assert set(statuses) == {200, 429}, statuses
    # A burst of 25 and 5 a second (the flood's first answers may come a little after it began).
    assert statuses[200] <= 25 + 5 * (FLOOD_S + 1), statuses
    problem = refusals[0].json()
    assert problem["code"] == "rate_limited" and problem["route_class"] == "reads", problem
    assert all(int(r.headers["retry-after"]) >= 1 for r in refusals)
    assert served and set(served) == {200}, Counter(served)


async def test_the_sdk_waits_out_a_rate_limit_and_goes_on(airlock: Airlock) -> None:
    # A burst of 5 reads and one a second: of 9 reads back to back, the last ones are refused
    # (429 rate_limited, Retry-After 1) and sent again by the SDK after the wait.
    tenant = await airlock.tenant(reads_per_s=1)
    sandbox = await airlock.sandbox(tenant)
    connected = await AsyncSandbox.connect(sandbox.id, url=airlock.server.url, api_key=tenant.key)
    started = time.monotonic()
    states = [(await connected.refresh()).state for _ in range(8)]
    assert set(map(str, states)) == {"running"}, states
    # The refused ones waited for their tokens rather than failing.
    assert time.monotonic() - started >= 2.0
    async with airlock.http(tenant.key) as http:
        while (r := await http.get(f"/v1/sandboxes/{sandbox.id}")).status_code == 200:
            pass
    with pytest.raises(errors.RateLimited) as refused:
        raise errors.from_answer(r.status_code, r.content, r.headers)
    assert isinstance(refused.value, errors.QuotaExceeded) and refused.value.retry_after >= 1

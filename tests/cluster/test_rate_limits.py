"""Two API replicas on one PostgreSQL count a caller once: a tenant flooding both passes what
one bucket allows, and a caller without a credential is counted by the address the trusted
proxy in front saw (a forged X-Forwarded-For gets it no bucket of its own)."""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import httpx

from tests.cluster.conftest import Cluster

CLUSTER_ENV = {"AIRLOCK_ANONYMOUS_REQUESTS_PER_S": "2"}
FLOOD_S = 2.0


async def flood(http: httpx.AsyncClient, path: str, until: float, seen: Counter[int]) -> None:
    while time.monotonic() < until:
        seen[(await http.get(path)).status_code] += 1


async def test_a_tenant_flooding_both_replicas_is_counted_once(cluster: Cluster) -> None:
    key = await cluster.tenant(reads_per_s=3)  # bursts of 15
    seen: Counter[int] = Counter()
    async with cluster.http(cluster.apis[0], key) as a, cluster.http(cluster.apis[1], key) as b:
        until = time.monotonic() + FLOOD_S
        await asyncio.gather(*(flood(http, "/v1/sandboxes", until, seen) for http in (a, b) * 8))
    assert set(seen) == {200, 429}, seen
    # Counted apart, each replica would pass its own burst (30 together) and more.
    assert 15 <= seen[200] <= 15 + 3 * (FLOOD_S + 1), seen


async def test_callers_without_a_credential_are_counted_by_their_own_address(
    cluster: Cluster,
) -> None:
    forged = {"X-Forwarded-For": "203.0.113.9"}  # the proxy puts the real address instead
    seen: Counter[int] = Counter()
    other = httpx.AsyncHTTPTransport(local_address="127.0.0.3")
    proxies = [httpx.AsyncClient(base_url=url, headers=forged) for url in cluster.proxies]
    elsewhere = httpx.AsyncClient(base_url=cluster.proxies[0], transport=other)

    async def from_elsewhere() -> httpx.Response:
        """Once the flood is refused, another address through the same proxy: counted as
        itself (were the proxy's own address counted, it would share the flood's bucket)."""
        while not seen[429]:
            assert time.monotonic() < until, seen
            await asyncio.sleep(0.05)
        return await elsewhere.get("/healthz")

    try:
        until = time.monotonic() + FLOOD_S
        *_, answer = await asyncio.gather(
            *(flood(http, "/healthz", until, seen) for http in proxies * 4), from_elsewhere()
        )
    finally:
        for http in (*proxies, elsewhere):
            await http.aclose()
    assert set(seen) == {200, 429}, seen
    assert seen[200] <= 10 + 2 * (FLOOD_S + 1), seen  # one address's bucket, on both replicas
    assert answer.status_code == 200, answer.text

"""A network grant the operator takes away is taken from the sandboxes running under it, through
HTTP on gVisor with packets to a real listener: a running sandbox that reached a granted private
range, or public space while its tenant might be `open`, stops reaching it within seconds of
the operator's PATCH, its record shows the narrowed policy, and the audit chain says why.

The attack these answer: the operator took a private range (or `open`) away from a tenant, and
the tenant's sandboxes that were running went on reaching it until they ended."""

from __future__ import annotations

import asyncio
import secrets
import time
from collections.abc import Iterator

import pytest

from tests.e2e.conftest import Airlock, Tenant
from tests.network.hosts import Peer, internal_host
from tests.network.test_born_under_todays_rules import set_quotas
from tests.network.test_internal import probe
from tests.runtime.test_network import BLOCKED

PORT = 19_080 + secrets.randbelow(1000)
PRIVATE = "10.0.0.1"
# A public address (outside every reserved range), routed on this machine to the test host.
PUBLIC = "100.24.0.7"
WAIT_S = 30.0


@pytest.fixture(scope="module")
def listener() -> Iterator[Peer]:
    with internal_host(4 + secrets.randbelow(200), PORT, (PRIVATE, PUBLIC)) as host:
        yield host


async def until_blocked(tenant: Tenant, sandbox_id: str, target: str) -> list[str]:
    deadline = time.monotonic() + WAIT_S
    while (seen := await probe(tenant, sandbox_id, target))[0] not in BLOCKED:
        assert time.monotonic() < deadline, f"{target} still reachable: {seen}"
        await asyncio.sleep(0.5)
    return seen


async def network_events(airlock: Airlock, tenant: Tenant, sandbox_id: str) -> list[dict]:
    async with airlock.http(tenant.key) as http:
        r = await http.get("/v1/audit", params={"action": "sandbox.network", "limit": 50})
        assert r.status_code == 200, r.text
    return [e for e in r.json()["items"] if e["target"] == sandbox_id]


async def test_a_running_sandbox_loses_a_private_range_taken_away(
    airlock: Airlock, listener: Peer
) -> None:
    tenant = await airlock.tenant()
    await set_quotas(airlock, tenant, network_private_cidrs=["10.0.0.0/24"])
    allow = [f"{PRIVATE}:{PORT}", f"{PUBLIC}:{PORT}"]
    sandbox = await airlock.sandbox(tenant, network={"mode": "allowlist", "allow": allow})
    assert await probe(tenant, sandbox.id, f"{PRIVATE}:{PORT}", f"{PUBLIC}:{PORT}") == [
        "open",
        "open",
    ]

    await set_quotas(airlock, tenant, network_private_cidrs=[])
    await until_blocked(tenant, sandbox.id, f"{PRIVATE}:{PORT}")
    # The public entry stays: only what the grant gave is taken.
    assert await probe(tenant, sandbox.id, f"{PUBLIC}:{PORT}") == ["open"]
    async with airlock.http(tenant.key) as http:
        shown = (await http.get(f"/v1/sandboxes/{sandbox.id}")).json()["network"]
    assert shown == {"mode": "allowlist", "allow": [f"{PUBLIC}:{PORT}"]}, shown
    (event,) = await network_events(airlock, tenant, sandbox.id)
    assert event["actor"] == "system:grants", event
    assert event["details"]["from"]["allow"] == allow
    assert event["details"]["to"]["allow"] == [f"{PUBLIC}:{PORT}"]
    assert "grant" in event["details"]["reason"]


async def test_a_running_open_sandbox_is_closed_when_open_is_taken_away(
    airlock: Airlock, listener: Peer
) -> None:
    tenant = await airlock.tenant()
    await set_quotas(airlock, tenant, network_open_allowed=True)
    sandbox = await airlock.sandbox(tenant, network={"mode": "open"})
    assert await probe(tenant, sandbox.id, f"{PUBLIC}:{PORT}") == ["open"]

    await set_quotas(airlock, tenant, network_open_allowed=False)
    await until_blocked(tenant, sandbox.id, f"{PUBLIC}:{PORT}")
    async with airlock.http(tenant.key) as http:
        shown = (await http.get(f"/v1/sandboxes/{sandbox.id}")).json()["network"]
        assert shown == {"mode": "allowlist", "allow": []}, shown
        # Asking for it back is refused, as a create would be.
        r = await http.patch(f"/v1/sandboxes/{sandbox.id}", json={"network": {"mode": "open"}})
        assert r.status_code == 403, r.text
    (event,) = await network_events(airlock, tenant, sandbox.id)
    assert event["details"]["from"]["mode"] == "open"


async def test_a_wider_grant_changes_nothing_running(airlock: Airlock, listener: Peer) -> None:
    tenant = await airlock.tenant()
    await set_quotas(airlock, tenant, network_private_cidrs=["10.0.0.0/24"])
    sandbox = await airlock.sandbox(
        tenant, network={"mode": "allowlist", "allow": [f"{PRIVATE}:{PORT}"]}
    )
    await set_quotas(airlock, tenant, network_private_cidrs=["10.0.0.0/24", "10.9.0.0/16"])
    await asyncio.sleep(5)  # two passes and more
    assert await probe(tenant, sandbox.id, f"{PRIVATE}:{PORT}") == ["open"]
    assert await network_events(airlock, tenant, sandbox.id) == []


async def test_a_sandbox_paused_while_its_range_was_taken_resumes_without_it(
    airlock: Airlock, listener: Peer
) -> None:
    tenant = await airlock.tenant()
    await set_quotas(airlock, tenant, network_private_cidrs=["10.0.0.0/24"])
    sandbox = await airlock.sandbox(
        tenant, network={"mode": "allowlist", "allow": [f"{PRIVATE}:{PORT}"]}
    )
    async with airlock.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{sandbox.id}/pause")
        assert r.status_code == 200, r.text
        await set_quotas(airlock, tenant, network_private_cidrs=[])
        await asyncio.sleep(3)  # a pass with the sandbox paused
        r = await http.post(f"/v1/sandboxes/{sandbox.id}/resume")
        assert r.status_code == 200, r.text
    await until_blocked(tenant, sandbox.id, f"{PRIVATE}:{PORT}")
    async with airlock.http(tenant.key) as http:
        shown = (await http.get(f"/v1/sandboxes/{sandbox.id}")).json()["network"]
    assert shown == {"mode": "allowlist", "allow": []}, shown

"""The internal network stays out of reach, through HTTP on gVisor: an allowlist that would open
private, CGNAT or metadata space is a 403 naming the entry (sandboxes, PATCH, templates,
reviews); at packet level neither `open` nor any allowlist the API accepts reaches a private
address or a metadata service, even where a listener answers there; a private range the
operator granted (`network_private_cidrs`) is reachable, and only through an allowlist.

The internal addresses are served by a test host this module makes (tests/network/hosts.py):
10.0.0.1, 100.100.100.200 (Alibaba's metadata), 168.63.129.16 (Azure's) and 169.254.169.254,
routed from this machine into a namespace, so a packet let through would connect.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import Airlock, Tenant, run_exec
from tests.network.hosts import INTERNAL, Peer, internal_host
from tests.runtime.test_network import BLOCKED, PROBE

PORT = 18_080 + secrets.randbelow(1000)
ATTACKS = [
    ["0.0.0.0/0"],
    ["10.0.0.0/8"],
    ["100.64.0.0/10"],
    ["0.0.0.0/1", "128.0.0.0/1"],
    ["169.254.169.254"],
    ["100.100.100.200:80"],
    ["168.63.129.16"],
    ["192.168.0.0/16"],
    ["localhost:5432"],  # a name that resolves to a non-public address
]


@pytest.fixture(scope="module")
def internal() -> Iterator[Peer]:
    with internal_host(4 + secrets.randbelow(200), PORT) as host:
        yield host


async def probe(tenant: Tenant, sandbox_id: str, *targets: str) -> list[str]:
    _, ex = await run_exec(
        tenant.client, sandbox_id, cmd=["python3", "-c", PROBE, json.dumps(list(targets))]
    )
    assert ex is not None and ex.exit_code == 0, ex
    return json.loads(ex.stdout)


async def granted_tenant(airlock: Airlock, **quotas: Any) -> Tenant:
    tenant = await airlock.tenant()
    async with airlock.http(airlock.operator_key) as op:
        r = await op.patch(f"/v1/tenants/{tenant.id}", json={"quotas": quotas})
        assert r.status_code == 200, r.text
    return tenant


@pytest.mark.parametrize("allow", ATTACKS, ids=lambda a: ",".join(a))
async def test_allowlists_into_internal_space_are_refused_naming_the_entry(
    airlock: Airlock, allow: list[str]
) -> None:
    tenant = await airlock.tenant()
    network = {"mode": "allowlist", "allow": allow}
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"network": network})
        assert r.status_code == 403, r.text
        problem = r.json()
        assert problem["entry"] == allow[0] and allow[0] in problem["detail"], problem
        assert (await http.get("/v1/sandboxes")).json()["items"] == []
        r = await http.post(
            "/v1/templates",
            json={"name": f"t-{secrets.token_hex(4)}", "setup": [["true"]], "network": network},
        )
        assert r.status_code == 403, r.text
        assert r.json()["entry"] == allow[0]
        r = await http.post(
            "/v1/reviews",
            json={"repo": "https://git.example.com/x.git", "head": "main", "network": network},
        )
        assert r.status_code == 403, r.text
        assert r.json()["entry"] == allow[0]


async def test_a_running_sandbox_cannot_be_widened_into_internal_space(
    airlock: Airlock,
) -> None:
    tenant = await granted_tenant(airlock, network_open_allowed=True)
    sandbox = await airlock.sandbox(tenant, network={"mode": "open"})
    async with airlock.http(tenant.key) as http:
        for allow in ATTACKS:
            r = await http.patch(
                f"/v1/sandboxes/{sandbox.id}",
                json={"network": {"mode": "allowlist", "allow": allow}},
            )
            assert r.status_code == 403, (allow, r.text)
        body = (await http.get(f"/v1/sandboxes/{sandbox.id}")).json()
        assert body["network"] == {"mode": "open", "allow": []}


@pytest.mark.parametrize(
    "network",
    [
        {"mode": "open"},
        # Accepted: public space (Azure's metadata address sits inside it), and granted
        # private space (Alibaba's metadata address sits inside CGNAT).
        {"mode": "allowlist", "allow": ["168.63.0.0/16"]},
        {"mode": "allowlist", "allow": ["100.64.0.0/10"]},
        {"mode": "allowlist", "allow": ["100.100.100.0/24", "168.63.129.0/24"]},
    ],
    ids=lambda n: n["mode"] + ":" + ",".join(n.get("allow", [])),
)
async def test_internal_addresses_are_out_of_reach_of_every_accepted_policy(
    airlock: Airlock, internal: Peer, network: dict[str, Any]
) -> None:
    tenant = await granted_tenant(
        airlock, network_open_allowed=True, network_private_cidrs=["100.64.0.0/10"]
    )
    sandbox = await airlock.sandbox(tenant, network=network)
    outcomes = await probe(tenant, sandbox.id, *(f"{a}:{PORT}" for a in INTERNAL))
    assert all(o in BLOCKED for o in outcomes), dict(zip(INTERNAL, outcomes, strict=True))


async def test_a_granted_private_range_is_reachable_only_through_an_allowlist(
    airlock: Airlock, internal: Peer
) -> None:
    plain = await airlock.tenant()
    wanted = {"mode": "allowlist", "allow": [f"10.0.0.1:{PORT}"]}
    async with airlock.http(plain.key) as http:
        r = await http.post("/v1/sandboxes", json={"network": wanted})
        assert r.status_code == 403, r.text  # not granted to this tenant
    tenant = await granted_tenant(
        airlock, network_open_allowed=True, network_private_cidrs=["10.0.0.0/24"]
    )
    async with airlock.http(airlock.operator_key) as op:
        shown = (await op.get(f"/v1/tenants/{tenant.id}")).json()["quotas"]
        assert shown["network_private_cidrs"] == ["10.0.0.0/24"]
    sandbox = await airlock.sandbox(tenant, network=wanted)
    outcomes = await probe(tenant, sandbox.id, *(f"{a}:{PORT}" for a in INTERNAL))
    assert outcomes[0] == "open", outcomes
    assert all(o in BLOCKED for o in outcomes[1:]), outcomes
    wide = await airlock.sandbox(tenant, network={"mode": "open"})
    assert (await probe(tenant, wide.id, f"10.0.0.1:{PORT}")) == ["refused"]


@pytest.mark.parametrize(
    "cidrs",
    [
        ["8.8.8.0/24"],
        ["169.254.0.0/16"],
        ["127.0.0.0/8"],
        ["10.0.0.0/7"],
        ["192.0.2.0/24"],
        ["nope"],
    ],
)
async def test_grants_are_validated(airlock: Airlock, cidrs: list[str]) -> None:
    tenant = await airlock.tenant()
    async with airlock.http(airlock.operator_key) as op:
        r = await op.patch(
            f"/v1/tenants/{tenant.id}", json={"quotas": {"network_private_cidrs": cidrs}}
        )
        assert r.status_code == 422, r.text
        shown = (await op.get(f"/v1/tenants/{tenant.id}")).json()["quotas"]
        assert shown["network_private_cidrs"] == []

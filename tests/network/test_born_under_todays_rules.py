"""A sandbox is born under its tenant's network rules as they are at that moment, against a real
server on gVisor: after the operator takes `open` or a private range away, a fork of a sandbox
made before, or a template made from one, is refused like a create asking for that policy.

The attack these answer: the operator set `network_open_allowed: false` on a tenant (a new
`open` create was then a 403), and the tenant forked its existing `open` sandbox: 201, the
child's network `open`."""

from __future__ import annotations

import secrets
from typing import Any

from tests.e2e.conftest import Airlock, Tenant

PEERS = ["10.250.0.0/16"]
# A private destination inside the range granted above (the refusal comes before any packet).
PRIVATE_ENTRY = "10.250.7.2:8080"


async def set_quotas(airlock: Airlock, tenant: Tenant, **quotas: Any) -> None:
    async with airlock.http(airlock.operator_key) as op:
        r = await op.patch(f"/v1/tenants/{tenant.id}", json={"quotas": quotas})
        assert r.status_code == 200, r.text


async def open_sandbox_then_revoked(airlock: Airlock) -> tuple[Tenant, str]:
    """A tenant's `open` sandbox, made while the operator allowed it; allowed no longer."""
    tenant = await airlock.tenant()
    await set_quotas(airlock, tenant, network_open_allowed=True)
    sandbox = await airlock.sandbox(tenant, network={"mode": "open"})
    await set_quotas(airlock, tenant, network_open_allowed=False)
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"network": {"mode": "open"}})
        assert r.status_code == 403, r.text  # a create is refused now
    return tenant, sandbox.id


async def narrowed_meanwhile(http: Any, sandbox_id: str) -> bool:
    """Whether the grants job (every 2 s) already took `open` from the sandbox: a birth from it
    after that is under the narrowed policy, which the tenant may have, and is allowed."""
    r = await http.get(f"/v1/sandboxes/{sandbox_id}")
    assert r.status_code == 200, r.text
    return r.json()["network"]["mode"] != "open"


async def sandbox_ids(airlock: Airlock, tenant: Tenant) -> set[str]:
    async with airlock.http(tenant.key) as http:
        return {s["id"] for s in (await http.get("/v1/sandboxes")).json()["items"]}


async def test_a_fork_of_an_open_sandbox_after_open_was_revoked_is_refused(
    airlock: Airlock,
) -> None:
    tenant, parent = await open_sandbox_then_revoked(airlock)
    async with airlock.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{parent}/fork", json={})
        if r.status_code == 201:
            tenant.sandboxes.append(r.json()["id"])
            if await narrowed_meanwhile(http, parent):
                # Born from the narrowed parent: the child is not open either.
                assert r.json()["network"]["mode"] == "allowlist", r.text
                return
        assert r.status_code == 403, r.text
        assert "open network" in r.json()["detail"], r.text
        # The parent runs on as it was; no child was recorded or started.
        assert (await http.get(f"/v1/sandboxes/{parent}")).json()["state"] == "running"
    assert await sandbox_ids(airlock, tenant) == {parent}
    forks = await airlock.db.count(
        "SELECT count(*) FROM audit_events WHERE chain = $1 AND action = 'sandbox.fork'", tenant.id
    )
    assert forks == 0


async def test_a_fork_after_its_private_range_was_revoked_is_refused(airlock: Airlock) -> None:
    tenant = await airlock.tenant(network_private_cidrs=PEERS)
    entry = PRIVATE_ENTRY
    parent = await airlock.sandbox(tenant, network={"mode": "allowlist", "allow": [entry]})
    await set_quotas(airlock, tenant, network_private_cidrs=[])
    async with airlock.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{parent.id}/fork", json={})
        if r.status_code == 201:
            tenant.sandboxes.append(r.json()["id"])
        assert r.status_code == 403, r.text
        assert (r.json()["code"], r.json()["entry"]) == ("destination_not_allowed", entry), r.text
    assert await sandbox_ids(airlock, tenant) == {parent.id}


async def test_a_template_from_an_open_sandbox_after_open_was_revoked_is_refused(
    airlock: Airlock,
) -> None:
    tenant, source = await open_sandbox_then_revoked(airlock)
    name = f"from-{secrets.token_hex(4)}"
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/templates", json={"name": name, "from_sandbox": source})
        if r.status_code == 202 and await narrowed_meanwhile(http, source):
            # Made from the narrowed sandbox: the template is not open either.
            got = (await http.get(f"/v1/templates/{name}")).json()
            assert got["versions"][0]["network"]["mode"] == "allowlist", got
            return
        assert r.status_code == 403, r.text
        assert "open network" in r.json()["detail"], r.text
        assert (await http.get(f"/v1/templates/{name}")).status_code == 404

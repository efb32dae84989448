"""Another tenant, and a token bound to another sandbox, find nothing: every sandbox route
answers 404 (never 403, never a change); the bound token works on its own sandbox."""

from __future__ import annotations

from typing import Any

import httpx

from tests.e2e.conftest import Airlock, Tenant, run_exec


def sandbox_routes(sandbox_id: str, exec_id: str) -> list[tuple[str, str, dict[str, Any]]]:
    base = f"/v1/sandboxes/{sandbox_id}"
    return [
        ("GET", base, {}),
        ("PATCH", base, {"json": {"ttl_s": 900}}),
        ("GET", f"{base}/transitions", {}),
        ("POST", f"{base}/execs", {"json": {"cmd": ["touch", "/tmp/intruder"]}}),
        ("GET", f"{base}/execs", {}),
        ("GET", f"{base}/execs/{exec_id}", {}),
        ("GET", f"{base}/execs/{exec_id}/events", {}),
        ("POST", f"{base}/execs/{exec_id}/kill", {}),
        ("PUT", f"{base}/files/work/intruder.txt", {"content": b"x"}),
        ("GET", f"{base}/files/work/secret.txt", {}),
        ("GET", f"{base}/files", {"params": {"dir": "/work"}}),
        ("GET", f"{base}/archive", {"params": {"dir": "/work"}}),
        ("PUT", f"{base}/archive", {"content": b"", "params": {"dir": "/work"}}),
        ("DELETE", base, {}),
    ]


async def assert_all_404(http: httpx.AsyncClient, sandbox_id: str, exec_id: str) -> None:
    answers = {}
    for method, path, kw in sandbox_routes(sandbox_id, exec_id):
        r = await http.request(method, path, **kw)
        answers[f"{method} {path}"] = (r.status_code, r.json().get("code"))
    assert answers == {route: (404, "not_found") for route in answers}


async def victim(airlock: Airlock, tenant: Tenant) -> tuple[str, str]:
    """A running sandbox with a file and a long exec in it (so every route has a target)."""
    sandbox = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        r = await http.put(f"/v1/sandboxes/{sandbox.id}/files/work/secret.txt", content=b"s3")
        assert r.status_code == 201, r.text
    _, ex = await run_exec(
        tenant.client, sandbox.id, expect=202, cmd=["sleep", "30"], wait=False, timeout_s=40
    )
    assert ex is not None
    return sandbox.id, ex.id


async def assert_untouched(airlock: Airlock, tenant: Tenant, sandbox_id: str, exec_id: str) -> None:
    sandbox = await airlock.get_sandbox(tenant, sandbox_id)
    assert sandbox.state == "running"
    assert sandbox.ttl_s == 600
    async with airlock.http(tenant.key) as http:
        ex = (await http.get(f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}")).json()
        assert ex["state"] == "running"
        history = (await http.get(f"/v1/sandboxes/{sandbox_id}/execs")).json()["items"]
        assert [e["id"] for e in history] == [exec_id]
        files = (await http.get(f"/v1/sandboxes/{sandbox_id}/files")).json()["items"]
        assert [f["name"] for f in files] == ["secret.txt"]


async def test_another_tenant_gets_404_everywhere(airlock: Airlock, tenant: Tenant) -> None:
    sandbox_id, exec_id = await victim(airlock, tenant)
    other = await airlock.tenant()
    async with airlock.http(other.key) as http:
        await assert_all_404(http, sandbox_id, exec_id)
        listed = (await http.get("/v1/sandboxes")).json()["items"]
        assert listed == []
    await assert_untouched(airlock, tenant, sandbox_id, exec_id)


async def test_token_bound_to_another_sandbox_gets_404(airlock: Airlock, tenant: Tenant) -> None:
    sandbox_id, exec_id = await victim(airlock, tenant)
    own = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        r = await http.post(
            "/v1/tokens",
            json={
                "sandbox_id": own.id,
                "scopes": [
                    "sandboxes:read",
                    "sandboxes:write",
                    "exec",
                    "files:read",
                    "files:write",
                    "templates:read",
                    "templates:write",
                ],
            },
        )
        assert r.status_code == 201, r.text
        token = r.json()["token"]

    async with airlock.http(token) as bound:
        await assert_all_404(bound, sandbox_id, exec_id)
        # Routes about the tenant rather than its sandbox are refused, scopes or not.
        assert (await bound.get("/v1/sandboxes")).status_code == 403
        build = {"name": "from-bound", "setup": [["sh", "-c", "echo built"]]}
        assert (await bound.post("/v1/templates", json=build)).status_code == 403
        assert (await bound.get("/v1/templates")).status_code == 403

        # Its own sandbox works.
        assert (await bound.get(f"/v1/sandboxes/{own.id}")).status_code == 200
        r = await bound.post(f"/v1/sandboxes/{own.id}/execs", json={"cmd": ["echo", "mine"]})
        assert r.status_code == 200, r.text
        assert r.json()["stdout"] == "mine\n"
        history = (await bound.get(f"/v1/sandboxes/{own.id}/execs")).json()["items"]
        assert [e["id"] for e in history] == [r.json()["id"]]
        r = await bound.put(f"/v1/sandboxes/{own.id}/files/work/mine.txt", content=b"ok")
        assert r.status_code == 201, r.text
        r = await bound.get(f"/v1/sandboxes/{own.id}/files/work/mine.txt")
        assert (r.status_code, r.content) == (200, b"ok")
        # It cannot make sandboxes outside its binding either.
        assert (await bound.post("/v1/sandboxes", json={})).status_code == 403
    await assert_untouched(airlock, tenant, sandbox_id, exec_id)
    async with airlock.http(tenant.key) as http:
        templates = (await http.get("/v1/templates")).json()["items"]
        assert "from-bound" not in [t["name"] for t in templates]


async def test_token_bound_to_another_tenants_sandbox_sees_nothing(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox_id, exec_id = await victim(airlock, tenant)
    other = await airlock.tenant()
    async with airlock.http(other.key) as http:
        r = await http.post("/v1/tokens", json={"sandbox_id": sandbox_id})
    if r.status_code == 201:
        async with airlock.http(r.json()["token"]) as bound:
            await assert_all_404(bound, sandbox_id, exec_id)
    else:
        assert r.status_code in (404, 422), r.text
    await assert_untouched(airlock, tenant, sandbox_id, exec_id)

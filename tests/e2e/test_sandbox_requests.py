"""Sandbox requests that cannot be met, and a sandbox that dies under its memory cap."""

from __future__ import annotations

from tests.e2e.conftest import Airlock, Tenant, run_exec


async def test_unknown_image_is_404_and_writes_nothing(airlock: Airlock, tenant: Tenant) -> None:
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/sandboxes", json={"image": "does-not-exist"})
        assert r.status_code == 404, r.text
        assert r.json()["code"] == "image_not_found"
        assert (await http.get("/v1/sandboxes")).json()["items"] == []
    rows = await airlock.db.count("SELECT count(*) FROM sandboxes WHERE tenant_id = $1", tenant.id)
    assert rows == 0


async def test_memory_cap_ends_as_oom_and_the_sandbox_says_why(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant, memory_mib=128, disk_mib=64)
    _, ex = await run_exec(
        tenant.client,
        sandbox.id,
        cmd=["python3", "-c", "x = bytearray(400 << 20); print('survived')"],
    )
    assert ex is not None
    assert ex.outcome == "oom", ex
    assert "survived" not in ex.stdout
    current = await airlock.get_sandbox(tenant, sandbox.id)
    if current.state == "failed":  # the whole sandbox went down with it: it must say so
        assert current.failure_reason == "oom"
        async with airlock.http(tenant.key) as http:
            r = await http.post(f"/v1/sandboxes/{sandbox.id}/execs", json={"cmd": ["true"]})
            assert r.status_code == 409, r.text
            assert r.json()["code"] == "sandbox_not_running"
            assert (await http.delete(f"/v1/sandboxes/{sandbox.id}")).status_code == 204
        assert (await airlock.get_sandbox(tenant, sandbox.id)).state == "stopped"
    else:
        assert current.state == "running"
        _, after = await run_exec(tenant.client, sandbox.id, cmd=["echo", "alive"])
        assert after is not None and after.stdout == "alive\n"

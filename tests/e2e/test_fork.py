"""Fork and save through HTTP on gVisor: a child started from a live snapshot of its parent
has the parent's files and memory at that moment, then diverges, with its own identity and
randomness; a template made from a sandbox starts new sandboxes with its files."""

from __future__ import annotations

import asyncio
import contextlib

import httpx

from tests.e2e.conftest import Airlock, Tenant, audit_events
from tests.e2e.test_pause import SILENT, unanswered_request

IDENTITY = "import os, socket; print(socket.gethostname(), os.urandom(16).hex())"


async def run(http: httpx.AsyncClient, sid: str, *cmd: str) -> str:
    r = await http.post(f"/v1/sandboxes/{sid}/execs", json={"cmd": list(cmd)})
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    return str(r.json()["stdout"])


async def test_a_fork_has_the_parents_state_then_diverges(airlock: Airlock, tenant: Tenant) -> None:
    parent = await airlock.sandbox(tenant, labels={"who": "parent"})
    async with airlock.http(tenant.key) as http:
        r = await http.put(f"/v1/sandboxes/{parent.id}/files/work/shared.txt", content=b"both")
        assert r.status_code == 201
        r = await http.post(f"/v1/sandboxes/{parent.id}/fork", json={"ttl_s": 300})
        assert r.status_code == 201, r.text
        child = r.json()
        tenant.sandboxes.append(child["id"])
        assert child["state"] == "running" and child["id"] != parent.id, child
        assert (child["started_from"], child["ttl_s"], child["labels"]) == (
            "fork",
            300,
            {"who": "parent"},
        )
        assert child["size"] == parent.size and child["network"] == parent.network.to_dict()

        # What the parent had is in the child; what each writes after is its own.
        assert await run(http, child["id"], "cat", "/work/shared.txt") == "both"
        await run(http, parent.id, "sh", "-c", "echo p > /work/only-parent")
        await run(http, child["id"], "sh", "-c", "echo c > /work/only-child")
        r = await http.get(f"/v1/sandboxes/{child['id']}/files/work/only-parent")
        assert r.status_code == 404, r.text
        r = await http.get(f"/v1/sandboxes/{parent.id}/files/work/only-child")
        assert r.status_code == 404, r.text

        # Its own identity and randomness.
        host_p, rand_p = (await run(http, parent.id, "python3", "-c", IDENTITY)).split()
        host_c, rand_c = (await run(http, child["id"], "python3", "-c", IDENTITY)).split()
        assert host_p != host_c and rand_p != rand_c
    actions = {(e["action"], e["target"]) for e in await audit_events(airlock, tenant)}
    assert ("sandbox.fork", parent.id) in actions and ("sandbox.create", child["id"]) in actions
    transitions = await airlock.db.fetch(
        "SELECT reason FROM sandbox_transitions WHERE sandbox_id = $1 ORDER BY id", child["id"]
    )
    assert transitions[0]["reason"] == f"forked from {parent.id}"


async def test_a_fork_of_a_busy_or_missing_sandbox_is_refused(
    airlock: Airlock, tenant: Tenant
) -> None:
    parent = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        # Running execs go into the child (as processes); a connection open through the port
        # route cannot (a snapshot could cut one of its frames in two).
        body = {"cmd": ["python3", "-c", SILENT], "wait": False, "timeout_s": 120}
        r = await http.post(f"/v1/sandboxes/{parent.id}/execs", json=body)
        assert r.status_code == 202
        waiting = await unanswered_request(http, f"/v1/sandboxes/{parent.id}/ports/8009/")
        r = await http.post(f"/v1/sandboxes/{parent.id}/fork", json={})
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        assert (r.status_code, r.json()["code"]) == (409, "sandbox_busy"), r.text
        assert "port connection" in r.json()["detail"], r.text
        r = await http.post("/v1/sandboxes/sbx_00000000000000000000000000000000/fork", json={})
        assert r.status_code == 404, r.text
    failed = await airlock.db.fetch(
        "SELECT state FROM sandboxes WHERE tenant_id = $1 AND started_from = 'fork'", tenant.id
    )
    assert failed == [], "a refused fork wrote a sandbox"


async def test_a_template_from_a_sandbox_starts_sandboxes_with_its_files(
    airlock: Airlock, tenant: Tenant
) -> None:
    source = await airlock.sandbox(tenant, size="small", env={"FROM": "source"})
    async with airlock.http(tenant.key) as http:
        await run(http, source.id, "sh", "-c", "mkdir -p /work/app && echo v1 > /work/app/v")
        body = {"name": "saved-app", "from_sandbox": source.id}
        r = await http.post("/v1/templates", json=body)
        assert r.status_code == 202, r.text
        assert r.json()["versions"][0]["from_sandbox"] == source.id
        deadline = asyncio.get_running_loop().time() + 120
        while (template := (await http.get("/v1/templates/saved-app")).json())["state"] in (
            "queued",
            "building",
        ):
            assert asyncio.get_running_loop().time() < deadline, template
            await asyncio.sleep(0.5)
        version = template["versions"][0]
        assert template["state"] == "ready", version["build_log"]
        assert version["start_mode"] == "snapshot" and version["env"] == {"FROM": "source"}

        # The source goes on; what it writes now is not in the template.
        await run(http, source.id, "sh", "-c", "echo later > /work/app/later")
        r = await http.post("/v1/sandboxes", json={"template": "saved-app", "ttl_s": 300})
        assert r.status_code == 201, r.text
        made = r.json()["id"]
        tenant.sandboxes.append(made)
        assert await run(http, made, "cat", "/work/app/v") == "v1\n"
        assert await run(http, made, "sh", "-c", "echo $FROM; ls /work/app") == "source\nv\n"

        # What such a request may not say, and whose sandbox it may name.
        r = await http.post("/v1/templates", json={**body, "setup": [["true"]]})
        assert (r.status_code, r.json()["fields"]) == (422, ["setup"]), r.text
        other = await airlock.tenant()
        async with airlock.http(other.key) as theirs:
            r = await theirs.post("/v1/templates", json={"name": "stolen", "from_sandbox": made})
            assert r.status_code == 404, r.text

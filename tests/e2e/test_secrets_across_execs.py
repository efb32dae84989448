"""A secret given to one exec stays masked in every exec of its sandbox: another exec, run by a
token bound to the sandbox with only `exec`, that prints `/proc/*/environ` (where the first
exec's process still holds it) sees `***`, in its answer, its stored record and its event
stream, also when it started before the secret arrived."""

from __future__ import annotations

import asyncio
import secrets

from tests.e2e.conftest import Airlock, Tenant, run_exec, sse_events

DUMP_ENVIRON = "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n'"


async def test_another_exec_printing_proc_environ_sees_the_secret_masked(
    airlock: Airlock, tenant: Tenant
) -> None:
    canary = "atk-" + secrets.token_hex(16)
    box = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/tokens", json={"scopes": ["exec"], "sandbox_id": box.id})
        assert r.status_code == 201, r.text
        exec_only = airlock.client(r.json()["token"])

    # Started before any secret came: it prints the environ of everything once it has.
    _, early = await run_exec(
        exec_only,
        box.id,
        expect=202,
        cmd=[
            "sh",
            "-c",
            f"until grep -qs ATK_SECRET /proc/[0-9]*/environ; do sleep 0.1; done; {DUMP_ENVIRON}",
        ],
        wait=False,
        timeout_s=60,
    )
    assert early is not None
    # Exec 1 gets the secret and leaves a process holding it in its environment.
    await run_exec(
        tenant.client,
        box.id,
        expect=202,
        cmd=["sleep", "30"],
        secrets={"ATK_SECRET": canary},
        wait=False,
    )
    # Exec 2, by the exec-only token, reads it from /proc; and puts it in its own argv.
    _, dumped = await run_exec(
        exec_only,
        box.id,
        cmd=["sh", "-c", f"sleep 0.5; {DUMP_ENVIRON}", "sh", canary],
    )
    assert dumped is not None and dumped.exit_code == 0, dumped
    assert "ATK_SECRET=***" in dumped.stdout, dumped.stdout
    assert dumped.cmd[-1] == "***", dumped.cmd

    seen = {"exec 2's answer": dumped.stdout}
    async with airlock.http(r.json()["token"]) as http:
        for ran in (dumped.id, early.id):
            for _ in range(200):
                stored = (await http.get(f"/v1/sandboxes/{box.id}/execs/{ran}")).json()
                if stored["state"] != "running":
                    break
                await asyncio.sleep(0.1)
            assert "ATK_SECRET=***" in stored["stdout"], stored
            seen[f"stored {ran}"] = repr(stored)
            async with http.stream("GET", f"/v1/sandboxes/{box.id}/execs/{ran}/events") as events:
                seen[f"events of {ran}"] = repr([e async for e in sse_events(events)])
    seen["database"] = await airlock.db.dump()
    leaked = [where for where, text in seen.items() if canary in text or canary[:16] in text]
    assert leaked == [], f"the secret appears in: {leaked}"


async def test_a_fork_of_a_sandbox_holding_a_secret_masks_it_in_the_childs_execs(
    airlock: Airlock, tenant: Tenant
) -> None:
    canary = "atk-" + secrets.token_hex(16)
    parent = await airlock.sandbox(tenant)
    # The parent's process holds the secret in its environment; the fork copies that process.
    await run_exec(
        tenant.client,
        parent.id,
        expect=202,
        cmd=["sleep", "60"],
        secrets={"ATK_SECRET": canary},
        wait=False,
    )
    async with airlock.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{parent.id}/fork", json={})
        assert r.status_code == 201, r.text
        child = r.json()["id"]
        tenant.sandboxes.append(child)
    _, dumped = await run_exec(tenant.client, child, cmd=["sh", "-c", DUMP_ENVIRON])
    assert dumped is not None and dumped.exit_code == 0, dumped
    assert "ATK_SECRET=***" in dumped.stdout, dumped.stdout
    assert canary not in dumped.stdout and canary[:16] not in dumped.stdout

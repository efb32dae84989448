"""A tenant's stored exec output is capped (`max_stored_output_mib`) like a log store: no
exec is refused for old output; past the cap the output of its oldest finished execs is
deleted, their records stay and say so. And execs running at once stay within
`max_running_execs` when their starts race."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.e2e.conftest import Airlock, Tenant, sse_events

MIB = 1 << 20
PRINTED = 400_000  # each exec prints this many characters and a newline


async def stored_in_db(airlock: Airlock, tenant_id: str) -> int:
    """The real size of the tenant's stored output: its chunks' bytes."""
    return await airlock.db.count(
        "SELECT coalesce(sum(length(c.data)), 0) FROM exec_chunks c "
        "JOIN execs e ON e.id = c.exec_id WHERE e.tenant_id = $1",
        tenant_id,
    )


async def tenant_usage(airlock: Airlock, tenant_id: str) -> dict[str, Any]:
    async with airlock.http(airlock.operator_key) as http:
        r = await http.get(f"/v1/tenants/{tenant_id}")
    assert r.status_code == 200, r.text
    assert r.json()["quotas"]["max_stored_output_mib"] == 1
    return r.json()["usage"]


async def test_stored_output_is_trimmed_to_the_cap_oldest_first(airlock: Airlock) -> None:
    tenant = await airlock.tenant(max_stored_output_mib=1)
    sandbox = await airlock.sandbox(tenant)
    ids = []
    async with airlock.http(tenant.key) as http:
        for n in range(6):
            code = f"print('{n}' * {PRINTED})"
            r = await http.post(
                f"/v1/sandboxes/{sandbox.id}/execs", json={"cmd": ["python3", "-c", code]}
            )
            assert r.status_code == 200, r.text  # never refused for what is stored
            assert r.json()["stdout"] == f"{n}" * PRINTED + "\n"
            ids.append(r.json()["id"])
        # The trim runs right after the finish that passed the cap, off the request's path.
        for _ in range(200):
            stored = await stored_in_db(airlock, tenant.id)
            if stored <= MIB:
                break
            await asyncio.sleep(0.05)
        assert stored <= MIB, f"{stored} bytes stored for a cap of {MIB}"
        assert (await tenant_usage(airlock, tenant.id))["stored_output_bytes"] == stored
        counter = await airlock.db.count(
            "SELECT stored_output_bytes FROM tenant_usage WHERE tenant_id = $1", tenant.id
        )
        assert counter == stored

        kept = MIB // (PRINTED + 1)  # the newest execs whose output fits under the cap
        assert kept >= 1 and stored == kept * (PRINTED + 1)
        for n, exec_id in enumerate(ids):
            got = (await http.get(f"/v1/sandboxes/{sandbox.id}/execs/{exec_id}")).json()
            assert got["exit_code"] == 0 and got["stdout_bytes"] == PRINTED + 1
            if n >= len(ids) - kept:
                assert got["output_purged"] is False
                assert got["stdout"] == f"{n}" * PRINTED + "\n"
            else:
                assert got["output_purged"] is True
                assert got["stdout"] == "" and got["stderr"] == ""
        listed = (await http.get(f"/v1/sandboxes/{sandbox.id}/execs")).json()["items"]
        purged = {e["id"]: e["output_purged"] for e in listed}
        assert [purged[i] for i in ids] == [True] * (len(ids) - kept) + [False] * kept

        # The event stream of a purged exec says so in its `exit` event, as of a kept one.
        async with http.stream("GET", f"/v1/sandboxes/{sandbox.id}/execs/{ids[0]}/events") as r:
            assert r.status_code == 200
            events = [e async for e in sse_events(r)]
        assert [e.event for e in events] == ["exit"]
        assert events[0].data["output_purged"] is True and events[0].data["exit_code"] == 0
        async with http.stream("GET", f"/v1/sandboxes/{sandbox.id}/execs/{ids[-1]}/events") as r:
            events = [e async for e in sse_events(r)]
        assert events[-1].event == "exit" and events[-1].data["output_purged"] is False
        assert "".join(e.data["text"] for e in events[:-1]) == f"{len(ids) - 1}" * PRINTED + "\n"


async def racing_starts(airlock: Airlock, tenant: Tenant, sandboxes: list[str]) -> list[int]:
    """20 execs of `sleep 3` started at once, each on a connection of its own."""
    slow = {"cmd": ["sleep", "3"], "wait": False, "timeout_s": 30}
    clients = [airlock.http(tenant.key) for _ in range(20)]
    try:
        answers = await asyncio.gather(
            *(
                http.post(f"/v1/sandboxes/{sandboxes[n % len(sandboxes)]}/execs", json=slow)
                for n, http in enumerate(clients)
            )
        )
    finally:
        for http in clients:
            await http.aclose()
    for r in answers:
        if r.status_code == 429:
            assert r.json()["quota"] == "max_running_execs", r.text
            assert int(r.headers["Retry-After"]) >= 1
    return sorted(r.status_code for r in answers)


async def test_racing_exec_starts_stay_within_max_running_execs(airlock: Airlock) -> None:
    tenant = await airlock.tenant(max_running_execs=3)
    sandboxes = [(await airlock.sandbox(tenant)).id for _ in range(2)]
    running = "SELECT count(*) FROM execs WHERE tenant_id = $1 AND state = 'running'"
    # The first wave finds the tenant's audit chain head unknown to the server, the second
    # known (the start's single statement).
    for wave in range(2):
        codes = await racing_starts(airlock, tenant, sandboxes)
        assert codes == [202] * 3 + [429] * 17, codes
        assert await airlock.db.count(running, tenant.id) == 3
        for _ in range(200):
            if await airlock.db.count(running, tenant.id) == 0:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"wave {wave}: the execs did not end")
    started = await airlock.db.count("SELECT count(*) FROM execs WHERE tenant_id = $1", tenant.id)
    assert started == 6


async def test_output_of_an_exec_cut_off_by_a_crash_is_counted(airlock: Airlock) -> None:
    """An exec the server's crash cut off has no finish to count its output: the restart's
    reconciler counts what it stored, so the tenant's usage stays exact."""
    tenant = await airlock.tenant(max_stored_output_mib=1)
    sandbox = await airlock.sandbox(tenant)
    code = f"import time; print('c' * {PRINTED}, flush=True); time.sleep(60)"
    async with airlock.http(tenant.key) as http:
        r = await http.post(
            f"/v1/sandboxes/{sandbox.id}/execs",
            json={"cmd": ["python3", "-c", code], "wait": False, "timeout_s": 120},
        )
        assert r.status_code == 202, r.text
        exec_id = r.json()["id"]
        for _ in range(200):
            if await stored_in_db(airlock, tenant.id) >= PRINTED // 2:
                break
            await asyncio.sleep(0.05)
        assert (await tenant_usage(airlock, tenant.id))["stored_output_bytes"] == 0  # running
    airlock.server.kill()
    airlock.server.start()
    await airlock.server.wait_ready()
    async with airlock.http(tenant.key) as http:
        got = (await http.get(f"/v1/sandboxes/{sandbox.id}/execs/{exec_id}")).json()
    assert got["state"] == "interrupted"
    stored = await stored_in_db(airlock, tenant.id)
    assert stored >= PRINTED // 2 and got["stdout"] == ("c" * PRINTED + "\n")[:stored]
    assert (await tenant_usage(airlock, tenant.id))["stored_output_bytes"] == stored

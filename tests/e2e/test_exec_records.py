"""What an exec leaves behind: audit events before and after it runs, a capped output that says
so, and a history that pages."""

from __future__ import annotations

import asyncio

from tests.e2e.conftest import Airlock, Tenant, audit_events, run_exec


async def test_audit_start_before_the_command_and_finish_after(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant)
    _, ex = await run_exec(
        tenant.client,
        sandbox.id,
        expect=202,
        cmd=["sh", "-c", "sleep 2; echo out; echo err >&2; exit 3"],
        wait=False,
    )
    assert ex is not None

    def of_exec(events: list[dict]) -> list[dict]:
        return [e for e in events if e["target"] == ex.id]

    early = of_exec(await audit_events(airlock, tenant))
    assert [e["action"] for e in early] == ["exec.start"]
    assert early[0]["details"]["cmd"] == ["sh", "-c", "sleep 2; echo out; echo err >&2; exit 3"]
    async with airlock.http(tenant.key) as http:
        for _ in range(60):
            state = (await http.get(f"/v1/sandboxes/{sandbox.id}/execs/{ex.id}")).json()["state"]
            if state != "running":
                break
            await asyncio.sleep(0.25)
    later = of_exec(await audit_events(airlock, tenant))
    finish = [e for e in later if e["action"] == "exec.finish"]
    assert len(finish) == 1
    details = finish[0]["details"]
    assert details["exit_code"] == 3
    assert (details["stdout_bytes"], details["stderr_bytes"]) == (4, 4)
    assert details["duration_ms"] >= 2000
    assert finish[0]["outcome"] == "exited"


async def test_output_cap(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    _, ex = await run_exec(
        tenant.client,
        sandbox.id,
        cmd=["python3", "-c", "print('x' * 5000); import sys; print('y' * 10, file=sys.stderr)"],
        max_output_bytes=1000,
    )
    assert ex is not None and ex.exit_code == 0
    assert ex.stdout_truncated is True
    assert ex.stderr_truncated is False
    assert ex.stdout == "x" * len(ex.stdout) and 0 < len(ex.stdout) <= 1000
    assert ex.stderr == "y" * 10 + "\n"


async def test_history_pages(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    made = []
    for i in range(5):
        _, ex = await run_exec(tenant.client, sandbox.id, cmd=["echo", str(i)])
        assert ex is not None
        made.append(ex.id)
    seen: list[str] = []
    cursor = None
    async with airlock.http(tenant.key) as http:
        for _ in range(5):
            params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
            page = (await http.get(f"/v1/sandboxes/{sandbox.id}/execs", params=params)).json()
            assert len(page["items"]) <= 2
            seen.extend(e["id"] for e in page["items"])
            cursor = page["next_cursor"]
            if not cursor:
                break
    assert seen == made

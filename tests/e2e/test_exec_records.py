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


def _runtime_ms(header: str | None) -> float | None:
    for entry in (header or "").split(","):
        name, *params = (p.strip() for p in entry.split(";"))
        if name == "runtime":
            return float(dict(p.split("=", 1) for p in params)["dur"])
    return None


async def test_an_answered_exec_says_its_runtime_part(airlock: Airlock, tenant: Tenant) -> None:
    """`Server-Timing: runtime;dur=` on an exec answered in its request: the command's time in
    the runtime, which the whole round trip contains; an exec answered before it ends has none."""
    sandbox = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        url = f"/v1/sandboxes/{sandbox.id}/execs"
        r = await http.post(url, json={"cmd": ["sleep", "0.3"]})
        assert r.status_code == 200, r.text
        runtime_ms = _runtime_ms(r.headers.get("server-timing"))
        assert runtime_ms is not None, r.headers
        assert 300 <= runtime_ms <= r.elapsed.total_seconds() * 1e3, (runtime_ms, r.elapsed)
        assert r.json()["duration_ms"] <= runtime_ms + 1
        r = await http.post(url, json={"cmd": ["sleep", "1"], "wait": False})
        assert r.status_code == 202, r.text
        assert _runtime_ms(r.headers.get("server-timing")) is None

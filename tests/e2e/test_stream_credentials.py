"""An event stream is no way around revocation: once its token is revoked, a running stream
ends (with an `unauthenticated` event) while the exec goes on; once its tenant is suspended,
the stream ends and so does the exec (tests/e2e/test_suspension.py)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tests.e2e.conftest import Airlock, Event, Tenant, run_exec, sse_events

# Prints for a minute: a stream that outlives its credential would run until `exit`.
PROGRAM = "import time\nfor i in range(120):\n    print(i, flush=True)\n    time.sleep(0.5)\n"


async def stream_until_end(
    airlock: Airlock, credential: str, path: str, cut_off: Callable[[], Awaitable[None]]
) -> list[Event]:
    """Read the stream; after its first output, `cut_off` the credential; read to the end."""
    events: list[Event] = []
    async with airlock.http(credential) as http, http.stream("GET", path) as r:
        assert r.status_code == 200, await r.aread()
        async for event in sse_events(r):
            events.append(event)
            if len(events) == 1:
                await cut_off()
    return events


async def start(airlock: Airlock, tenant: Tenant) -> tuple[str, str]:
    sandbox = await airlock.sandbox(tenant)
    _, started = await run_exec(
        tenant.client, sandbox.id, expect=202, cmd=["python3", "-c", PROGRAM], wait=False
    )
    assert started is not None
    return sandbox.id, started.id


async def assert_cut_off_while_running(
    airlock: Airlock, tenant: Tenant, sandbox_id: str, exec_id: str, events: list[Event]
) -> None:
    assert events[0].event == "stdout", events
    assert events[-1].event == "unauthenticated", [e.event for e in events]
    assert "exit" not in {e.event for e in events}
    async with airlock.http(tenant.key) as http:
        ex = (await http.get(f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}")).json()
        assert ex["state"] == "running", ex  # the stream ended, not the command
        await http.post(f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}/kill")


async def test_a_revoked_token_ends_its_running_stream(airlock: Airlock, tenant: Tenant) -> None:
    sandbox_id, exec_id = await start(airlock, tenant)
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/tokens", json={"scopes": ["exec"], "sandbox_id": sandbox_id})
        assert r.status_code == 201, r.text
        token = r.json()

    async def revoke() -> None:
        async with airlock.http(tenant.key) as http:
            r = await http.delete(f"/v1/tokens/{token['jti']}")
            assert r.status_code == 204, r.text

    path = f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}/events"
    events = await stream_until_end(airlock, token["token"], path, revoke)
    assert events[-1].data == {"code": "unauthenticated", "detail": "token revoked"}
    await assert_cut_off_while_running(airlock, tenant, sandbox_id, exec_id, events)
    # Reconnecting is refused too.
    async with airlock.http(token["token"]) as http:
        assert (await http.get(path)).status_code == 401


async def test_suspending_the_tenant_ends_its_running_streams(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox_id, exec_id = await start(airlock, tenant)

    async def set_status(status: str) -> None:
        async with airlock.http(airlock.operator_key) as op:
            r = await op.patch(f"/v1/tenants/{tenant.id}", json={"status": status})
            assert r.status_code == 200, r.text

    path = f"/v1/sandboxes/{sandbox_id}/execs/{exec_id}/events"
    try:
        events = await stream_until_end(airlock, tenant.key, path, lambda: set_status("suspended"))
    finally:
        await set_status("active")
    # Whichever comes first ends it: the credential found suspended, or the exec's kill.
    assert events[0].event == "stdout", events
    last = events[-1]
    assert (last.event, last.data.get("detail")) in (
        ("unauthenticated", "tenant suspended"),
        ("exit", None),
    ), events
    assert len(events) < 20, "the stream ran on"  # the program prints for a minute


async def test_a_stream_whose_credential_holds_runs_to_the_exit(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant)
    program = "import time\nfor i in range(8):\n    print(i, flush=True)\n    time.sleep(0.5)\n"
    _, started = await run_exec(
        tenant.client, sandbox.id, expect=202, cmd=["python3", "-c", program], wait=False
    )
    assert started is not None
    path = f"/v1/sandboxes/{sandbox.id}/execs/{started.id}/events"
    async with airlock.http(tenant.key) as http, http.stream("GET", path) as r:
        events = [e async for e in sse_events(r)]
    # Four seconds of output: the credential was asked again on the way and held.
    assert "".join(e.data["text"] for e in events if e.event == "stdout") == "".join(
        f"{i}\n" for i in range(8)
    )
    assert events[-1].event == "exit"

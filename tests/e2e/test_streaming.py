"""The exec event stream: a reader that drops and reconnects with Last-Event-ID loses nothing
and sees nothing twice."""

from __future__ import annotations

from tests.e2e.conftest import Airlock, Event, Tenant, run_exec, sse_events

LINES = 40
PROGRAM = (
    "import sys, time\n"
    f"for i in range(1, {LINES + 1}):\n"
    "    print(f'line {i}', flush=True)\n"
    "    if i % 10 == 0: print(f'err {i}', file=sys.stderr, flush=True)\n"
    "    time.sleep(0.05)\n"
)
EXPECTED_STDOUT = "".join(f"line {i}\n" for i in range(1, LINES + 1))
EXPECTED_STDERR = "".join(f"err {i}\n" for i in range(10, LINES + 1, 10))


async def read(airlock: Airlock, tenant: Tenant, path: str, **kw: object) -> list[Event]:
    """Events of one connection; `stop_after` closes it early, like a client that drops."""
    stop_after = kw.pop("stop_after", None)
    events: list[Event] = []
    async with airlock.http(tenant.key) as http, http.stream("GET", path, **kw) as r:
        assert r.status_code == 200, await r.aread()
        assert r.headers["content-type"].startswith("text/event-stream")
        async for event in sse_events(r):
            events.append(event)
            if stop_after is not None and len(events) >= stop_after:
                break
    return events


def text(events: list[Event], stream: str) -> str:
    return "".join(e.data["text"] for e in events if e.event == stream)


async def test_reconnect_with_last_event_id_loses_and_repeats_nothing(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant)
    _, started = await run_exec(
        tenant.client, sandbox.id, expect=202, cmd=["python3", "-c", PROGRAM], wait=False
    )
    assert started is not None and started.state == "running"
    path = f"/v1/sandboxes/{sandbox.id}/execs/{started.id}/events"

    first = await read(airlock, tenant, path, stop_after=3)
    assert len(first) == 3
    assert all(e.event in ("stdout", "stderr") for e in first), first
    rest = await read(airlock, tenant, path, headers={"Last-Event-ID": first[-1].id})

    events = first + rest
    ids = [int(e.id) for e in events if e.id is not None]
    assert ids == sorted(set(ids)), f"event ids repeat or go back: {ids}"
    assert text(events, "stdout") == EXPECTED_STDOUT
    assert text(events, "stderr") == EXPECTED_STDERR
    assert events[-1].event == "exit"
    assert events[-1].data["exit_code"] == 0
    assert events[-1].data["state"] == "finished"
    assert [e.event for e in events].count("exit") == 1


async def test_after_query_resumes_a_finished_exec(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    _, done = await run_exec(tenant.client, sandbox.id, cmd=["python3", "-c", PROGRAM])
    assert done is not None and done.stdout == EXPECTED_STDOUT
    path = f"/v1/sandboxes/{sandbox.id}/execs/{done.id}/events"

    whole = await read(airlock, tenant, path)
    assert text(whole, "stdout") == EXPECTED_STDOUT
    assert whole[-1].event == "exit"
    for cut in range(len(whole) - 1):
        resumed = await read(airlock, tenant, path, params={"after": whole[cut].id})
        assert [(e.id, e.event, e.data) for e in resumed] == [
            (e.id, e.event, e.data) for e in whole[cut + 1 :]
        ]


# Writes "é" (two bytes in UTF-8) one byte at a time, with a pause between the bytes.
SPLIT_CHAR = (
    "import sys, time\n"
    "out = sys.stdout.buffer\n"
    "out.write(b'caf\\xc3'); out.flush(); time.sleep(0.5)\n"
    "out.write(b'\\xa9 ok\\n'); out.flush()\n"
)


async def test_character_split_across_chunks(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    _, done = await run_exec(tenant.client, sandbox.id, cmd=["python3", "-c", SPLIT_CHAR])
    assert done is not None and done.stdout == "café ok\n"
    events = await read(airlock, tenant, f"/v1/sandboxes/{sandbox.id}/execs/{done.id}/events")
    assert text(events, "stdout") == "café ok\n"


async def test_reconnect_after_exit_repeats_nothing(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    _, done = await run_exec(tenant.client, sandbox.id, cmd=["echo", "once"])
    assert done is not None
    path = f"/v1/sandboxes/{sandbox.id}/execs/{done.id}/events"
    whole = await read(airlock, tenant, path)
    assert [e.event for e in whole] == ["stdout", "exit"]
    async with airlock.http(tenant.key) as http:
        r = await http.get(path, headers={"Last-Event-ID": whole[-1].id})
    assert r.status_code == 204 or "event: exit" not in r.text, r.text

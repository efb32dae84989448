"""Pause and resume, idle sleep and wake, through HTTP on gVisor: a paused sandbox holds no
runtime process, and comes back with its files and its processes' memory."""

from __future__ import annotations

import asyncio
import contextlib
import time
from datetime import datetime
from typing import Any

import httpx
import pytest
from airlock_sdk import Sandbox

from tests.e2e.conftest import Airlock, Tenant, audit_events, runtime_processes

# Counts in memory from a random start, holding 64 MiB; writes "<token> <n>" to /work/count.
COUNTER = """
import os, time
token = os.urandom(8).hex()
held = bytearray(64 << 20)
for i in range(0, len(held), 4096):
    held[i] = 1
n = 0
while True:
    n += 1
    with open('/work/count.tmp', 'w') as f:
        f.write(f'{token} {n}')
    os.replace('/work/count.tmp', '/work/count')
    time.sleep(0.05)
"""


async def start_counter(http: httpx.AsyncClient, sid: str) -> None:
    r = await http.put(f"/v1/sandboxes/{sid}/files/work/counter.py", content=COUNTER.encode())
    assert r.status_code == 201, r.text
    # Its stdio to files: a process holding an exec's pipes would keep the sandbox busy.
    cmd = "python3 /work/counter.py </dev/null >/work/counter.log 2>&1 &"
    r = await http.post(f"/v1/sandboxes/{sid}/execs", json={"cmd": ["sh", "-c", cmd]})
    assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
    assert await count(http, sid, at_least=3)


async def count(http: httpx.AsyncClient, sid: str, at_least: int = 0) -> tuple[str, int]:
    """The counter's token and count, once the count is at least `at_least`."""
    deadline = time.monotonic() + 30
    while True:
        r = await http.get(f"/v1/sandboxes/{sid}/files/work/count")
        if r.status_code == 200 and r.text:
            token, n = r.text.split()
            if int(n) >= at_least:
                return token, int(n)
        assert time.monotonic() < deadline, r.text
        await asyncio.sleep(0.1)


async def pause(http: httpx.AsyncClient, sid: str) -> dict[str, Any]:
    r = await http.post(f"/v1/sandboxes/{sid}/pause")
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["state"] == "paused" and body["pause_bytes"] > 0, body
    assert body["paused_at"] and body["pause_expires_at"], body
    return body


async def resume(http: httpx.AsyncClient, sid: str) -> int:
    r = await http.post(f"/v1/sandboxes/{sid}/resume")
    assert r.status_code == 200 and r.json()["state"] == "running", r.text
    assert r.json()["paused_at"] is None, r.json()
    return int(r.headers["airlock-woke-ms"])


async def runtime_id(airlock: Airlock, sid: str) -> str:
    rows = await airlock.db.fetch("SELECT runtime_id FROM sandboxes WHERE id = $1", sid)
    return str(rows[0]["runtime_id"])


@pytest.mark.sqlite
async def test_pause_frees_the_host_and_resume_brings_files_and_memory_back(
    airlock: Airlock, tenant: Tenant
) -> None:
    box = await airlock.sandbox(tenant)
    rid = await runtime_id(airlock, box.id)
    async with airlock.http(tenant.key) as http:
        r = await http.put(f"/v1/sandboxes/{box.id}/files/work/note.txt", content=b"kept")
        assert r.status_code == 201, r.text
        await start_counter(http, box.id)
        assert runtime_processes(rid, airlock.server.state_dir)
        token, before = await count(http, box.id)

        paused = await pause(http, box.id)
        # Its runtime processes are gone, and with them its memory.
        assert not runtime_processes(rid, airlock.server.state_dir)
        await asyncio.sleep(0.5)

        took = await resume(http, box.id)
        # The same process (its token is in its memory), counting on from where it was.
        again, _ = await count(http, box.id, at_least=before + 5)
        assert again == token, "the counting process was restarted, not resumed"
        r = await http.get(f"/v1/sandboxes/{box.id}/files/work/note.txt")
        assert (r.status_code, r.content) == (200, b"kept")
        r = await http.get(f"/v1/sandboxes/{box.id}/transitions")
        states = [t["to_state"] for t in r.json()]
        assert states[-4:] == ["pausing", "paused", "resuming", "running"], states
    events = {e["action"]: e for e in await audit_events(airlock, tenant) if e["target"] == box.id}
    assert events["sandbox.pause"]["details"]["size_bytes"] == paused["pause_bytes"]
    assert events["sandbox.pause"]["details"]["duration_ms"] >= 0
    assert events["sandbox.resume"]["details"]["duration_ms"] == took


async def test_three_pauses_in_a_row_lose_nothing(airlock: Airlock, tenant: Tenant) -> None:
    box = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        await start_counter(http, box.id)
        token, last = await count(http, box.id)
        for round_ in range(3):
            r = await http.put(f"/v1/sandboxes/{box.id}/files/work/r{round_}", content=b"x" * 1000)
            assert r.status_code == 201, r.text
            await pause(http, box.id)
            await resume(http, box.id)
            seen, n = await count(http, box.id, at_least=last + 1)
            assert seen == token and n > last, (round_, seen, n, last)
            last = n
        r = await http.get(f"/v1/sandboxes/{box.id}/files", params={"dir": "/work"})
        names = {e["name"] for e in r.json()["items"]}
        assert {"r0", "r1", "r2", "counter.py", "count"} <= names, names


@pytest.mark.sqlite
async def test_an_idle_sandbox_sleeps_and_the_next_exec_wakes_it(
    airlock: Airlock, tenant: Tenant
) -> None:
    box = await airlock.sandbox(tenant, idle_timeout_s=10)
    async with airlock.http(tenant.key) as http:
        r = await http.put(f"/v1/sandboxes/{box.id}/files/work/a.txt", content=b"before")
        assert r.status_code == 201
        deadline = time.monotonic() + 60
        while (await http.get(f"/v1/sandboxes/{box.id}")).json()["state"] != "paused":
            assert time.monotonic() < deadline, "the idle sandbox was not paused"
            await asyncio.sleep(0.5)
        got = (await http.get(f"/v1/sandboxes/{box.id}")).json()
        idle_for = _seconds(got["paused_at"]) - _seconds(got["last_activity_at"])
        assert idle_for >= 10, got
        r = await http.post(f"/v1/sandboxes/{box.id}/execs", json={"cmd": ["cat", "/work/a.txt"]})
        assert r.status_code == 200 and r.json()["stdout"] == "before", r.text
        assert int(r.headers["airlock-woke-ms"]) > 0, r.headers
        r = await http.get(f"/v1/sandboxes/{box.id}/transitions")
        reasons = [(t["to_state"], t["reason"]) for t in r.json()]
        assert ("pausing", "idle") in reasons and ("resuming", "woken: exec") in reasons, reasons
        # Sleep can be turned off (and on again) on a running sandbox.
        r = await http.patch(f"/v1/sandboxes/{box.id}", json={"idle_timeout_s": 0})
        assert r.status_code == 200 and r.json()["idle_timeout_s"] is None, r.text
        r = await http.patch(f"/v1/sandboxes/{box.id}", json={"idle_timeout_s": 10**6})
        assert r.status_code == 422, r.text
        # A file call wakes it too.
        r = await http.post(f"/v1/sandboxes/{box.id}/pause")
        assert r.status_code == 200
        r = await http.get(f"/v1/sandboxes/{box.id}/files/work/a.txt")
        assert (r.status_code, r.content) == (200, b"before") and "airlock-woke-ms" in r.headers


# Accepts connections on port 8009 and never answers them.
SILENT = """
import socket
s = socket.socket()
s.bind(("127.0.0.1", 8009))
s.listen()
held = []
while True:
    held.append(s.accept()[0])
"""


async def test_what_a_pause_refuses(airlock: Airlock) -> None:
    tenant = await airlock.tenant(max_paused_sandboxes=1)
    one, two = await airlock.sandbox(tenant), await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        # A connection open through the port route keeps the sandbox busy (a checkpoint could
        # cut one of its frames in two), and the refusal says so.
        body = {"cmd": ["python3", "-c", SILENT], "wait": False, "timeout_s": 120}
        r = await http.post(f"/v1/sandboxes/{one.id}/execs", json=body)
        assert r.status_code == 202, r.text
        waiting = await unanswered_request(http, f"/v1/sandboxes/{one.id}/ports/8009/")
        r = await http.post(f"/v1/sandboxes/{one.id}/pause")
        assert (r.status_code, r.json()["code"]) == (409, "sandbox_busy"), r.text
        assert "port connection" in r.json()["detail"], r.text
        assert (await http.get(f"/v1/sandboxes/{one.id}")).json()["state"] == "running"
        waiting.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        # The tenant's paused quota.
        await pause(http, two.id)
        deadline = time.monotonic() + 20
        while (r := await http.post(f"/v1/sandboxes/{one.id}/pause")).status_code == 409:
            assert time.monotonic() < deadline, r.text  # the connection is still closing
            await asyncio.sleep(0.2)
        assert (r.status_code, r.json()["quota"]) == (429, "max_paused_sandboxes"), r.text
        # Resuming a running sandbox, pausing a paused one: answered as they are.
        r = await http.post(f"/v1/sandboxes/{one.id}/resume")
        assert r.status_code == 200 and "airlock-woke-ms" not in r.headers
        r = await http.post(f"/v1/sandboxes/{two.id}/pause")
        assert r.status_code == 200 and r.json()["state"] == "paused"
        # A paused sandbox is deleted with its checkpoint.
        rid = await runtime_id(airlock, two.id)
        r = await http.delete(f"/v1/sandboxes/{two.id}")
        assert r.status_code == 204, r.text
        assert (await http.get(f"/v1/sandboxes/{two.id}")).json()["state"] == "stopped"
    assert not (airlock.server.state_dir / "gvisor" / "sandboxes" / rid).exists()


async def unanswered_request(http: httpx.AsyncClient, path: str) -> asyncio.Task[httpx.Response]:
    """A request left waiting for its answer (tried again until the server listens)."""
    deadline = time.monotonic() + 20
    while True:
        waiting = asyncio.create_task(http.get(path))
        await asyncio.sleep(1)
        if not waiting.done():
            return waiting
        assert time.monotonic() < deadline, waiting.result().text


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()


async def test_a_networked_sandbox_keeps_its_policy_across_a_pause(
    airlock: Airlock, tenant: Tenant
) -> None:
    """Allowed: a listener on the host's side of nothing public is reachable here only through
    an allowlist entry, so the check uses what the policy must refuse: the host itself and a
    private address, both refused before and after, and the sandbox's own interface kept."""
    box = await airlock.sandbox(tenant, network={"mode": "allowlist", "allow": ["1.1.1.1:443"]})
    probe = (
        "import socket\n"
        "def reach(host, port):\n"
        "    s = socket.socket(); s.settimeout(3)\n"
        "    try:\n"
        "        s.connect((host, port)); return 'open'\n"
        "    except OSError as e:\n"
        "        return type(e).__name__\n"
        "print(open('/proc/net/route').read().count('\\n') > 1, reach('10.0.0.1', 80),"
        " reach('169.254.169.254', 80))\n"
    )
    async with airlock.http(tenant.key) as http:
        before = await http.post(
            f"/v1/sandboxes/{box.id}/execs", json={"cmd": ["python3", "-c", probe]}
        )
        assert before.status_code == 200, before.text
        await start_counter(http, box.id)
        token, _ = await count(http, box.id)
        await pause(http, box.id)
        await resume(http, box.id)
        after = await http.post(
            f"/v1/sandboxes/{box.id}/execs", json={"cmd": ["python3", "-c", probe]}
        )
        assert after.json()["stdout"] == before.json()["stdout"], (before.json(), after.json())
        assert before.json()["stdout"].startswith("True ") and "open" not in before.json()["stdout"]
        assert (await count(http, box.id))[0] == token
        got = (await http.get(f"/v1/sandboxes/{box.id}")).json()
        assert got["network"] == {"mode": "allowlist", "allow": ["1.1.1.1:443"]}, got


async def test_a_paused_sandbox_outlives_a_restart_of_the_server(
    airlock: Airlock, tenant: Tenant
) -> None:
    box = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        await start_counter(http, box.id)
        token, n = await count(http, box.id)
        await pause(http, box.id)
    airlock.server.stop()
    airlock.server.start()
    await airlock.server.wait_ready()
    async with airlock.http(tenant.key) as http:
        assert (await http.get(f"/v1/sandboxes/{box.id}")).json()["state"] == "paused"
        await resume(http, box.id)
        seen, _ = await count(http, box.id, at_least=n + 1)
        assert seen == token, "the counting process was restarted, not resumed"


async def test_the_sdk_pauses_resumes_and_forks(airlock: Airlock, tenant: Tenant) -> None:
    def use() -> None:
        with Sandbox.create(ttl=300, url=airlock.server.url, api_key=tenant.key) as box:
            box.files.write("a.txt", "one")
            assert box.pause().state == "paused"
            assert box.run("cat a.txt").stdout == "one"  # woken by the exec
            assert box.refresh().state == "running"
            assert box.pause().state == "paused" and box.resume().state == "running"
            with box.fork(ttl=120, labels={"kind": "child"}) as child:
                assert child.info.labels.to_dict() == {"kind": "child"}
                child.files.write("a.txt", "two")
                assert box.files.read("a.txt") == b"one"
                assert child.files.read("a.txt") == b"two"
                child_id = child.id
            assert box.run("true").ok
        assert Sandbox.connect(child_id, url=airlock.server.url, api_key=tenant.key).state in (
            "stopping",
            "stopped",
        )

    await asyncio.to_thread(use)


async def test_calls_that_come_together_all_wait_for_one_wake(
    airlock: Airlock, tenant: Tenant
) -> None:
    box = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        await pause(http, box.id)
        calls = [
            http.post(f"/v1/sandboxes/{box.id}/execs", json={"cmd": ["echo", str(i)]})
            for i in range(3)
        ] + [http.get(f"/v1/sandboxes/{box.id}/files", params={"dir": "/work"})]
        answers = await asyncio.gather(*calls)
        assert [r.status_code for r in answers] == [200, 200, 200, 200], [r.text for r in answers]
        assert [r.json()["stdout"] for r in answers[:3]] == ["0\n", "1\n", "2\n"]
        # One resume, whichever call made it.
        woke = [r for r in answers if "airlock-woke-ms" in r.headers]
        assert len(woke) == 1, [dict(r.headers) for r in answers]
        r = await http.get(f"/v1/sandboxes/{box.id}/transitions")
        assert [t["to_state"] for t in r.json()].count("resuming") == 1


async def test_calls_that_find_it_resuming_wait_for_that_resume(
    airlock: Airlock, tenant: Tenant
) -> None:
    """An exec and a file read that arrive while another call's resume is under way wait for it
    (they answered 409 "is resuming" when they missed the moment it was still paused)."""
    box = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        for _ in range(5):  # the resume must still be under way when the calls are sent
            await pause(http, box.id)
            resuming = asyncio.create_task(http.post(f"/v1/sandboxes/{box.id}/resume"))
            while not resuming.done():
                r = await airlock.db.fetch("SELECT state FROM sandboxes WHERE id = $1", box.id)
                if r[0]["state"] == "resuming":
                    break
                await asyncio.sleep(0.005)
            if resuming.done():
                assert (await resuming).status_code == 200
                continue
            answers = await asyncio.gather(
                http.post(f"/v1/sandboxes/{box.id}/execs", json={"cmd": ["echo", "hi"]}),
                http.get(f"/v1/sandboxes/{box.id}/files", params={"dir": "/work"}),
            )
            assert (await resuming).status_code == 200
            assert [r.status_code for r in answers] == [200, 200], [r.text for r in answers]
            assert answers[0].json()["stdout"] == "hi\n"
            assert all("airlock-woke-ms" not in r.headers for r in answers)
            return
        pytest.fail("no resume was seen under way in five tries")

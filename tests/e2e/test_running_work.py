"""A tenant's transfers and port connections in flight are capped by its quotas
(`max_running_transfers`, `max_port_connections`) on `airlock serve` with gVisor and
PostgreSQL: past the cap the next one is answered 429 `quota_exceeded` with Retry-After before
any byte moves (a refused upload leaves no file), and a slot is free again once its transfer
or connection ends, whether it finished, was closed, or its client vanished mid-stream."""

from __future__ import annotations

import asyncio
import base64
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import aiohttp
import pytest

from tests.conftest import database_kind
from tests.e2e.conftest import Airlock, Tenant, run_exec
from tests.e2e.test_ports import SOCKET, WEB, port_path, start_servers

WAIT_S = 60.0


def files(sandbox_id: str, path: str) -> str:
    return f"/v1/sandboxes/{sandbox_id}/files{path}"


async def until(check: Callable[[], Awaitable[bool]], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not await check():
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.1)


def assert_refused(r: Any, quota: str, limit: int) -> None:
    assert r.status_code == 429, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    problem = r.json()
    assert problem["code"] == "quota_exceeded", problem
    assert (problem["quota"], problem["limit"]) == (quota, limit), problem
    assert int(r.headers["retry-after"]) >= 1


async def abrupt_stream(airlock: Airlock, tenant: Tenant, path: str) -> asyncio.StreamWriter:
    """A GET of `path` on a bare connection, once its body has begun to arrive; the caller
    aborts the connection (a reset, no goodbye)."""
    url = urlsplit(airlock.server.url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: {url.netloc}\r\n"
        f"Authorization: Bearer {tenant.key}\r\n\r\n".encode()
    )
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT_S)
    assert head.startswith(b"HTTP/1.1 200"), head
    assert await asyncio.wait_for(reader.read(1024), WAIT_S)
    return writer


async def abrupt_socket(airlock: Airlock, tenant: Tenant, path: str) -> asyncio.StreamWriter:
    """A WebSocket to `path` on a bare connection, once accepted; the caller aborts it."""
    url = urlsplit(airlock.server.url)
    reader, writer = await asyncio.open_connection(url.hostname, url.port)
    key = base64.b64encode(os.urandom(16)).decode()
    writer.write(
        f"GET {path} HTTP/1.1\r\nHost: {url.netloc}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
        f"Authorization: Bearer {tenant.key}\r\n\r\n".encode()
    )
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), WAIT_S)
    assert head.startswith(b"HTTP/1.1 101"), head
    return writer


@pytest.mark.sqlite
async def test_transfers_past_the_quota_are_refused_until_one_ends(site: Airlock) -> None:
    airlock = site
    tenant = await airlock.tenant(max_running_transfers=2)
    sandbox = (await airlock.sandbox(tenant)).id
    await run_exec(
        tenant.client, sandbox, cmd=["sh", "-c", "mkfifo /tmp/one /tmp/two"], timeout_s=30
    )
    async with airlock.http(tenant.key) as http:

        async def both_held() -> bool:
            # A download's reader in the sandbox starts once its slot is held, and waits there
            # for a writer to its pipe.
            _, done = await run_exec(
                tenant.client, sandbox, cmd=["pgrep", "-af", "/tmp/(one|two)$"], timeout_s=30
            )
            assert done is not None
            found = str(done.stdout)
            return "/tmp/one" in found and "/tmp/two" in found

        # Each download waits for a writer to its pipe: both hold a slot meanwhile.
        held = [asyncio.create_task(http.get(files(sandbox, f"/tmp/{n}"))) for n in ("one", "two")]
        await until(both_held, "the two downloads never held their slots")
        assert not any(task.done() for task in held)
        assert_refused(await http.get(files(sandbox, "/etc/hostname")), "max_running_transfers", 2)
        if database_kind() != "sqlite":  # on PostgreSQL each slot is a row every replica sees
            sql = "SELECT count(*) FROM running_slots WHERE tenant_id = $1"
            assert await airlock.db.count(sql, tenant.id) == 2
        r = await http.put(files(sandbox, "/work/refused.txt"), content=b"x" * 100_000)
        assert_refused(r, "max_running_transfers", 2)

        await run_exec(
            tenant.client, sandbox, cmd=["sh", "-c", "echo done > /tmp/one"], timeout_s=30
        )
        first = await asyncio.wait_for(held[0], WAIT_S)
        assert (first.status_code, first.content) == (200, b"done\n")

        async def served() -> bool:
            r = await http.get(files(sandbox, "/etc/hostname"))
            return r.status_code == 200

        await until(served, "the finished download's slot was not given back")
        r = await http.put(files(sandbox, "/work/now.txt"), content=b"y" * 100_000)
        assert r.status_code == 201, r.text
        await run_exec(
            tenant.client, sandbox, cmd=["sh", "-c", "echo done > /tmp/two"], timeout_s=30
        )
        assert (await asyncio.wait_for(held[1], WAIT_S)).status_code == 200
        # Nothing of the refused upload was written.
        assert (await http.get(files(sandbox, "/work/refused.txt"))).status_code == 404


async def test_a_download_whose_client_vanished_frees_its_slot(airlock: Airlock) -> None:
    tenant = await airlock.tenant(max_running_transfers=2)
    sandbox = (await airlock.sandbox(tenant)).id
    endless = files(sandbox, "/dev/zero")
    # Two endless downloads, each read a little and then left hanging.
    gone = [await abrupt_stream(airlock, tenant, endless) for _ in range(2)]
    async with airlock.http(tenant.key) as http:
        assert_refused(await http.get(files(sandbox, "/etc/hostname")), "max_running_transfers", 2)
        for writer in gone:
            writer.transport.abort()

        async def both_free() -> bool:
            answers = await asyncio.gather(
                *(http.get(files(sandbox, "/etc/hostname")) for _ in range(2))
            )
            return all(r.status_code == 200 for r in answers)

        await until(both_free, "an aborted download kept its slot")
        held = [await abrupt_stream(airlock, tenant, endless) for _ in range(2)]
        assert_refused(await http.get(files(sandbox, "/etc/hostname")), "max_running_transfers", 2)
        for writer in held:
            writer.transport.abort()


@pytest.mark.sqlite
async def test_port_connections_past_the_quota_are_refused_until_one_closes(
    site: Airlock,
) -> None:
    airlock = site
    tenant = await airlock.tenant(max_port_connections=2)
    sandbox = (await airlock.sandbox(tenant)).id
    await start_servers(airlock, tenant, sandbox)
    url = airlock.server.url + port_path(sandbox, SOCKET, "/chat")
    bearer = {"Authorization": f"Bearer {tenant.key}"}
    async with aiohttp.ClientSession() as session, airlock.http(tenant.key) as http:
        first = await session.ws_connect(url, headers=bearer)
        second = await session.ws_connect(url, headers=bearer)
        for ws in (first, second):
            await ws.send_str("open")
            assert (await ws.receive(timeout=30)).data == "open"
        # A third connection, a WebSocket or a request, is refused while both are open.
        try:
            third = await session.ws_connect(url, headers=bearer)
        except aiohttp.WSServerHandshakeError as exc:
            assert exc.status == 429, exc
        else:
            await third.close()
            raise AssertionError("a third WebSocket was accepted")
        assert_refused(await http.get(port_path(sandbox, WEB, "/")), "max_port_connections", 2)
        await first.close()

        async def served() -> bool:
            return (await http.get(port_path(sandbox, WEB, "/"))).status_code == 200

        await until(served, "a closed WebSocket kept its slot")
        # A client that vanishes without closing its WebSocket frees its slot as well.
        await second.close()
        vanished = [
            await abrupt_socket(airlock, tenant, port_path(sandbox, SOCKET, "/")) for _ in range(2)
        ]
        assert_refused(await http.get(port_path(sandbox, WEB, "/")), "max_port_connections", 2)
        for writer in vanished:
            writer.transport.abort()

        async def both_free() -> bool:
            answers = await asyncio.gather(
                *(http.get(port_path(sandbox, WEB, "/")) for _ in range(2))
            )
            return all(r.status_code == 200 for r in answers)

        await until(both_free, "an aborted WebSocket kept its slot")


async def test_another_tenant_is_not_counted_with_the_first(airlock: Airlock) -> None:
    busy = await airlock.tenant(max_running_transfers=1)
    other = await airlock.tenant(max_running_transfers=1)
    mine, theirs = (await airlock.sandbox(busy)).id, (await airlock.sandbox(other)).id
    held = await abrupt_stream(airlock, busy, files(mine, "/dev/zero"))
    try:
        async with airlock.http(busy.key) as b, airlock.http(other.key) as o:
            assert_refused(await b.get(files(mine, "/etc/hostname")), "max_running_transfers", 1)
            assert (await o.get(files(theirs, "/etc/hostname"))).status_code == 200
    finally:
        held.transport.abort()


@pytest.mark.sqlite
async def test_a_transfer_the_client_saw_end_holds_no_slot(site: Airlock) -> None:
    """A client that has a transfer's whole answer may start the next at once: the slot is
    given back before the last byte goes out (it was given back after, so a quick next call
    could find it still held)."""
    airlock = site
    tenant = await airlock.tenant(max_running_transfers=1)
    sandbox = (await airlock.sandbox(tenant)).id
    async with airlock.http(tenant.key) as http:
        for n in range(40):
            r = await http.put(files(sandbox, f"/work/f{n}.txt"), content=b"z" * 1000)
            assert r.status_code == 201, (n, r.text)
            r = await http.get(files(sandbox, f"/work/f{n}.txt"))
            assert r.status_code == 200 and len(r.content) == 1000, (n, r.text)

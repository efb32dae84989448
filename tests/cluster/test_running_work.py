"""Two API replicas on one PostgreSQL count a tenant's transfers and port connections in
flight together: with one held through each replica, a third is refused by either (429
`quota_exceeded`), and counted once though the replica forwards it to a node."""

from __future__ import annotations

import asyncio
import time

import aiohttp

from tests.cluster.conftest import Cluster
from tests.port_servers import WEBSOCKET

WAIT_S = 60.0


async def test_transfers_held_through_both_replicas_count_against_one_cap(
    cluster: Cluster,
) -> None:
    key = await cluster.tenant(max_running_transfers=2)
    sandbox = await cluster.sandbox(key)
    files = f"/v1/sandboxes/{sandbox}/files"
    async with cluster.http(cluster.apis[0], key) as a, cluster.http(cluster.apis[1], key) as b:
        r = await a.post(
            f"/v1/sandboxes/{sandbox}/execs",
            json={"cmd": ["sh", "-c", "mkfifo /tmp/a /tmp/b"], "timeout_s": 30},
        )
        assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
        # Each download waits for a writer to its pipe, one through each replica.
        held = [
            asyncio.create_task(a.get(f"{files}/tmp/a")),
            asyncio.create_task(b.get(f"{files}/tmp/b")),
        ]
        deadline = time.monotonic() + WAIT_S
        while (await cluster.fetch("SELECT count(*) AS n FROM running_slots"))[0]["n"] < 2:
            assert time.monotonic() < deadline, "the two downloads never held their slots"
            await asyncio.sleep(0.1)
        assert not any(task.done() for task in held)
        for http in (a, b):
            r = await http.get(f"{files}/etc/hostname")
            assert r.status_code == 429, r.text
            assert (r.json()["code"], r.json()["quota"]) == (
                "quota_exceeded",
                "max_running_transfers",
            )
        rows = await cluster.fetch("SELECT count(*) AS n FROM running_slots")
        assert rows[0]["n"] == 2  # counted once: the nodes that served them count nothing
        r = await a.post(
            f"/v1/sandboxes/{sandbox}/execs",
            json={"cmd": ["sh", "-c", "echo a > /tmp/a; echo b > /tmp/b"], "timeout_s": 30},
        )
        assert r.status_code == 200, r.text
        done = await asyncio.wait_for(asyncio.gather(*held), WAIT_S)
        assert [d.content for d in done] == [b"a\n", b"b\n"]
        while (await b.get(f"{files}/etc/hostname")).status_code != 200:
            assert time.monotonic() < deadline, "the finished downloads kept their slots"
            await asyncio.sleep(0.1)


async def test_websockets_open_through_both_replicas_count_against_one_cap(
    cluster: Cluster,
) -> None:
    key = await cluster.tenant(max_port_connections=2)
    sandbox = await cluster.sandbox(key)
    async with cluster.http(cluster.apis[0], key) as http:
        r = await http.put(f"/v1/sandboxes/{sandbox}/files/work/ws.py", content=WEBSOCKET)
        assert r.status_code == 201, r.text
        body = {"cmd": ["python3", "/work/ws.py", "8001"], "wait": False}
        r = await http.post(f"/v1/sandboxes/{sandbox}/execs", json=body)
        assert r.status_code in (201, 202), r.text
    bearer = {"Authorization": f"Bearer {key}"}
    path = f"/v1/sandboxes/{sandbox}/ports/8001/"
    async with aiohttp.ClientSession() as session:
        sockets = []
        for api in cluster.apis:
            deadline = time.monotonic() + WAIT_S
            while True:
                try:
                    sockets.append(await session.ws_connect(api + path, headers=bearer))
                    break
                except aiohttp.WSServerHandshakeError:  # the server is not listening yet
                    assert time.monotonic() < deadline
                    await asyncio.sleep(0.2)
        for api in cluster.apis:
            try:
                extra = await session.ws_connect(api + path, headers=bearer)
            except aiohttp.WSServerHandshakeError as exc:
                assert exc.status == 429, exc
            else:
                await extra.close()
                raise AssertionError(f"a third WebSocket was accepted by {api}")
        await sockets[0].close()
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                sockets.append(await session.ws_connect(cluster.apis[1] + path, headers=bearer))
                break
            except aiohttp.WSServerHandshakeError as exc:
                assert exc.status == 429 and time.monotonic() < deadline, exc
                await asyncio.sleep(0.2)
        for ws in sockets:
            await ws.close()

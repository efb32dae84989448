"""A sandbox's port through the API replicas (tests/cluster/conftest.py): the request goes
to whichever replica, which streams it to the node that holds the sandbox, both ways; a
WebSocket is relayed message by message; a preview link and its cookie work through either
replica, and through the nginx in front of each (as the chart deploys it)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import aiohttp
import httpx
from aiohttp import web

from tests.cluster.conftest import Cluster, serve_here
from tests.port_servers import HTTP, REDIRECTING, WEBSOCKET


async def _serve(
    cluster: Cluster, key: str, sandbox: str, servers: list[tuple[str, str, list[str]]]
) -> None:
    """Start each (file name, script, arguments: its port first) in the sandbox, and wait
    until the first one answers."""
    async with cluster.http(cluster.apis[0], key) as http:
        for name, script, args in servers:
            r = await http.put(f"/v1/sandboxes/{sandbox}/files/work/{name}", content=script)
            assert r.status_code == 201, r.text
            body = {"cmd": ["python3", f"/work/{name}", *args], "wait": False}
            r = await http.post(f"/v1/sandboxes/{sandbox}/execs", json=body)
            assert r.status_code in (201, 202), r.text
        first = servers[0][2][0]
        for _ in range(100):
            if (await http.get(f"/v1/sandboxes/{sandbox}/ports/{first}/")).status_code == 200:
                return
            await asyncio.sleep(0.1)
    raise AssertionError("the server in the sandbox did not start")


async def test_a_port_through_either_replica(cluster: Cluster) -> None:
    key = await cluster.tenant()
    sandbox = await cluster.sandbox(key)
    servers = [("web.py", HTTP, ["8000"]), ("ws.py", WEBSOCKET, ["8001"])]
    await _serve(cluster, key, sandbox, servers)
    payload = os.urandom(3 << 20)

    async def chunks() -> AsyncIterator[bytes]:
        for at in range(0, len(payload), 1 << 18):
            yield payload[at : at + (1 << 18)]

    for api in [*cluster.apis, *cluster.proxies]:
        async with cluster.http(api, key) as http:
            page = await http.get(f"/v1/sandboxes/{sandbox}/ports/8000/info?x=1")
            assert page.status_code == 200 and page.json()["path"] == "/info?x=1", page.text
            # What the proxy tells its replica (the offload key) never reaches the sandbox.
            assert "airlock-offload" not in page.json()["headers"], page.json()
            echoed = await http.post(f"/v1/sandboxes/{sandbox}/ports/8000/echo", content=chunks())
            assert echoed.content == payload
            link = await http.post(f"/v1/sandboxes/{sandbox}/port-links", json={"port": 8000})
            assert link.status_code == 201, link.text
        url = urlsplit(link.json()["url"])
        async with httpx.AsyncClient(base_url=api) as browser:
            first = await browser.get(f"{url.path}?{url.query}")
            assert first.status_code == 200, first.text
            follow = await browser.get(f"/v1/sandboxes/{sandbox}/ports/8000/next")
            assert follow.status_code == 200 and follow.json()["path"] == "/next"
        ws_url = f"{api}/v1/sandboxes/{sandbox}/ports/8001/"
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(ws_url, headers={"Authorization": f"Bearer {key}"}) as ws,
        ):
            for message in ("hello", "y" * 100_000):
                await ws.send_str(message)
                assert (await ws.receive(timeout=30)).data == message
            blob = os.urandom(200_000)
            await ws.send_bytes(blob)
            assert (await ws.receive(timeout=30)).data == blob
    other = await cluster.tenant()
    for api in cluster.apis:
        async with cluster.http(api, other) as stranger:
            r = await stranger.get(f"/v1/sandboxes/{sandbox}/ports/8000/")
            assert r.status_code == 404, r.text


async def test_a_sandbox_cannot_send_the_proxy_in_front_anywhere(cluster: Cluster) -> None:
    """A web server in a sandbox answers with the headers of the replica's internal redirect
    (X-Accel-Redirect to the proxy's node location, a URL and a token of its choosing). Through
    either replica and either nginx, the caller gets the sandbox's own answer without them, and
    nothing fetches the URL: here a server on this host that no sandbox can reach."""
    fetched: list[str] = []

    async def secret(request: web.Request) -> web.Response:
        fetched.append(request.path)
        return web.Response(text="what only the API's host can read")

    app = web.Application()
    app.router.add_get("/{tail:.*}", secret)
    runner, port = await serve_here(app)
    try:
        key = await cluster.tenant()
        sandbox = await cluster.sandbox(key)
        target = f"http://127.0.0.1:{port}/v1/sandboxes/{sandbox}/files/etc/hostname"
        await _serve(cluster, key, sandbox, [("r.py", REDIRECTING, ["8002", target])])
        for url in [*cluster.proxies, *cluster.apis]:
            async with cluster.http(url, key) as http:
                r = await http.get(f"/v1/sandboxes/{sandbox}/ports/8002/")
            assert (r.status_code, r.text) == (200, "the sandbox's own answer"), (url, r.text)
            leaked = [h for h in r.headers if h.startswith(("x-accel", "airlock-offload"))]
            assert not leaked, r.headers
        assert fetched == []
    finally:
        await runner.cleanup()

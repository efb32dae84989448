"""Ports of gVisor sandboxes served through the API: a server started inside a sandbox without
network answers HTTP (streamed both ways, byte-exact) and WebSocket through
/v1/sandboxes/{id}/ports/{port}/..., by host name under the preview domain, to a bearer with
`ports` or a preview link (then its cookie); everyone else gets a 404 (or a 401 for a bad
link), and the sandbox gains no network by it."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from urllib.parse import quote, urlsplit

import aiohttp
import httpx
import pytest

from tests.e2e.conftest import PREVIEW_DOMAIN, Airlock, Tenant
from tests.port_servers import HTTP, WEBSOCKET

WEB, SOCKET, SILENT = 8000, 8001, 8999


async def start_servers(airlock: Airlock, tenant: Tenant, sandbox_id: str) -> None:
    async with airlock.http(tenant.key) as http:
        for name, script in (("web.py", HTTP), ("ws.py", WEBSOCKET)):
            r = await http.put(f"/v1/sandboxes/{sandbox_id}/files/work/{name}", content=script)
            assert r.status_code in (200, 201), r.text
        for name, port in (("web.py", WEB), ("ws.py", SOCKET)):
            body = {"cmd": ["python3", f"/work/{name}", str(port)], "wait": False, "timeout_s": 600}
            r = await http.post(f"/v1/sandboxes/{sandbox_id}/execs", json=body)
            assert r.status_code in (201, 202), r.text
        for _ in range(100):  # until both listen
            up = [await http.get(f"/v1/sandboxes/{sandbox_id}/ports/{port}/") for port in (WEB,)]
            if all(u.status_code == 200 for u in up):
                return
            await asyncio.sleep(0.1)
        raise AssertionError(f"the servers did not start: {[u.text for u in up]}")


@pytest.fixture
async def served(airlock: Airlock, tenant: Tenant) -> AsyncIterator[str]:
    """A sandbox without network, its web server on WEB and WebSocket echo on SOCKET."""
    sandbox = await airlock.sandbox(tenant)
    await start_servers(airlock, tenant, sandbox.id)
    yield sandbox.id


def port_path(sandbox_id: str, port: int, rest: str = "/") -> str:
    return f"/v1/sandboxes/{sandbox_id}/ports/{port}{rest}"


async def link_token(airlock: Airlock, tenant: Tenant, sandbox_id: str, port: int = WEB) -> str:
    """A new preview link's token for `port`: what a browser that opened the link holds as its
    `airlock_preview` cookie."""
    async with airlock.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{sandbox_id}/port-links", json={"port": port})
        assert r.status_code == 201, r.text
    return urlsplit(r.json()["url"]).query.split("=", 1)[1]


async def test_http_through_the_port_route_streams_both_ways(
    airlock: Airlock, tenant: Tenant, served: str
) -> None:
    async with airlock.http(tenant.key) as http:
        spoofed = {"X-Airlock-Preview-Host": "evil.example"}  # only our host layer says it
        r = await http.get(port_path(served, WEB, "/info/a%2Fb?x=1&y=two"), headers=spoofed)
        assert r.status_code == 200, r.text
        seen = r.json()
        assert seen["path"] == "/info/a%2Fb?x=1&y=two"
        assert seen["headers"]["host"] == f"{WEB}-{served}.{PREVIEW_DOMAIN}"
        assert "authorization" not in seen["headers"]
        assert seen["headers"]["x-forwarded-prefix"] == port_path(served, WEB, "")
        assert seen["headers"]["x-forwarded-host"] == urlsplit(airlock.server.url).netloc
        # The sandbox's cookies stay on its port's path, for this host only; none can pose as
        # the preview link's.
        confined = f"Path={port_path(served, WEB)}"
        assert r.headers.get_list("set-cookie") == [f"app=1; {confined}", f"wide=1; {confined}"]
        r = await http.get(port_path(served, WEB, "/"), headers={"Referer": "http://x/?a=1"})
        assert "referer" not in r.json()["headers"]

        big = await http.get(port_path(served, WEB, "/big"))
        assert big.content == bytes(range(256)) * 16384

        payload = os.urandom(3 << 20)

        async def chunks() -> AsyncIterator[bytes]:
            for at in range(0, len(payload), 100_000):
                yield payload[at : at + 100_000]

        echoed = await http.post(port_path(served, WEB, "/echo"), content=chunks())
        assert echoed.status_code == 200
        assert echoed.content == payload  # chunked in, whole out: byte-exact
        fixed = await http.post(port_path(served, WEB, "/echo"), content=payload[:70_000])
        assert fixed.content == payload[:70_000]
        head = await http.head(port_path(served, WEB, "/big"))
        assert head.status_code == 200 and head.headers["content-length"] == str(4 << 20)

        audit = (await http.get("/v1/audit", params={"action": "port.open"})).json()["items"]
        assert {e["target"] for e in audit} == {served}
        assert {e["details"]["port"] for e in audit} == {WEB}


async def test_websocket_echo_through_the_port_route(
    airlock: Airlock, tenant: Tenant, served: str
) -> None:
    url = airlock.server.url + port_path(served, SOCKET, "/chat")
    headers = {"Authorization": f"Bearer {tenant.key}"}
    async with aiohttp.ClientSession() as session:
        async with session.ws_connect(url, headers=headers) as ws:
            for text in ("hello", "x" * 70_000, "é ✓"):
                await ws.send_str(text)
                assert (await ws.receive(timeout=30)).data == text
            blob = os.urandom(256 << 10)
            await ws.send_bytes(blob)
            assert (await ws.receive(timeout=30)).data == blob
            await ws.close()
        # Through the preview host name as well.
        host = {"Host": f"{SOCKET}-{served}.{PREVIEW_DOMAIN}", **headers}
        async with session.ws_connect(airlock.server.url + "/any", headers=host) as ws:
            await ws.send_str("by host")
            assert (await ws.receive(timeout=30)).data == "by host"


async def test_host_names_under_the_preview_domain(
    airlock: Airlock, tenant: Tenant, served: str
) -> None:
    async with airlock.http(tenant.key) as http:
        host = {"Host": f"{WEB}-{served}.{PREVIEW_DOMAIN}"}
        r = await http.get("/v1/anything?q=1", headers=host)
        assert r.status_code == 200, r.text
        assert r.json()["path"] == "/v1/anything?q=1"  # every path is the sandbox's
        assert "x-forwarded-prefix" not in r.json()["headers"]
        nobody = await http.get("/", headers={"Host": f"not-a-port.{PREVIEW_DOMAIN}"})
        assert nobody.status_code == 404
        assert (await http.get("/healthz")).status_code == 200  # other hosts: the API


async def test_who_may_reach_a_port(airlock: Airlock, tenant: Tenant, served: str) -> None:
    other_sandbox = await airlock.sandbox(tenant)
    stranger = await airlock.tenant()
    async with airlock.http(tenant.key) as http:
        no_ports = (await http.post("/v1/tokens", json={"scopes": ["exec"]})).json()["token"]
        elsewhere = (
            await http.post(
                "/v1/tokens", json={"scopes": ["ports"], "sandbox_id": other_sandbox.id}
            )
        ).json()["token"]
        bound = (
            await http.post("/v1/tokens", json={"scopes": ["ports"], "sandbox_id": served})
        ).json()["token"]
    for credential in (no_ports, elsewhere, stranger.key):
        async with airlock.http(credential) as http:
            r = await http.get(port_path(served, WEB))
            assert r.status_code == 404, r.text
            links = await http.post(f"/v1/sandboxes/{served}/port-links", json={"port": WEB})
            assert links.status_code == 404, links.text
    async with airlock.http(bound) as http:
        assert (await http.get(port_path(served, WEB))).status_code == 200
    async with httpx.AsyncClient(base_url=airlock.server.url) as anonymous:
        assert (await anonymous.get(port_path(served, WEB))).status_code == 401


async def test_preview_links(airlock: Airlock, tenant: Tenant, served: str) -> None:
    async with airlock.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{served}/port-links", json={"port": WEB, "ttl_s": 300})
        assert r.status_code == 201, r.text
        link = r.json()
        short = await http.post(
            f"/v1/sandboxes/{served}/port-links", json={"port": WEB, "ttl_s": 1}
        )
        expired_at = time.monotonic() + 1
        audit = (await http.get("/v1/audit", params={"action": "port.link"})).json()["items"]
        assert {e["details"]["jti"] for e in audit} == {link["jti"], short.json()["jti"]}
    url = urlsplit(link["url"])
    assert url.path == port_path(served, WEB)
    async with httpx.AsyncClient(base_url=airlock.server.url) as browser:
        first = await browser.get(f"{url.path}?{url.query}&page=1")
        assert first.status_code == 200, first.text
        assert first.json()["path"] == "/?page=1"  # the link is not passed on
        assert "airlock_preview" not in first.json()["headers"].get("cookie", "")
        assert "airlock_preview=" in first.headers["set-cookie"]
        follow = await browser.get(port_path(served, WEB, "/style.css"))  # the cookie alone
        assert follow.status_code == 200, follow.text
        assert follow.json()["headers"].get("cookie") == "app=1; wide=1"  # only the app's own
        # The link is for one port: the cookie is not sent elsewhere, the link refused there.
        token = url.query.split("=", 1)[1]
        other = await browser.get(port_path(served, SOCKET, f"/?airlock_preview={token}"))
        assert other.status_code == 404
    async with httpx.AsyncClient(base_url=airlock.server.url) as browser:
        tampered = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
        bad = await browser.get(port_path(served, WEB, f"/?airlock_preview={tampered}"))
        assert bad.status_code == 401
        by_host = await browser.get(
            f"/?airlock_preview={quote(token)}",
            headers={"Host": f"{WEB}-{served}.{PREVIEW_DOMAIN}"},
        )
        assert by_host.status_code == 200 and "Path=/;" in by_host.headers["set-cookie"]
        cookies = by_host.headers.get_list("set-cookie")
        assert not any("domain=" in c.lower() for c in cookies), cookies
        assert sum(c.startswith("airlock_preview=") for c in cookies) == 1, cookies
        # Past its expiry (and the tokens' 5 s clock leeway): 401.
        await asyncio.sleep(max(0.0, expired_at + 6 - time.monotonic()))
        old = urlsplit(short.json()["url"])
        assert (await browser.get(f"{old.path}?{old.query}")).status_code == 401
    # Revoked by its jti before it expires, as a token is: the link, and the cookie it left in
    # a browser, are refused from then on.
    async with httpx.AsyncClient(base_url=airlock.server.url) as browser:
        assert (await browser.get(f"{url.path}?{url.query}")).status_code == 200
        async with airlock.http(tenant.key) as http:
            r = await http.delete(f"/v1/tokens/{link['jti']}")
            assert r.status_code == 204, r.text
            revoked = (await http.get("/v1/audit", params={"action": "token.revoke"})).json()
            assert [e["target"] for e in revoked["items"]] == [link["jti"]], revoked
        assert (await browser.get(port_path(served, WEB))).status_code == 401
        assert (await browser.get(f"{url.path}?{url.query}")).status_code == 401


async def test_refusals_and_no_network(airlock: Airlock, tenant: Tenant, served: str) -> None:
    async with airlock.http(tenant.key) as http:
        silent = await http.get(port_path(served, SILENT))
        assert silent.status_code == 502, silent.text
        assert silent.json()["code"] == "port_not_listening"
        assert str(SILENT) in silent.json()["detail"]
        for bad in ("0", "65536", "http"):
            r = await http.get(f"/v1/sandboxes/{served}/ports/{bad}/")
            assert r.status_code == 422, (bad, r.text)
        # The sandbox serves its ports and still has no network of its own.
        probe = (
            "import socket\nprint(sorted(n for _, n in socket.if_nameindex()))\n"
            "try:\n    socket.create_connection(('1.1.1.1', 80), timeout=3)\n"
            "    print('connected')\nexcept OSError as e:\n    print('refused', e)\n"
        )
        r = await http.post(f"/v1/sandboxes/{served}/execs", json={"cmd": ["python3", "-c", probe]})
        out = r.json()["stdout"]
        assert out.splitlines()[0] == "['lo']" and "refused" in out, out
        assert (await http.delete(f"/v1/sandboxes/{served}")).status_code in (200, 202, 204)
        gone = await http.get(port_path(served, WEB))
        files = await http.get(f"/v1/sandboxes/{served}/files/work/web.py")
        assert gone.status_code == files.status_code and gone.status_code in (404, 409)

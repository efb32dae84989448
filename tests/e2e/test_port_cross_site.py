"""A preview link's cookie is for the port's own pages: a request that another site (or
another sandbox's preview host: they are all one site) makes with it, and that may change
state (a POST) or opens a WebSocket, is refused with a 403; the same from the port's own
origin, a request without browser headers, the link itself and a bearer still work."""

from __future__ import annotations

from urllib.parse import urlsplit

import aiohttp
import httpx
import pytest

from tests.e2e.conftest import PREVIEW_DOMAIN, Airlock, Tenant
from tests.e2e.test_ports import SOCKET, WEB, link_token, port_path, start_servers

EVIL = "https://evil.example"


async def test_cross_site_post_and_websocket_with_a_preview_cookie_are_refused(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant)
    await start_servers(airlock, tenant, sandbox.id)
    tokens = {port: await link_token(airlock, tenant, sandbox.id, port) for port in (WEB, SOCKET)}
    own = airlock.server.url
    echo = port_path(sandbox.id, WEB, "/echo")
    other_host = f"http://{WEB}-sbx_other.{PREVIEW_DOMAIN}"
    async with httpx.AsyncClient(base_url=own) as browser:
        first = await browser.get(port_path(sandbox.id, WEB, f"/?airlock_preview={tokens[WEB]}"))
        assert first.status_code == 200 and "airlock_preview" in browser.cookies
        for cross in (
            {"Origin": EVIL},
            {"Origin": EVIL, "Sec-Fetch-Site": "cross-site"},
            {"Sec-Fetch-Site": "cross-site"},
            {"Origin": other_host, "Sec-Fetch-Site": "same-site"},
            {"Origin": "null"},  # an opaque origin: a sandboxed page, this one's included
        ):
            r = await browser.post(echo, content=b"transfer", headers=cross)
            assert r.status_code == 403, (cross, r.status_code, r.text)
            assert r.json()["code"] == "cross_site_refused"
        for same in ({"Origin": own, "Sec-Fetch-Site": "same-origin"}, {}):
            r = await browser.post(echo, content=b"transfer", headers=same)
            assert r.status_code == 200 and r.content == b"transfer", (same, r.text)
        # A link followed from another site is a GET: it opens the page.
        nav = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"}
        assert (await browser.get(port_path(sandbox.id, WEB), headers=nav)).status_code == 200
    # The link itself, and a bearer, are credentials of their own, whatever the origin.
    async with httpx.AsyncClient(base_url=own) as fresh:
        with_link = f"{echo}?airlock_preview={tokens[WEB]}"
        r = await fresh.post(with_link, content=b"x", headers={"Origin": EVIL})
        assert r.status_code == 200, r.text
    async with airlock.http(tenant.key) as http:
        r = await http.post(echo, content=b"x", headers={"Origin": EVIL})
        assert r.status_code == 200, r.text

    cookie = {"Cookie": f"airlock_preview={tokens[SOCKET]}"}
    chat = own + port_path(sandbox.id, SOCKET, "/chat")
    socket_host = f"{SOCKET}-{sandbox.id}.{PREVIEW_DOMAIN}:{urlsplit(own).port}"
    port_origin = f"http://{socket_host}"
    async with aiohttp.ClientSession() as session:
        # Cross-site WebSocket hijacking: on the path route and on the port's host name.
        for url, headers, origin in (
            (chat, cookie, EVIL),
            (own + "/chat", {**cookie, "Host": socket_host}, EVIL),
            (own + "/chat", {**cookie, "Host": socket_host, "Sec-Fetch-Site": "same-site"},
             other_host),
        ):  # fmt: skip
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await session.ws_connect(url, headers=headers, origin=origin)
            assert refused.value.status == 403, (url, origin)
        for url, headers, origin in (
            (chat, cookie, own),
            (own + "/chat", {**cookie, "Host": socket_host}, port_origin),
        ):
            async with session.ws_connect(url, headers=headers, origin=origin) as ws:
                await ws.send_str("same origin")
                assert (await ws.receive(timeout=30)).data == "same origin"

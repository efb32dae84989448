"""A browser that opens a page with a preview link in its URL is sent on (303) to the same page
without it, with the link as its cookie: the address bar, the history and the page's later
`Referer`s never hold the link. Scripts and SDKs (no `Sec-Fetch-*` headers) are answered
directly, as are a frame's page and requests that are not page loads."""

from __future__ import annotations

import httpx

from tests.e2e.conftest import PREVIEW_DOMAIN, Airlock, Tenant
from tests.e2e.test_ports import WEB, link_token, port_path, start_servers

# What a browser sends with the page it opens from a link (typed, or followed from elsewhere).
OPENS = {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "document", "Sec-Fetch-Site": "none"}


async def test_a_browser_opening_a_link_is_sent_on_without_it(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant)
    await start_servers(airlock, tenant, sandbox.id)
    token = await link_token(airlock, tenant, sandbox.id)
    opened = port_path(sandbox.id, WEB, f"/docs/page?x=1&airlock_preview={token}&y=two")
    async with httpx.AsyncClient(base_url=airlock.server.url) as browser:
        r = await browser.get(opened, headers=OPENS)
        assert r.status_code == 303, r.text
        moved = r.url.join(r.headers["location"])
        assert moved.raw_path.decode() == port_path(sandbox.id, WEB, "/docs/page?x=1&y=two")
        cookie = r.headers["set-cookie"]
        assert cookie.startswith(f"airlock_preview={token};"), cookie
        assert f"Path={port_path(sandbox.id, WEB)};" in cookie and "HttpOnly" in cookie
        page = await browser.get(moved, headers=OPENS)  # the cookie alone, as a browser does
        assert page.status_code == 200, page.text
        assert page.json()["path"] == "/docs/page?x=1&y=two"
        # Followed from another site: the same (the link in the query needs no origin check).
        elsewhere = {**OPENS, "Sec-Fetch-Site": "cross-site"}
        async with httpx.AsyncClient(base_url=airlock.server.url) as fresh:
            r = await fresh.get(port_path(sandbox.id, WEB, f"/?airlock_preview={token}"),
                                headers=elsewhere)  # fmt: skip
            assert r.status_code == 303 and r.headers["location"] == "./", r.headers
            page = await fresh.get(r.url.join(r.headers["location"]), headers=elsewhere)
            assert page.status_code == 200 and page.json()["path"] == "/", page.text

    # On the port's host name: the same page of that host, the cookie for the whole host.
    host = {"Host": f"{WEB}-{sandbox.id}.{PREVIEW_DOMAIN}"}
    async with httpx.AsyncClient(base_url=airlock.server.url) as browser:
        r = await browser.get(f"/app/?airlock_preview={token}&tab=2", headers={**OPENS, **host})
        assert r.status_code == 303, r.text
        moved = r.url.join(r.headers["location"])
        assert moved.raw_path == b"/app/?tab=2"
        assert "Path=/;" in r.headers["set-cookie"]
        with_cookie = {**OPENS, **host, "Cookie": f"airlock_preview={token}"}
        page = await browser.get(moved, headers=with_cookie)
        assert page.status_code == 200, page.text
        assert page.json()["path"] == "/app/?tab=2"


async def test_other_callers_get_the_page_with_the_link_in_the_query(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant)
    await start_servers(airlock, tenant, sandbox.id)
    token = await link_token(airlock, tenant, sandbox.id)
    # The other parameters reach the sandbox's server as they were sent.
    query = f"?flag&q=a%20b&airlock_preview={token}&n=1"
    url = port_path(sandbox.id, WEB, f"/{query}")
    frame = {"Sec-Fetch-Mode": "navigate", "Sec-Fetch-Dest": "iframe", "Sec-Fetch-Site": "none"}
    for headers in ({}, frame, {"Sec-Fetch-Mode": "cors", "Sec-Fetch-Dest": "empty"}):
        async with httpx.AsyncClient(base_url=airlock.server.url) as client:
            r = await client.get(url, headers=headers)
            assert r.status_code == 200, (headers, r.status_code, r.text)
            assert r.json()["path"] == "/?flag&q=a%20b&n=1", headers
            cookies = r.headers.get_list("set-cookie")
            assert any(c.startswith(f"airlock_preview={token};") for c in cookies), cookies
    # Its name escaped is still the link (the query is decoded to find it): not passed on.
    async with httpx.AsyncClient(base_url=airlock.server.url) as client:
        r = await client.get(port_path(sandbox.id, WEB, f"/?airlock%5Fpreview={token}&n=1"))
        assert r.status_code == 200 and r.json()["path"] == "/?n=1", r.text
    async with httpx.AsyncClient(base_url=airlock.server.url) as browser:
        r = await browser.post(url, content=b"form", headers=OPENS)  # a form posted to it
        assert r.status_code == 200 and r.content == b"form", r.text

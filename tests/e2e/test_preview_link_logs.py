"""A preview link is a bearer credential carried in a URL: the server's log shows each request
it served, query included, with the link's value as `***`, never the link; its audit records
of the port's use hold no link either."""

from __future__ import annotations

import asyncio

import httpx

from tests.e2e.conftest import PREVIEW_DOMAIN, Airlock, Tenant, audit_events
from tests.e2e.test_ports import WEB, link_token, port_path, start_servers


async def logged(airlock: Airlock, text: str) -> str:
    """The server's log once it holds `text` (an access line is written as its answer ends)."""
    for _ in range(50):
        log = airlock.server.log()
        if text in log:
            return log
        await asyncio.sleep(0.1)
    return airlock.server.log()


async def test_the_log_shows_a_preview_link_redacted(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    await start_servers(airlock, tenant, sandbox.id)
    token = await link_token(airlock, tenant, sandbox.id)
    async with httpx.AsyncClient(base_url=airlock.server.url) as browser:
        by_path = await browser.get(port_path(sandbox.id, WEB, f"/?page=1&airlock_preview={token}"))
        assert by_path.status_code == 200, by_path.text
        by_host = await browser.get(
            f"/app?airlock_preview={token}",
            headers={"Host": f"{WEB}-{sandbox.id}.{PREVIEW_DOMAIN}"},
        )
        assert by_host.status_code == 200, by_host.text
        escaped = await browser.get(port_path(sandbox.id, WEB, f"/e?airlock%5Fpreview={token}"))
        assert escaped.status_code == 200, escaped.text

    shown = port_path(sandbox.id, WEB, "/?page=1&airlock_preview=***")
    log = await logged(airlock, shown)
    assert shown in log  # the access log's line for the request, its query redacted
    assert "/app?airlock_preview=*** HTTP/1.1" in log
    assert port_path(sandbox.id, WEB, "/e?airlock%5Fpreview=***") in log
    assert token not in log
    assert token.split(".")[2] not in log  # not even the signature alone
    events = await audit_events(airlock, tenant)
    assert {"port.link", "port.open"} <= {e["action"] for e in events}
    assert token not in str(events)

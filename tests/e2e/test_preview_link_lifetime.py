"""A preview link made with a token lives no longer than that token: revoking the token
(`DELETE /v1/tokens/{jti}`) ends the link and the cookie it left in a browser at once, and a
link asked for longer than the token has left ends when the token does. Links made with the
API key itself are not touched."""

from __future__ import annotations

from datetime import datetime
from urllib.parse import urlsplit

import httpx

from tests.e2e.conftest import Airlock, Tenant
from tests.e2e.test_ports import WEB, port_path, start_servers


async def test_preview_link_made_with_a_revoked_token_is_refused(
    airlock: Airlock, tenant: Tenant
) -> None:
    sandbox = await airlock.sandbox(tenant)
    await start_servers(airlock, tenant, sandbox.id)
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/tokens", json={"scopes": ["ports"], "ttl_s": 120})
        assert r.status_code == 201, r.text
        token = r.json()
        by_key = await http.post(f"/v1/sandboxes/{sandbox.id}/port-links", json={"port": WEB})
        assert by_key.status_code == 201, by_key.text
    async with airlock.http(token["token"]) as with_token:
        r = await with_token.post(
            f"/v1/sandboxes/{sandbox.id}/port-links", json={"port": WEB, "ttl_s": 900}
        )
        assert r.status_code == 201, r.text
        link = r.json()
    ends = datetime.fromisoformat(link["expires_at"])
    assert ends <= datetime.fromisoformat(token["expires_at"]), (link, token)

    url = urlsplit(link["url"])
    async with httpx.AsyncClient(base_url=airlock.server.url) as browser:
        assert (await browser.get(f"{url.path}?{url.query}")).status_code == 200
        assert (await browser.get(port_path(sandbox.id, WEB))).status_code == 200  # cookie
        async with airlock.http(tenant.key) as http:
            r = await http.delete(f"/v1/tokens/{token['jti']}")
            assert r.status_code == 204, r.text
        async with airlock.http(token["token"]) as with_token:
            assert (await with_token.get(port_path(sandbox.id, WEB))).status_code == 401
        cookie = await browser.get(port_path(sandbox.id, WEB))
        assert cookie.status_code == 401, cookie.text
        in_query = await browser.get(f"{url.path}?{url.query}")
        assert in_query.status_code == 401, in_query.text
    # Only what the revoked token made ends.
    key_url = urlsplit(by_key.json()["url"])
    async with httpx.AsyncClient(base_url=airlock.server.url) as browser:
        assert (await browser.get(f"{key_url.path}?{key_url.query}")).status_code == 200

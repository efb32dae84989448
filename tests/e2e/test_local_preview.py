"""The local development setup's preview domain, `localhost` (what `scripts/run.sh` sets): a
port of a sandbox on a host name of its own, with no DNS, on the embedded database."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httpx
import pytest

from tests.e2e.conftest import Airlock, sqlite_server

SERVE = (
    "cd /work && echo local > index.html && "
    "python3 -m http.server 8000 </dev/null >/dev/null 2>&1 &"
)


@pytest.fixture(scope="module")
async def local(
    airlock: Airlock, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Airlock]:
    state = tmp_path_factory.mktemp("e2e-local-preview")
    async with sqlite_server(airlock, state, AIRLOCK_PREVIEW_DOMAIN="localhost") as server:
        yield server


async def test_a_port_answers_on_its_localhost_name(local: Airlock) -> None:
    tenant = await local.tenant()
    box = await local.sandbox(tenant)
    port = local.server.url.rsplit(":", 1)[1]
    async with local.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{box.id}/execs", json={"cmd": ["sh", "-c", SERVE]})
        assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
        r = await http.post(f"/v1/sandboxes/{box.id}/port-links", json={"port": 8000})
        assert r.status_code == 201, r.text
        host_url = urlsplit(r.json()["host_url"])
    assert host_url.netloc == f"8000-{box.id}.localhost:{port}", host_url
    # What a browser sends for that link: *.localhost resolves to the loopback address.
    async with httpx.AsyncClient(base_url=local.server.url, timeout=30) as browser:
        for _ in range(50):
            r = await browser.get(
                f"/?{host_url.query}", headers={"Host": host_url.netloc}, follow_redirects=False
            )
            if r.status_code != 502:  # the server in the sandbox is still starting
                break
            await asyncio.sleep(0.1)
        while r.is_redirect:  # the link's token traded for its cookie
            r = await browser.get(r.headers["location"], headers={"Host": host_url.netloc})
        assert r.status_code == 200 and r.text == "local\n", (r.status_code, r.text)
        # Another name under the domain reaches nothing.
        r = await browser.get("/", headers={"Host": f"api.localhost:{port}"})
        assert r.status_code == 404, r.text

"""Two ways in that needed no sandbox of the attacker's own, tried against `airlock serve` on
gVisor: an anonymous OPTIONS on a running sandbox's port route (its handler ran without a
principal and answered 500), and a review whose repository is an IPv6 address carrying a
private IPv4 one (accepted, so the fetch would have reached loopback or the metadata service)."""

from __future__ import annotations

import httpx
import pytest

from tests.e2e.conftest import Airlock, Tenant

# A web server in the sandbox, so the port route has something to reach.
SERVE = "cd /work && python3 -m http.server 8000 </dev/null >/dev/null 2>&1 &"


async def test_anonymous_options_on_a_served_port_is_401(airlock: Airlock, tenant: Tenant) -> None:
    box = await airlock.sandbox(tenant)
    async with airlock.http(tenant.key) as http:
        r = await http.post(f"/v1/sandboxes/{box.id}/execs", json={"cmd": ["sh", "-c", SERVE]})
        assert r.status_code == 200 and r.json()["exit_code"] == 0, r.text
        for _ in range(50):  # the server is up once the route answers through it
            r = await http.get(f"/v1/sandboxes/{box.id}/ports/8000/")
            if r.status_code == 200:
                break
        assert r.status_code == 200, r.text
    async with httpx.AsyncClient(base_url=airlock.server.url, timeout=30) as anonymous:
        for path in ("", "echo", "x/y?z=1"):
            r = await anonymous.options(f"/v1/sandboxes/{box.id}/ports/8000/{path}")
            assert r.status_code == 401, (path, r.status_code, r.text)
            assert r.json()["code"] == "unauthenticated"


@pytest.mark.parametrize(
    "repo",
    [
        "https://[::127.0.0.1]/r.git",
        "https://[::a9fe:a9fe]/r.git",
        "https://[64:ff9b::a9fe:a9fe]/r.git",
        "https://[2002:a9fe:a9fe::1]/r.git",
    ],
)
async def test_a_review_of_an_ipv6_form_of_a_private_host_is_403(
    airlock: Airlock, tenant: Tenant, repo: str
) -> None:
    body = {"repo": repo, "base": "main", "head": "pr-1"}
    async with airlock.http(tenant.key) as http:
        r = await http.post("/v1/reviews", json=body)
        assert r.status_code == 403, r.text
        assert "non-public" in r.json()["detail"], r.text
        assert (await http.get("/v1/reviews")).json()["items"] == []

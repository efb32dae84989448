"""A review's repository on an IPv6 address that carries a private IPv4 one: the fetch would
reach loopback or the cloud's metadata service, so it is refused like the plain address.
These run on the shared app, whose settings leave local repositories disabled."""

from __future__ import annotations

import pytest

from tests.conftest import Api, Tenant

GOOD = {"repo": "https://git.example.com/acme/billing.git", "base": "main", "head": "pr-42"}


@pytest.mark.sqlite
@pytest.mark.parametrize(
    ("repo", "reaches"),
    [
        ("https://[::127.0.0.1]/r.git", "127.0.0.1 (IPv4-compatible)"),
        ("https://[::a9fe:a9fe]/r.git", "169.254.169.254 (IPv4-compatible)"),
        ("https://[64:ff9b::a9fe:a9fe]/r.git", "169.254.169.254 (NAT64)"),
        ("https://[2002:a9fe:a9fe::1]/r.git", "169.254.169.254 (6to4)"),
        ("https://[::ffff:127.0.0.1]/r.git", "127.0.0.1 (IPv4-mapped)"),
    ],
)
async def test_ipv6_forms_of_private_repository_hosts_are_403(
    api: Api, tenant: Tenant, repo: str, reaches: str
) -> None:
    r = await api.client.post("/v1/reviews", json={**GOOD, "repo": repo}, headers=tenant.headers)
    assert r.status_code == 403, r.text
    assert "non-public" in r.json()["detail"] and reaches in r.json()["detail"]
    listed = await api.client.get("/v1/reviews", headers=tenant.headers)
    assert listed.json()["items"] == [], "a refused review is not recorded"


@pytest.mark.sqlite
async def test_public_hosts_in_ipv6_forms_are_accepted(api: Api, tenant: Tenant) -> None:
    """What a DNS64 network answers for a public host stays usable."""
    for repo in ("https://[64:ff9b::808:808]/r.git", "https://[2002:808:808::1]/r.git"):
        r = await api.client.post(
            "/v1/reviews", json={**GOOD, "repo": repo}, headers=tenant.headers
        )
        assert r.status_code == 202, r.text

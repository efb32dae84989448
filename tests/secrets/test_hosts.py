"""The hosts a secret may be sent to: set with the value, shown with the name, checked before
the value is read."""

from __future__ import annotations

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.secrets.hosts import SecretHostRefused
from service.secrets.service import reveal
from service.settings import Settings
from tests.conftest import Api, Tenant
from tests.secrets.conftest import PutSecret, secret_value

pytestmark = pytest.mark.sqlite


async def test_allowed_hosts_are_kept_normalized_and_replaced_by_a_put(
    api: Api, tenant: Tenant, put: PutSecret
) -> None:
    given = ["GitHub.com", "git.example.com:8443", "github.com", "[2001:DB8::1]:443", "10.0.0.7"]
    r = await put(tenant, "gh", secret_value(), allowed_hosts=given)
    assert r.status_code == 201, r.text
    expected = ["10.0.0.7", "[2001:db8::1]:443", "git.example.com:8443", "github.com"]
    assert r.json()["allowed_hosts"] == expected
    listed = await api.client.get("/v1/secrets", headers=tenant.headers)
    assert listed.json()["items"][0]["allowed_hosts"] == expected
    # A PUT is the whole secret: without the field, it goes nowhere.
    r = await put(tenant, "gh", secret_value())
    assert r.status_code == 200 and r.json()["allowed_hosts"] == []
    audit = await api.client.get("/v1/audit", headers=tenant.headers)
    created = next(e for e in audit.json()["items"] if e["action"] == "secret.create")
    assert created["details"]["allowed_hosts"] == expected


@pytest.mark.parametrize(
    "entry",
    [
        "https://github.com",
        "github.com/acme",
        "user@github.com",
        "*.github.com",
        "github.com:notaport",
        "github.com:70000",
        "-bad-.example",
        "git hub.com",
        " github.com",
        "[github.com]",
        "a" * 64 + ".com",
    ],
)
async def test_a_malformed_allowed_host_is_422(
    api: Api, tenant: Tenant, put: PutSecret, entry: str
) -> None:
    value = secret_value()
    r = await put(tenant, "gh", value, allowed_hosts=[entry])
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "validation_failed"
    assert value not in r.text
    assert (await api.client.get("/v1/secrets", headers=tenant.headers)).json()["items"] == []


async def test_too_many_allowed_hosts_is_422(api: Api, tenant: Tenant, put: PutSecret) -> None:
    r = await put(tenant, "gh", secret_value(), allowed_hosts=[f"h{i}.example" for i in range(21)])
    assert r.status_code == 422, r.text


async def test_the_value_is_read_only_for_an_allowed_host(
    api: Api,
    tenant: Tenant,
    put: PutSecret,
    sessionmaker: async_sessionmaker[AsyncSession],
    settings: Settings,
) -> None:
    value = secret_value()
    await put(tenant, "gh", value, allowed_hosts=["github.com", "git.example.com:8443"])
    await put(tenant, "nowhere", value)
    async with sessionmaker() as session:
        for url in ("https://github.com/a/b.git", "https://GITHUB.COM:9999/a/b.git",
                    "https://git.example.com:8443/x.git"):  # fmt: skip
            key_file = settings.secrets_key_path
            assert await reveal(session, key_file, tenant.id, "gh", url=url) == value
        for name, url in (
            ("gh", "https://attacker.example/x.git"),
            ("gh", "https://github.com.attacker.example/x.git"),
            ("gh", "https://git.example.com/x.git"),  # port 443, not 8443
            ("nowhere", "https://github.com/a/b.git"),
        ):
            with pytest.raises(SecretHostRefused) as refused:
                await reveal(session, settings.secrets_key_path, tenant.id, name, url=url)
            assert value not in str(refused.value)

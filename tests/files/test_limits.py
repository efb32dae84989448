"""The tenant's upload limit: refused before reading when announced, cut off when not, and a
refused upload leaves nothing behind in the sandbox."""

from __future__ import annotations

from tests.conftest import Api, Tenant
from tests.files.conftest import BoxFactory, make_tar, random_bytes

MIB = 1 << 20


async def limited_tenant(api: Api, mib: int) -> Tenant:
    tenant = await api.tenant()
    r = await api.client.patch(
        f"/v1/tenants/{tenant.id}", json={"quotas": {"max_upload_mib": mib}}, headers=api.operator
    )
    assert r.status_code == 200, r.text
    assert r.json()["quotas"]["max_upload_mib"] == mib
    return tenant


def no_leftovers(listing: dict[str, dict[str, object]]) -> None:
    assert not [name for name in listing if name.startswith(".airlock-")], listing


async def test_upload_over_the_tenant_limit_is_413_and_leaves_nothing(
    files_api: Api, make_box: BoxFactory
) -> None:
    box = await make_box(await limited_tenant(files_api, 1))

    r = await box.put("/work/big.bin", random_bytes(MIB + 1))
    assert r.status_code == 413, r.text
    assert r.json()["code"] == "payload_too_large"
    assert r.json()["limit_bytes"] == MIB
    listing = await box.listing()
    assert "big.bin" not in listing
    no_leftovers(listing)

    r = await box.put("/work/exact.bin", random_bytes(MIB))
    assert r.status_code == 201, r.text


async def test_archive_over_the_limit_is_413_and_unpacks_nothing(
    files_api: Api, make_box: BoxFactory
) -> None:
    box = await make_box(await limited_tenant(files_api, 1))
    archive = make_tar({"big/a.bin": random_bytes(MIB), "big/b.bin": random_bytes(MIB)})
    r = await box.client.put(
        f"{box.url}/archive",
        params={"dir": "/work/unpacked"},
        content=archive,
        headers={**box.tenant.headers, "Content-Type": "application/x-tar"},
    )
    assert r.status_code == 413, r.text
    listing = await box.listing()
    assert "unpacked" not in listing
    no_leftovers(listing)


async def test_a_zero_limit_refuses_every_non_empty_upload(
    files_api: Api, make_box: BoxFactory
) -> None:
    box = await make_box(await limited_tenant(files_api, 0))
    assert (await box.put("/work/one", b"1")).status_code == 413
    assert (await box.put("/work/none", b"")).status_code == 201

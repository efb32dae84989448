"""Files routes see only the caller's sandboxes: another tenant's sandbox, or another sandbox
than the one a token is bound to, is a 404 on every route; scopes are enforced."""

from __future__ import annotations

from typing import Any

from tests.conftest import Api, Tenant
from tests.files.conftest import Box, make_tar


async def every_route(api: Api, box: Box, headers: dict[str, str]) -> list[Any]:
    c, url = api.client, box.url
    tar_headers = {**headers, "Content-Type": "application/x-tar"}
    return [
        await c.put(f"{url}/files/work/f.txt", content=b"x", headers=headers),
        await c.get(f"{url}/files/work/secret.txt", headers=headers),
        await c.get(f"{url}/files", params={"dir": "/work"}, headers=headers),
        await c.put(f"{url}/archive", content=make_tar({"a": b"a"}), headers=tar_headers),
        await c.get(f"{url}/archive", params={"dir": "/work"}, headers=headers),
    ]


async def test_another_tenants_sandbox_is_404_everywhere(
    files_api: Api, box: Box, tenant: Tenant
) -> None:
    assert (await box.put("/work/secret.txt", b"mine")).status_code == 201
    for r in await every_route(files_api, box, tenant.headers):
        assert r.status_code == 404, r.text
        assert r.json()["code"] == "not_found"
        assert b"mine" not in r.content
    assert set(await box.listing()) == {"secret.txt"}


async def test_a_token_bound_to_another_sandbox_gets_404(
    files_api: Api, box: Box, make_box: Any
) -> None:
    other = await make_box(box.tenant)
    assert (await box.put("/work/secret.txt", b"mine")).status_code == 201
    bound = await files_api.token(box.tenant.key, sandbox_id=other.id)
    headers = files_api.bearer(bound["token"])
    for r in await every_route(files_api, box, headers):
        assert r.status_code == 404, r.text
    # The same token works on its own sandbox.
    r = await other.put("/work/ok.txt", b"ok", headers=headers)
    assert r.status_code == 201, r.text
    assert (await other.get("/work/ok.txt", headers=headers)).content == b"ok"


async def test_scopes_are_enforced(files_api: Api, box: Box) -> None:
    reader = await files_api.token(box.tenant.key, scopes=["files:read"])
    headers = files_api.bearer(reader["token"])
    r = await box.put("/work/f.txt", b"x", headers=headers)
    assert r.status_code == 403 and r.json()["code"] == "missing_scope"
    assert (await box.put("/work/f.txt", b"x")).status_code == 201
    assert (await box.get("/work/f.txt", headers=headers)).content == b"x"

    writer = await files_api.token(box.tenant.key, scopes=["files:write"])
    r = await box.get("/work/f.txt", headers=files_api.bearer(writer["token"]))
    assert r.status_code == 403 and r.json()["code"] == "missing_scope"


async def test_a_deleted_sandbox_is_409(files_api: Api, box: Box) -> None:
    r = await files_api.client.delete(box.url, headers=box.tenant.headers)
    assert r.status_code in (200, 204), r.text
    r = await box.get("/work/anything")
    assert r.status_code == 409, r.text
    assert r.json()["code"] == "sandbox_not_running"

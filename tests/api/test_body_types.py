"""A JSON body takes each field in its own JSON type: a 0 is no bool, "5" and 5.5 are no int
(5.0 is: JSON has one number type, and the document's `integer` is any number without a
fraction). The wrong type is a 422 naming the field, and nothing is written. Query parameters,
strings on the wire, are still converted."""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.api.test_errors import assert_problem, tenant_names
from tests.api.test_request_bodies import call
from tests.conftest import Api, Tenant

pytestmark = pytest.mark.sqlite

WRONG_QUOTAS = [
    ({"network_open_allowed": 0}, "quotas.network_open_allowed"),
    ({"max_sandboxes": "5"}, "quotas.max_sandboxes"),
    ({"max_sandboxes": 5.5}, "quotas.max_sandboxes"),
]
IDS = ["int-for-bool", "string-for-int", "float-for-int"]


@pytest.mark.parametrize(("quotas", "key"), WRONG_QUOTAS, ids=IDS)
async def test_a_tenant_create_with_a_wrong_json_type_is_422(
    api: Api, quotas: dict[str, Any], key: str
) -> None:
    before = await tenant_names(api)
    r = await api.client.post(
        "/v1/tenants",
        json={"name": f"typed-{secrets.token_hex(4)}", "quotas": quotas},
        headers=api.operator,
    )
    problem = assert_problem(r, 422, "validation_failed")
    assert [e.get("key") for e in problem["errors"]] == [key], problem
    assert await tenant_names(api) == before


@pytest.mark.parametrize(("quotas", "key"), WRONG_QUOTAS, ids=IDS)
async def test_a_tenant_update_with_a_wrong_json_type_is_422(
    api: Api, tenant: Tenant, quotas: dict[str, Any], key: str
) -> None:
    path = f"/v1/tenants/{tenant.id}"
    before = (await api.client.get(path, headers=api.operator)).json()
    r = await api.client.patch(path, json={"quotas": quotas}, headers=api.operator)
    problem = assert_problem(r, 422, "validation_failed")
    assert [e.get("key") for e in problem["errors"]] == [key], problem
    assert (await api.client.get(path, headers=api.operator)).json() == before


async def test_the_type_is_judged_on_the_whole_body_however_it_is_cut(api: Api) -> None:
    body = b'{"name": "typed-chunks", "quotas": {"max_sandboxes": "5"}}'
    headers = {**api.operator, "content-type": "application/json"}
    before = await tenant_names(api)
    for cut in (1, body.index(b'"5"') + 1, len(body) - 1):
        status, problem = await call(api, "POST", "/v1/tenants", headers, [body[:cut], body[cut:]])
        assert status == 422, problem
        assert problem["code"] == "validation_failed"
    assert await tenant_names(api) == before


async def test_right_types_and_query_strings_still_pass(api: Api) -> None:
    for count in (5, 6.0):
        r = await api.client.post(
            "/v1/tenants",
            json={
                "name": f"typed-ok-{secrets.token_hex(4)}",
                "quotas": {"max_sandboxes": count, "network_open_allowed": False},
            },
            headers=api.operator,
        )
        assert r.status_code == 201, r.text
        assert r.json()["tenant"]["quotas"]["max_sandboxes"] == count
    r = await api.client.get("/v1/tenants", params={"limit": "1"}, headers=api.operator)
    assert r.status_code == 200, r.text
    assert len(r.json()["items"]) == 1


async def test_a_deeply_nested_body_is_a_client_error(api: Api) -> None:
    depth = 100_000
    for body in (b"[" * depth + b"]" * depth, b'{"name": "x", "quotas": ' + b"[" * depth):
        r = await api.client.post(
            "/v1/tenants",
            content=body,
            headers={**api.operator, "content-type": "application/json"},
        )
        assert_problem(r, 422, "validation_failed")


@pytest.mark.parametrize("body", [b"1)", b'"x"]', b"[1,", b"true false"])
async def test_a_wrong_type_before_broken_json_is_a_client_error(
    api: Api, tenant: Tenant, body: bytes
) -> None:
    # The typed decoder stops at the type, the plain one at the syntax: this was a 500.
    r = await api.client.put(
        "/v1/secrets/token",
        content=body,
        headers={**tenant.headers, "content-type": "application/json"},
    )
    assert r.status_code == 422, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    assert (await api.client.get("/v1/secrets", headers=tenant.headers)).json()["items"] == []

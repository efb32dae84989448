"""Errors are RFC 9457 problem documents with a stable code; every response carries a request id."""

from __future__ import annotations

import secrets
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.settings import Settings
from tests.conftest import OPERATOR_KEY, Api, Tenant

pytestmark = pytest.mark.sqlite

PROBLEM = "application/problem+json"


def assert_problem(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith(PROBLEM)
    body = r.json()
    assert body["status"] == status
    assert body["code"] == code
    assert body["type"].endswith(f"/{code}")
    assert body["title"] and body["detail"]
    assert body["request_id"] == r.headers["x-request-id"]
    return body


async def tenant_names(api: Api) -> set[str]:
    names: set[str] = set()
    params: dict[str, Any] = {"limit": 200}
    while True:
        r = await api.client.get("/v1/tenants", params=params, headers=api.operator)
        assert r.status_code == 200, r.text
        names.update(t["name"] for t in r.json()["items"])
        if r.json()["next_cursor"] is None:
            return names
        params["cursor"] = r.json()["next_cursor"]


async def test_unknown_route_is_a_404_problem(api: Api) -> None:
    for headers in ({}, api.operator):
        r = await api.client.get("/v1/no-such-thing", headers=headers)
        body = assert_problem(r, 404, "not_found")
        assert body["instance"] == "/v1/no-such-thing"


async def test_wrong_method_is_a_405_problem(api: Api) -> None:
    r = await api.client.put("/v1/tenants", json={"name": "x"}, headers=api.operator)
    assert_problem(r, 405, "method_not_allowed")
    assert "POST" in r.headers["allow"]


@pytest.mark.parametrize(
    "body",
    [
        {"name": ""},
        {"name": "x" * 101},
        {"name": "has/slash"},
        {"name": "ok-name", "bogus": 1},
        {"name": "ok-name", "quotas": {"max_token_ttl_s": 999_999}},
        {"name": "ok-name", "quotas": {"max_sandboxes": -1}},
        {"name": "ok-name", "quotas": {"no_such_quota": 1}},
        {"name": 5},
        {},
        [],
    ],
    ids=[
        "empty-name",
        "long-name",
        "bad-chars",
        "unknown-field",
        "ttl-out-of-range",
        "negative-quota",
        "unknown-quota",
        "wrong-type",
        "missing-name",
        "not-an-object",
    ],
)
async def test_invalid_tenant_body_is_422_and_writes_nothing(api: Api, body: Any) -> None:
    before = await tenant_names(api)
    r = await api.client.post("/v1/tenants", json=body, headers=api.operator)
    problem = assert_problem(r, 422, "validation_failed")
    assert isinstance(problem["errors"], list)
    assert await tenant_names(api) == before


async def test_validation_errors_name_the_field(api: Api) -> None:
    r = await api.client.post(
        "/v1/tenants", json={"name": "ok-name", "bogus": 1}, headers=api.operator
    )
    problem = assert_problem(r, 422, "validation_failed")
    assert any("bogus" in e["message"] for e in problem["errors"])


async def test_malformed_json_is_a_422_problem(api: Api) -> None:
    before = await tenant_names(api)
    r = await api.client.post(
        "/v1/tenants",
        content=b'{"name": "half',
        headers={**api.operator, "content-type": "application/json"},
    )
    assert await tenant_names(api) == before
    problem = assert_problem(r, 422, "validation_failed")
    assert problem["title"] == "The request is not valid"


async def test_malformed_json_writes_nothing_and_is_a_client_error(api: Api) -> None:
    before = await tenant_names(api)
    r = await api.client.post(
        "/v1/tenants",
        content=b'{"name": "half',
        headers={**api.operator, "content-type": "application/json"},
    )
    assert 400 <= r.status_code < 500, r.text
    assert r.headers["content-type"].startswith(PROBLEM)
    assert r.json()["request_id"] == r.headers["x-request-id"]
    assert await tenant_names(api) == before


async def test_invalid_query_parameter_is_422(api: Api, tenant: Tenant) -> None:
    for params in ({"limit": 0}, {"limit": 100_000}, {"limit": "many"}, {"since": "yesterday"}):
        r = await api.client.get("/v1/audit", params=params, headers=tenant.headers)
        assert_problem(r, 422, "validation_failed")


async def test_every_response_has_a_request_id(api: Api, tenant: Tenant) -> None:
    responses = [
        await api.client.get("/v1/audit", headers=tenant.headers),
        await api.client.get("/healthz"),
        await api.client.get("/v1/audit"),
        await api.client.get("/v1/audit", headers=api.bearer("alk_not-a-real-key")),
        await api.client.get("/v1/nothing-here"),
        await api.client.post("/v1/tenants", json={"name": ""}, headers=api.operator),
        await api.client.get("/v1/tenants", headers=tenant.headers),
    ]
    assert [r.status_code for r in responses] == [200, 200, 401, 401, 404, 422, 403]
    ids = [r.headers.get("x-request-id") for r in responses]
    assert all(ids), ids
    assert len(set(ids)) == len(ids)


async def test_sane_request_id_is_echoed(api: Api, tenant: Tenant) -> None:
    rid = f"client-{secrets.token_hex(8)}"
    r = await api.client.get("/v1/audit", headers={**tenant.headers, "X-Request-ID": rid})
    assert r.headers["x-request-id"] == rid
    r = await api.client.get("/v1/missing", headers={"X-Request-ID": rid})
    assert r.headers["x-request-id"] == rid
    assert r.json()["request_id"] == rid


@pytest.mark.parametrize(
    "incoming",
    ["has spaces in it", "x" * 500, "short", "semi;colon;value", "<script>alert(1)</script>"],
    ids=["spaces", "500-chars", "too-short", "semicolons", "markup"],
)
async def test_insane_request_id_is_replaced(api: Api, incoming: str) -> None:
    r = await api.client.get("/v1/missing", headers={"X-Request-ID": incoming})
    rid = r.headers["x-request-id"]
    assert rid != incoming
    assert incoming not in r.text
    assert 8 <= len(rid) <= 128 and " " not in rid
    assert r.json()["request_id"] == rid


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer", "Basic dXNlcjpwYXNz", "Bearer alk_unknown", "Bearer not.a.jwt"],
    ids=["missing", "empty-bearer", "basic", "unknown-key", "garbage-token"],
)
async def test_unauthenticated_is_401_with_www_authenticate(
    api: Api, authorization: str | None
) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    r = await api.client.get("/v1/audit", headers=headers)
    assert_problem(r, 401, "unauthenticated")
    assert r.headers["www-authenticate"].lower().startswith("bearer")


@pytest.mark.parametrize("path", ["/v1/tenants", "/healthz", "/v1/audit"])
async def test_options_is_not_a_server_error(api: Api, path: str) -> None:
    r = await api.client.options(path)
    assert r.status_code < 500, r.text
    assert r.headers["x-request-id"]


async def test_database_outage_is_a_problem_without_internals(tmp_path: Path) -> None:
    url = f"postgresql+asyncpg://airlock:hunter2@127.0.0.1:{free_port()}/airlock"
    settings = Settings.from_env(
        {}, state_dir=tmp_path, database_url=url, operator_key=OPERATOR_KEY
    )
    app = create_app(settings, check_migrations=False, run_jobs=False)
    async with AsyncTestClient(app=app) as client:
        for headers in (
            {"Authorization": f"Bearer {OPERATOR_KEY}"},
            {"Authorization": "Bearer alk_some-key"},
        ):
            r = await client.get("/v1/tenants", headers=headers)
            assert r.status_code >= 500
            problem = assert_problem(r, r.status_code, r.json()["code"])
            assert problem["code"] in ("internal_error", "unavailable")
            for secret in ("hunter2", "asyncpg", "Traceback", "Connect call failed"):
                assert secret not in r.text


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

"""The body policy of every route: a JSON body is capped per route and refused (413) as soon as
its size passes the cap, before authentication when the length is declared; NUL characters are
found however the body is cut into chunks; uploads stream under their own cap."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from service.inputs import DEFAULT_BODY_LIMIT, NulScanner, body_limit
from tests.conftest import Api, Tenant

pytestmark = pytest.mark.sqlite

NUL_BODIES = [
    json.dumps({"name": "a\x00b"}).encode(),  # `\u0000`
    b'{"name": "\\\\\\u0000"}',  # an escaped backslash, then the escape
    b'{"name": "raw \x00 byte"}',
]
CLEAN_BODIES = [
    b'{"name": "\\\\u0000"}',  # an escaped backslash, then plain text
    b'{"name": "\\\\\\\\u0000 and \\u0001"}',  # two of them; U+0001 is no NUL
]


def cuts(body: bytes) -> list[list[bytes]]:
    """The body in two chunks at every position, and one byte at a time."""
    return [[body[:i], body[i:]] for i in range(len(body) + 1)] + [
        [body[i : i + 1] for i in range(len(body))]
    ]


@pytest.mark.parametrize("body", NUL_BODIES)
def test_a_nul_is_found_wherever_the_chunks_are_cut(body: bytes) -> None:
    for chunks in cuts(body):
        scanner = NulScanner()
        assert any([scanner.found(c) for c in chunks]), chunks


@pytest.mark.parametrize("body", CLEAN_BODIES)
def test_escaped_backslashes_are_not_a_nul_wherever_the_chunks_are_cut(body: bytes) -> None:
    for chunks in cuts(body):
        scanner = NulScanner()
        assert not any(scanner.found(c) for c in chunks), chunks


async def call(api: Api, method: str, path: str, headers: dict[str, str], chunks: list[bytes]):
    """The app through ASGI with the body in exactly these chunks (as a server would pass
    them); returns the status and the decoded answer."""
    sent: list[dict[str, Any]] = []
    pending = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]

    async def receive() -> dict[str, Any]:
        return pending.pop(0) if pending else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
        "state": {},
    }
    # On the loop the app (and its database pool) runs on, as the test client does.
    await asyncio.to_thread(api.client.blocking_portal.call, api.app, scope, receive, send)
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body)


async def test_a_nul_escape_cut_between_chunks_writes_nothing(api: Api, tenant: Tenant) -> None:
    body = json.dumps({"name": "a\x00b", "scopes": ["exec"]}).encode()
    cut = body.index(b"\\u0000") + 2
    headers = {**tenant.headers, "content-type": "application/json"}
    before = (await api.client.get("/v1/api-keys", headers=tenant.headers)).json()["items"]
    status, problem = await call(api, "POST", "/v1/api-keys", headers, [body[:cut], body[cut:]])
    assert status == 422, problem
    assert problem["code"] == "validation_failed"
    # Whatever the content type says: a JSON route's body is judged as JSON.
    headers["content-type"] = "text/plain"
    status, problem = await call(api, "POST", "/v1/api-keys", headers, [body[:cut], body[cut:]])
    assert status == 422, problem
    after = (await api.client.get("/v1/api-keys", headers=tenant.headers)).json()["items"]
    assert len(after) == len(before)


async def test_a_declared_oversized_body_is_refused_before_authentication(api: Api) -> None:
    headers = {"content-type": "application/json", "content-length": str(64 << 20)}
    # No credential and no body at all: the declared length is enough.
    status, problem = await call(api, "POST", "/v1/tokens", headers, [b""])
    assert status == 413, problem
    assert problem["code"] == "payload_too_large"
    assert problem["limit_bytes"] == DEFAULT_BODY_LIMIT


async def test_a_streamed_body_is_refused_once_it_passes_the_limit(
    api: Api, tenant: Tenant
) -> None:
    chunk = b" " * (256 << 10)
    chunks = [b'{"name": "k"', *([chunk] * 8), b"}"]
    status, problem = await call(
        api, "POST", "/v1/api-keys", {**tenant.headers, "content-type": "application/json"}, chunks
    )
    assert status == 413, problem
    assert problem["limit_bytes"] == DEFAULT_BODY_LIMIT
    # Just within the limit, the same route takes it.
    small = [b'{"name": "k", "scopes": ["exec"]', b" " * (DEFAULT_BODY_LIMIT - 64), b"}"]
    status, created = await call(
        api, "POST", "/v1/api-keys", {**tenant.headers, "content-type": "application/json"}, small
    )
    assert status == 201, created


async def test_an_exec_takes_a_larger_body_than_the_default(api: Api, tenant: Tenant) -> None:
    stdin = "x" * (4 * DEFAULT_BODY_LIMIT)
    r = await api.client.post(
        "/v1/sandboxes/sbx_nope/execs",
        json={"cmd": ["cat"], "stdin": stdin},
        headers=tenant.headers,
    )
    assert r.status_code == 404, r.text  # read and parsed: the sandbox is what is missing


def test_every_route_has_a_body_policy(api: Api) -> None:
    """A JSON route has a finite limit; a route that streams its body has no framework limit
    and declares that it caps the body itself."""
    streamed = []
    for route in api.app.routes:
        for handler in getattr(route, "route_handlers", []):
            limit = body_limit(handler)
            if limit is None:
                assert handler.resolve_request_max_body_size() is None, route.path
                streamed.append(route.path)
            else:
                assert 0 < limit <= 32 << 20, (route.path, limit)
    assert {p.rsplit("/", 1)[-1] for p in streamed} >= {"{path:path}", "archive", "bundles"}

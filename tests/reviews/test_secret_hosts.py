"""A tenant secret goes only to the hosts its owner named. The attack: a key that may list
secret names (`secrets:read`) and post reviews names a secret in a review of a repository on
a host of its choosing, hoping the fetch sends the value there as Basic auth. On the app with
its review runner on gVisor and a real HTTPS git host that logs what it is sent."""

from __future__ import annotations

import secrets
import ssl
import threading
from collections.abc import AsyncIterator, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from service.audit.recorder import AuditContext
from service.auth.principal import SCOPES, Principal, PrincipalKind
from service.db.session import make_engine, make_sessionmaker
from service.reviews import service as reviews
from service.reviews.fetch import HttpAuth
from service.reviews.schemas import ReviewCreate, ReviewCredentials
from service.secrets.repository import SecretRepository
from tests.conftest import Api, Tenant
from tests.reviews.conftest import BILLING, PRIVATE_PASSWORD, TESTS, make_repo, stages, wait_for
from tests.reviews.git_https import GitHost


@pytest.fixture
async def review_engine(rapi: Api) -> AsyncIterator[AsyncEngine]:
    engine = make_engine(rapi.settings.effective_database_url)
    yield engine
    await engine.dispose()


async def put_secret(api: Api, tenant: Tenant, name: str, **body: Any) -> Any:
    r = await api.client.put(
        f"/v1/secrets/{name}", json={"value": PRIVATE_PASSWORD, **body}, headers=tenant.headers
    )
    assert r.status_code in (200, 201), r.text
    return r.json()


def repo_on(git_host: GitHost, tmp_path: Path) -> str:
    name = f"hosts-{secrets.token_hex(4)}"
    git_host.add(name, make_repo(tmp_path, {"billing.py": BILLING}, {"test_billing.py": TESTS}))
    return git_host.url(name)


def sent_the_secret(git_host: GitHost) -> list[str | None]:
    token = HttpAuth("x-access-token", PRIVATE_PASSWORD).token
    return [a for a in git_host.authorizations if a and token in a]


@pytest.mark.parametrize("allowed", [None, ["github.com"], ["127.0.0.1:1"]])
async def test_a_secret_is_not_sent_to_a_host_the_caller_names(
    rapi: Api, rtenant: Tenant, git_host: GitHost, tmp_path: Path, allowed: list[str] | None
) -> None:
    # The owner stored the secret for GitHub (or, as before hosts existed, for nowhere in
    # particular); the git host here plays the attacker's, logging every Authorization.
    name = f"github-{secrets.token_hex(3)}"
    await put_secret(rapi, rtenant, name, **({} if allowed is None else {"allowed_hosts": allowed}))
    attacker = await rapi.key(rtenant, ["secrets:read", "reviews:write", "reviews:read"])
    headers = rapi.bearer(attacker)
    before = len(sent_the_secret(git_host))
    body = {"repo": repo_on(git_host, tmp_path), "head": "pr-42", "credentials": {"secret": name}}
    r = await rapi.client.post("/v1/reviews", json=body, headers=headers)
    if r.status_code == 202:
        await wait_for(rapi, Tenant(id=rtenant.id, name="", key=attacker, api=rapi), r.json()["id"])
    assert sent_the_secret(git_host)[before:] == []
    assert r.status_code == 403, r.text
    problem = r.json()
    assert problem["code"] == "secret_host_not_allowed"
    assert problem["host"] == "127.0.0.1" and problem["allowed_hosts"] == (allowed or [])
    assert f"/v1/secrets/{name}" in problem["detail"]
    # Nothing was recorded or queued.
    listed = await rapi.client.get("/v1/reviews", headers=headers)
    assert all(item["repo"] != body["repo"] for item in listed.json()["items"])


async def test_the_hosts_are_checked_again_when_the_fetch_sends_the_secret(
    rapi: Api, rtenant: Tenant, git_host: GitHost, tmp_path: Path, review_engine: AsyncEngine
) -> None:
    await put_secret(rapi, rtenant, "moved", allowed_hosts=["127.0.0.1"])
    url = repo_on(git_host, tmp_path)
    principal = Principal(
        kind=PrincipalKind.API_KEY, actor="key_test", tenant_id=rtenant.id, scopes=frozenset(SCOPES)
    )
    ctx = AuditContext(actor="key_test", request_id=None, client=None)
    data = ReviewCreate(repo=url, head="pr-42", credentials=ReviewCredentials(secret="moved"))
    before = len(sent_the_secret(git_host))
    # Accepted while the secret allowed the host; its owner narrows it in the same
    # transaction, so the runner only ever sees the narrowed secret.
    async with make_sessionmaker(review_engine)() as session, session.begin():
        accepted = await reviews.create_review(session, rapi.settings, principal, ctx, data)
        row = await SecretRepository(session, rtenant.id).get("moved")
        assert row is not None
        row.allowed_hosts = ["git.example.com"]
    report = await wait_for(rapi, rtenant, accepted.id)
    assert report["state"] == "failed", report
    assert stages(report)["fetch"]["outcome"] == "failed"
    assert "may be sent only to git.example.com, not to 127.0.0.1" in report["error"]
    assert report["sandbox_id"] is None
    assert sent_the_secret(git_host)[before:] == []


async def test_a_secret_for_the_host_and_port_fetches(
    rapi: Api, rtenant: Tenant, git_host: GitHost, tmp_path: Path
) -> None:
    url = repo_on(git_host, tmp_path)
    await put_secret(rapi, rtenant, "exact", allowed_hosts=[f"127.0.0.1:{git_host.port + 1}"])
    body = {"repo": url, "head": "pr-42", "credentials": {"secret": "exact"}}
    r = await rapi.client.post("/v1/reviews", json=body, headers=rtenant.headers)
    assert r.status_code == 403 and r.json()["code"] == "secret_host_not_allowed", r.text
    await put_secret(rapi, rtenant, "exact", allowed_hosts=[f"127.0.0.1:{git_host.port}"])
    r = await rapi.client.post("/v1/reviews", json=body, headers=rtenant.headers)
    assert r.status_code == 202, r.text
    report = await wait_for(rapi, rtenant, r.json()["id"])
    assert stages(report)["fetch"]["outcome"] == "ok", report
    assert git_host.authorizations[-1] == git_host.expected()


@pytest.fixture
def redirecting(git_host: GitHost, tmp_path: Path) -> Iterator[tuple[str, list[str | None]]]:
    """A repository URL on an allowed host whose server redirects every request to another
    host, and what that other host was sent."""
    elsewhere: list[str | None] = []

    class Elsewhere(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            elsewhere.append(self.headers.get("Authorization"))
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    other = ThreadingHTTPServer(("127.0.0.1", 0), Elsewhere)
    target = f"http://localhost:{other.server_address[1]}"

    class Redirect(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("Location", target + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    first = ThreadingHTTPServer(("127.0.0.1", 0), Redirect)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(git_host.ca_file, git_host.ca_file.with_name("git-host.key"))
    first.socket = context.wrap_socket(first.socket, server_side=True)
    for server in (first, other):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://127.0.0.1:{first.server_address[1]}/moved.git", elsewhere
    first.shutdown()
    other.shutdown()


async def test_a_redirect_to_another_host_does_not_carry_the_secret(
    rapi: Api, rtenant: Tenant, redirecting: tuple[str, list[str | None]]
) -> None:
    url, elsewhere = redirecting
    await put_secret(rapi, rtenant, "redirected", allowed_hosts=["127.0.0.1"])
    body = {"repo": url, "head": "pr-42", "credentials": {"secret": "redirected"}}
    r = await rapi.client.post("/v1/reviews", json=body, headers=rtenant.headers)
    assert r.status_code == 202, r.text
    report = await wait_for(rapi, rtenant, r.json()["id"])
    assert report["state"] == "failed", report
    assert stages(report)["fetch"]["outcome"] == "failed"
    # Redirects are not followed: the other host is sent nothing, the secret least of all.
    assert elsewhere == []

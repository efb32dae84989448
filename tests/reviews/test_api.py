"""The reviews API without a runtime: what is refused before anything is recorded, scopes,
tenancy, listing and bundle uploads. These run on the shared app, whose review runner is off
and whose settings leave local repositories disabled and no model configured."""

from __future__ import annotations

import secrets
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Api, Tenant

GOOD = {"repo": "https://git.example.com/acme/billing.git", "base": "main", "head": "pr-42"}


async def post(api: Api, tenant: Tenant, **body: Any) -> Any:
    return await api.client.post("/v1/reviews", json={**GOOD, **body}, headers=tenant.headers)


@pytest.mark.sqlite
async def test_accepted_review_is_queued_and_readable(api: Api, tenant: Tenant) -> None:
    r = await post(api, tenant)
    assert r.status_code == 202, r.text
    review_id = r.json()["id"]
    assert r.json()["state"] == "queued"
    got = await api.client.get(f"/v1/reviews/{review_id}", headers=tenant.headers)
    assert got.status_code == 200, got.text
    report = got.json()
    assert report["state"] == "queued" and report["stages"] == []
    assert report["test"] == ["python", "-m", "pytest", "-q"]
    assert report["network"] == {"mode": "none", "allow": []}
    assert report["verdict"] is None and report["sandbox_id"] is None
    audit = await api.client.get("/v1/audit", params={"target": review_id}, headers=tenant.headers)
    assert [e["action"] for e in audit.json()["items"]] == ["review.create"]


@pytest.mark.sqlite
@pytest.mark.parametrize(
    "repo",
    [
        "/srv/git/billing",
        "file:///srv/git/billing",
        "/etc",
    ],
)
async def test_local_repositories_are_refused_unless_enabled(
    api: Api, tenant: Tenant, repo: str
) -> None:
    r = await post(api, tenant, repo=repo)
    assert r.status_code == 403, r.text
    assert "AIRLOCK_REVIEW_ALLOW_LOCAL_REPOS" in r.json()["detail"]


@pytest.mark.sqlite
@pytest.mark.parametrize(
    "repo",
    [
        "ssh://git@git.example.com/acme/billing.git",
        "git@git.example.com:acme/billing.git",
        "git://git.example.com/acme/billing.git",
        "ext::sh -c touch% /tmp/pwned",
        "https://user:token@git.example.com/acme/billing.git",
        "https://git.example.com/acme/billing.git?ref=x",
        "https:///repo.git",
        "bdl_0123",
    ],
)
async def test_malformed_repositories_are_422_naming_the_field(
    api: Api, tenant: Tenant, repo: str
) -> None:
    r = await post(api, tenant, repo=repo)
    assert r.status_code == 422, r.text
    assert [e.get("key") for e in r.json()["errors"]] == ["repo"], r.text


@pytest.mark.sqlite
@pytest.mark.parametrize(
    "repo",
    [
        "https://127.0.0.1/acme/billing.git",
        "https://169.254.169.254/latest/meta-data",
        "http://[::1]:8080/repo.git",
        "https://10.1.2.3/repo.git",
    ],
)
async def test_repositories_on_non_public_addresses_are_403(
    api: Api, tenant: Tenant, repo: str
) -> None:
    r = await post(api, tenant, repo=repo)
    assert r.status_code == 403, r.text
    assert "non-public" in r.json()["detail"]


@pytest.mark.sqlite
@pytest.mark.parametrize(
    "head",
    ["--upload-pack=touch /tmp/x", "main:refs/heads/x", "a..b", "+main", "x.lock", "a//b", ""],
)
async def test_refs_that_are_options_or_refspecs_are_refused(
    api: Api, tenant: Tenant, head: str
) -> None:
    r = await post(api, tenant, head=head)
    assert r.status_code == 422, r.text


@pytest.mark.sqlite
async def test_requests_beyond_the_tenant_or_the_server_are_refused(
    api: Api, tenant: Tenant
) -> None:
    r = await post(api, tenant, timeout_s=100_000)
    assert r.status_code == 422, r.text
    r = await post(api, tenant, timeout_s=601)
    assert r.status_code == 422 and "maximum of 600" in r.json()["detail"]
    r = await post(api, tenant, network={"mode": "open"})
    assert r.status_code == 403, r.text
    r = await post(api, tenant, model="gpt-x")
    assert r.status_code == 403 and "AIRLOCK_LLM_BASE_URL" in r.json()["detail"]
    r = await post(api, tenant, template="no-such-template")
    assert r.status_code == 404, r.text
    r = await post(api, tenant, surprise=True)
    assert r.status_code == 422 and "surprise" in r.text
    r = await post(api, tenant, test=[])
    assert r.status_code == 422, r.text


@pytest.mark.sqlite
async def test_scopes(api: Api, tenant: Tenant) -> None:
    reader = await api.key(tenant, ["reviews:read"])
    writer = await api.key(tenant, ["reviews:write"])
    other = await api.key(tenant, ["sandboxes:read", "exec"])
    r = await api.client.post("/v1/reviews", json=GOOD, headers=api.bearer(reader))
    assert r.status_code == 403 and r.json()["code"] == "missing_scope"
    r = await api.client.post("/v1/reviews", json=GOOD, headers=api.bearer(writer))
    assert r.status_code == 202, r.text
    review_id = r.json()["id"]
    r = await api.client.get(f"/v1/reviews/{review_id}", headers=api.bearer(writer))
    assert r.status_code == 403
    r = await api.client.get(f"/v1/reviews/{review_id}", headers=api.bearer(reader))
    assert r.status_code == 200
    for url in ("/v1/reviews", f"/v1/reviews/{review_id}"):
        r = await api.client.get(url, headers=api.bearer(other))
        assert r.status_code == 403, url
    r = await api.client.post(
        "/v1/reviews/bundles", content=b"# v2 git bundle\n", headers=api.bearer(reader)
    )
    assert r.status_code == 403
    r = await api.client.get("/v1/reviews", headers=api.operator)
    assert r.status_code == 403


@pytest.mark.sqlite
async def test_another_tenants_review_and_bundle_are_not_found(api: Api, tenant: Tenant) -> None:
    other = await api.tenant()
    r = await post(api, other)
    review_id = r.json()["id"]
    r = await api.client.get(f"/v1/reviews/{review_id}", headers=tenant.headers)
    assert r.status_code == 404
    r = await api.client.post("/v1/reviews/bundles", content=_bundle_bytes(), headers=other.headers)
    assert r.status_code == 201, r.text
    r = await post(api, tenant, repo=r.json()["id"])
    assert r.status_code == 404 and "no bundle" in r.json()["detail"]


@pytest.mark.sqlite
async def test_a_sandbox_bound_token_cannot_review(
    api: Api, tenant: Tenant, sandbox_record: Any
) -> None:
    sandbox_id = await sandbox_record(tenant)
    token = await api.token(
        tenant.key, scopes=["reviews:read", "reviews:write"], sandbox_id=sandbox_id
    )
    r = await api.client.post("/v1/reviews", json=GOOD, headers=api.bearer(token["token"]))
    assert r.status_code == 403, r.text


@pytest.mark.sqlite
async def test_listing_is_newest_first_with_cursor_and_state_filter(
    api: Api, tenant: Tenant
) -> None:
    made = [(await post(api, tenant, head=f"pr-{i}")).json()["id"] for i in range(3)]
    r = await api.client.get("/v1/reviews", params={"limit": 2}, headers=tenant.headers)
    assert r.status_code == 200, r.text
    first = r.json()
    assert [i["id"] for i in first["items"]] == made[::-1][:2]
    r = await api.client.get(
        "/v1/reviews", params={"limit": 2, "cursor": first["next_cursor"]}, headers=tenant.headers
    )
    assert [i["id"] for i in r.json()["items"]] == [made[0]]
    assert r.json()["next_cursor"] is None
    r = await api.client.get("/v1/reviews", params={"state": "finished"}, headers=tenant.headers)
    assert r.json()["items"] == []
    r = await api.client.get("/v1/reviews", params={"state": "done"}, headers=tenant.headers)
    assert r.status_code == 422


def _bundle_bytes() -> bytes:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "r"
        env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
               "GIT_COMMITTER_EMAIL": "a@b", "PATH": "/usr/bin:/bin", "HOME": tmp}  # fmt: skip
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True, env=env)
        subprocess.run(
            ["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "x"],
            check=True,
            env=env,
        )
        out = Path(tmp) / "b.bundle"
        subprocess.run(
            ["git", "-C", str(repo), "bundle", "create", "-q", str(out), "main"],
            check=True,
            env=env,
        )
        return out.read_bytes()


@pytest.mark.sqlite
async def test_bundle_uploads_are_checked_and_capped(api: Api) -> None:
    tenant = await api.tenant(max_upload_mib=1)
    r = await api.client.post(
        "/v1/reviews/bundles", content=b"not a bundle", headers=tenant.headers
    )
    assert r.status_code == 422, r.text
    big = b"# v2 git bundle\n" + secrets.token_bytes((1 << 20) + 10)
    r = await api.client.post("/v1/reviews/bundles", content=big, headers=tenant.headers)
    assert r.status_code == 413, r.text
    data = _bundle_bytes()
    r = await api.client.post("/v1/reviews/bundles", content=data, headers=tenant.headers)
    assert r.status_code == 201, r.text
    assert r.json()["size"] == len(data)
    r = await post(api, tenant, repo=r.json()["id"], base="main", head="main")
    assert r.status_code == 202, r.text

"""A token bound to one sandbox reaches that sandbox's routes and nothing else: every other
route refuses it (403) whatever scopes it carries, and another sandbox's routes do not find
what they name (404)."""

from __future__ import annotations

import re

from service.auth.principal import SCOPES
from tests.conftest import Api, SandboxRecorder, Tenant

BODIES: dict[tuple[str, str], object] = {
    ("POST", "/v1/templates"): {"name": "bound-build", "setup": [["sh", "-c", "echo built"]]},
    ("POST", "/v1/reviews"): {"repo": "https://git.example.com/a/b.git", "head": "main"},
    ("PUT", "/v1/secrets/{name:str}"): {"value": "a-secret-value"},
    ("POST", "/v1/api-keys"): {"name": "from-bound"},
    ("POST", "/v1/sandboxes"): {"ttl_s": 60},
    ("PUT", "/v1/pool/{template:str}"): {"size": "small", "target": 1},
}


async def bound_token(api: Api, tenant: Tenant, sandbox_id: str) -> dict[str, str]:
    token = await api.token(tenant.key, scopes=list(SCOPES), sandbox_id=sandbox_id)
    return api.bearer(token["token"])


def tenant_routes(api: Api) -> list[tuple[str, str, dict[str, object]]]:
    found = []
    for route in api.app.routes:
        for handler in getattr(route, "route_handlers", []):
            if handler.opt.get("public") or route.path.startswith("/schema"):
                continue
            for method in sorted(handler.http_methods - {"HEAD", "OPTIONS"}):
                found.append((method, route.path, handler.opt))
    return found


def concrete(path: str, sandbox_id: str) -> str:
    path = path.replace("{sandbox_id:str}", sandbox_id)
    return re.sub(r"\{(\w+):\w+\}", lambda m: f"{m.group(1)}_x", path)


async def test_every_route_not_about_its_sandbox_refuses_a_bound_token(
    api: Api, tenant: Tenant, sandbox_record: SandboxRecorder
) -> None:
    own = await sandbox_record(tenant)
    headers = await bound_token(api, tenant, own)
    refused = []
    for method, path, opt in tenant_routes(api):
        if opt.get("bound_token"):
            continue
        r = await api.client.request(
            method, concrete(path, own), json=BODIES.get((method, path), {}), headers=headers
        )
        assert r.status_code == 403, f"{method} {path} answered {r.status_code}: {r.text}"
        refused.append(f"{method} {path}")
    # The routes a hostile bound token would try first are among them.
    for route in (
        "POST /v1/templates",
        "GET /v1/templates",
        "GET /v1/pool",
        "POST /v1/reviews",
        "GET /v1/reviews",
        "PUT /v1/secrets/{name:str}",
        "GET /v1/secrets",
        "GET /v1/audit",
        "GET /v1/api-keys",
        "GET /v1/sandboxes",
        "POST /v1/sandboxes",
    ):
        assert route in refused, route
    # Nothing was built, stored or listed for it.
    templates = (await api.client.get("/v1/templates", headers=tenant.headers)).json()
    assert "bound-build" not in str(templates)
    secrets = (await api.client.get("/v1/secrets", headers=tenant.headers)).json()
    assert secrets["items"] == []


async def test_a_bound_token_keeps_its_own_sandbox(
    api: Api, tenant: Tenant, sandbox_record: SandboxRecorder
) -> None:
    own, other = await sandbox_record(tenant), await sandbox_record(tenant)
    token = await api.token(tenant.key, scopes=list(SCOPES), sandbox_id=own)
    headers = api.bearer(token["token"])
    for path in ("", "/transitions", "/execs"):
        r = await api.client.get(f"/v1/sandboxes/{own}{path}", headers=headers)
        assert r.status_code == 200, (path, r.text)
        # The tenant's other sandbox is not found, as another tenant's would not be.
        r = await api.client.get(f"/v1/sandboxes/{other}{path}", headers=headers)
        assert r.status_code == 404, (path, r.text)
    # It may revoke itself, and is then refused.
    r = await api.client.delete(f"/v1/tokens/{token['jti']}", headers=headers)
    assert r.status_code == 204, r.text
    r = await api.client.get(f"/v1/sandboxes/{own}", headers=headers)
    assert r.status_code == 401

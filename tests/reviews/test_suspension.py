"""A review running when its tenant is suspended stops, on the real gVisor runtime: it ends
`failed` saying why, its sandboxes are destroyed, and making the tenant active again does not
run it again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import asyncpg

from service.tenants.suspension import REASON
from tests.conftest import Api, Tenant
from tests.reviews.conftest import BILLING, make_repo

# Far longer than the test allows the review once its tenant is suspended.
SLOW_TEST = ["sleep", "240"]
BOUND_S = 60.0


async def row(database: str, review_id: str) -> dict[str, Any]:
    conn = await asyncpg.connect(database.replace("postgresql+asyncpg://", "postgresql://"))
    try:
        found = await conn.fetchrow(
            "SELECT state, error, stages, sandbox_id FROM reviews WHERE id = $1", review_id
        )
    finally:
        await conn.close()
    assert found is not None
    return dict(found)


async def set_status(api: Api, tenant: Tenant, status: str) -> None:
    r = await api.client.patch(
        f"/v1/tenants/{tenant.id}", json={"status": status}, headers=api.operator
    )
    assert r.status_code == 200, r.text


async def until(check: Any, bound_s: float) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + bound_s
    while (found := await check()) is None:
        assert loop.time() < deadline, f"not reached within {bound_s} s"
        await asyncio.sleep(0.5)
    return found


async def test_a_running_review_stops_when_its_tenant_is_suspended(
    rapi: Api, rtenant: Tenant, review_database: str, tmp_path: Path
) -> None:
    repo = make_repo(tmp_path, {"billing.py": BILLING}, {"note.txt": "a change\n"})
    body = {"repo": str(repo), "base": "main", "head": "pr-42", "test": SLOW_TEST}
    r = await rapi.client.post("/v1/reviews", json=body, headers=rtenant.headers)
    assert r.status_code == 202, r.text
    review_id = r.json()["id"]

    async def testing() -> dict[str, Any] | None:
        # Its sandbox holds the code: the test command runs next.
        found = await row(review_database, review_id)
        names = {s["name"] for s in json.loads(found["stages"] or "[]")}
        return found if found["state"] == "running" and "upload" in names else None

    await until(testing, 300)
    try:
        await set_status(rapi, rtenant, "suspended")

        async def ended() -> dict[str, Any] | None:
            found = await row(review_database, review_id)
            return found if found["state"] != "running" else None

        stopped = await until(ended, BOUND_S)
    finally:
        await set_status(rapi, rtenant, "active")
    assert (stopped["state"], stopped["error"]) == ("failed", REASON), stopped
    await asyncio.sleep(3)  # the runner, polling every second, takes nothing back
    r = await rapi.client.get(f"/v1/reviews/{review_id}", headers=rtenant.headers)
    assert (r.json()["state"], r.json()["error"]) == ("failed", REASON), r.json()
    r = await rapi.client.get("/v1/sandboxes", headers=rtenant.headers)
    assert {s["state"] for s in r.json()["items"]} <= {"stopped"}, r.json()

"""A review's sandbox from a template is started for it, never taken from the warm pool."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.conftest import Api, Tenant
from tests.reviews.conftest import BILLING, TESTS, make_repo, review, stages
from tests.templates.conftest import build_template, eventually, unique

MARKER = ["/bin/sh", "-c", "echo prepared-by-template > /home/sandbox/template-marker"]


async def _pool(api: Api, name: str) -> dict[str, Any]:
    r = await api.client.get("/v1/pool", headers=api.operator)
    assert r.status_code == 200, r.text
    return next(p for p in r.json()["pools"] if p["template"] == name)


async def test_a_template_review_starts_its_own_sandbox_while_the_pool_is_warm(
    rapi: Api, rtenant: Tenant, tmp_path: Path
) -> None:
    name = unique("review-tpl")
    built = await build_template(rapi, rapi.operator, name, [MARKER])
    assert built["state"] == "ready", built
    r = await rapi.client.put(
        f"/v1/pool/{name}", json={"size": "small", "target": 1}, headers=rapi.operator
    )
    assert r.status_code == 200, r.text

    async def warm() -> dict[str, Any] | None:
        status = await _pool(rapi, name)
        return status if status["ready"] == 1 else None

    await eventually(warm, bound_s=180)
    repo = make_repo(tmp_path, {"billing.py": BILLING}, {"test_billing.py": TESTS})
    report = await review(
        rapi,
        rtenant,
        repo=str(repo),
        head="pr-42",
        template=name,
        test=["/bin/sh", "-c", "cat /home/sandbox/template-marker && python -m pytest -q"],
    )
    assert report["state"] == "finished", report
    assert "prepared-by-template" in report["test_output"]
    assert report["verdict"] == "APPROVE"
    r = await rapi.client.get(f"/v1/sandboxes/{report['sandbox_id']}", headers=rtenant.headers)
    sandbox = r.json()
    assert sandbox["template"] == name
    assert sandbox["started_from"] in ("snapshot", "image")  # not "pool"
    assert f"from {name}" in stages(report)["sandbox"]["detail"]
    status = await _pool(rapi, name)
    assert status["claims"] == 0 and status["ready"] == 1
    r = await rapi.client.delete(f"/v1/templates/{name}?force=true", headers=rapi.operator)
    assert r.status_code in (200, 204), r.text

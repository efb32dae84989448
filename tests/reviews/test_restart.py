"""A review cut off by a stopping service: its sandbox is destroyed on the way down, and the
next start runs it again from the beginning in a new sandbox."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from service.runtime.gvisor import GVisorRuntime
from tests.conftest import Api
from tests.reviews.conftest import BILLING, TESTS, make_repo, migrated_database, own_state, serving

SLOW_TEST = "import time\n\ndef test_slow():\n    time.sleep(6)\n"


@pytest.fixture(scope="module")
async def restart_database() -> AsyncIterator[str]:
    async with migrated_database("airlock_review_restart") as url:
        yield url


@pytest.fixture(scope="module")
async def restart_state(
    review_state: Path, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Path]:
    async with own_state(review_state, tmp_path_factory, "review-restart-state") as state:
        yield state


async def poll(api: Api, headers: dict[str, str], review_id: str, done: Any) -> dict[str, Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 240
    while loop.time() < deadline:
        r = await api.client.get(f"/v1/reviews/{review_id}", headers=headers)
        assert r.status_code == 200, r.text
        if done(r.json()):
            return dict(r.json())
        await asyncio.sleep(0.2)
    pytest.fail(f"review {review_id} did not get there")


async def test_a_review_cut_off_by_a_stop_runs_again_after_the_start(
    restart_state: Path, restart_database: str, tmp_path: Path
) -> None:
    repo = make_repo(
        tmp_path, {"billing.py": BILLING, "test_billing.py": TESTS}, {"test_slow.py": SLOW_TEST}
    )
    async with serving(restart_state, restart_database) as api:
        tenant = await api.tenant()
        r = await api.client.post(
            "/v1/reviews", json={"repo": str(repo), "head": "pr-42"}, headers=tenant.headers
        )
        assert r.status_code == 202, r.text
        review_id = r.json()["id"]

        def testing(report: dict[str, Any]) -> bool:
            return any(s["name"] == "diff" for s in report["stages"])

        first = await poll(api, tenant.headers, review_id, testing)
        await asyncio.sleep(1.5)  # inside the slow test run
    # The service stopped mid-run.
    runtime = await GVisorRuntime.open(restart_state)
    try:
        assert await runtime.list_sandboxes() == []  # destroyed on the way down
    finally:
        await runtime.close()

    async with serving(restart_state, restart_database) as api:
        headers = tenant.headers
        report = await poll(api, headers, review_id, lambda x: x["state"] in ("finished", "failed"))
        assert report["state"] == "finished", report
        # No model here: the tests passed, which is a comment, never an approval.
        assert report["verdict"] == "COMMENT" and report["test_exit_code"] == 0
        assert report["sandbox_id"] != first["sandbox_id"]
        names = [s["name"] for s in report["stages"]]
        # The cut-off run's stages stay in the record, the service's stop among them.
        assert names.count("fetch") == 2 and names.count("cleanup") == 2
        assert any(s["outcome"] == "error" and "stopped" in (s["detail"] or "")
                   for s in report["stages"])  # fmt: skip
        r = await api.client.get(f"/v1/sandboxes/{first['sandbox_id']}", headers=headers)
        assert r.json()["state"] == "stopped"
        r = await api.client.get("/v1/audit", params={"target": review_id}, headers=headers)
        assert "review.requeue" in [e["action"] for e in r.json()["items"]]

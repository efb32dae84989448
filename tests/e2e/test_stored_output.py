"""What a tenant stores is bounded: review bundles by count (429 with Retry-After) and by age,
exec output by age (`output_retention_days`, shorter than the exec's record and audit)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest

from service.db.base import utcnow
from service.db.session import make_engine, make_sessionmaker
from service.jobs.output_retention import purge_outputs
from tests.e2e.conftest import Airlock, run_exec

BUNDLE = b"# v2 git bundle\n" + b"0" * 40 + b" refs/heads/main\n\n" + b"PACK" + b"\0" * 64


@pytest.fixture
async def purge(airlock: Airlock) -> AsyncIterator[Callable[[], Awaitable[dict[str, int]]]]:
    """The retention job's output purge, run now against the server's database."""
    engine = make_engine(airlock.db.url.replace("postgresql://", "postgresql+asyncpg://", 1))
    db = make_sessionmaker(engine)

    async def run() -> dict[str, int]:
        async with db() as session, session.begin():
            return await purge_outputs(session, utcnow())

    yield run
    await engine.dispose()


async def upload(http: httpx.AsyncClient, body: bytes = BUNDLE) -> httpx.Response:
    return await http.post(
        "/v1/reviews/bundles", content=body, headers={"Content-Type": "application/octet-stream"}
    )


async def test_bundles_are_capped_per_tenant(airlock: Airlock) -> None:
    tenant = await airlock.tenant(max_bundles=2)
    async with airlock.http(tenant.key) as http:
        for _ in range(2):
            r = await upload(http)
            assert r.status_code == 201, r.text
        r = await upload(http)
        assert r.status_code == 429, r.text
        assert r.json()["quota"] == "max_bundles"
        assert int(r.headers["Retry-After"]) >= 1
    held = await airlock.db.count(
        "SELECT count(*) FROM review_bundles WHERE tenant_id = $1", tenant.id
    )
    assert held == 2


async def test_bundles_and_exec_output_expire(
    airlock: Airlock, purge: Callable[[], Awaitable[dict[str, int]]]
) -> None:
    tenant = await airlock.tenant(output_retention_days=1, bundle_retention_days=1)
    sandbox = await airlock.sandbox(tenant)
    _, done = await run_exec(tenant.client, sandbox.id, cmd=["echo", "kept for a day"])
    assert done is not None and done.stdout == "kept for a day\n"
    async with airlock.http(tenant.key) as http:
        r = await upload(http)
        assert r.status_code == 201, r.text
        bundle_id = r.json()["id"]
        assert await purge() == {}  # nothing is old enough yet
        # Two days later (the rows are aged rather than the clock moved):
        await airlock.db.fetch(
            "UPDATE execs SET created_at = created_at - interval '2 days' WHERE id = $1", done.id
        )
        await airlock.db.fetch(
            "UPDATE review_bundles SET created_at = created_at - interval '2 days' WHERE id = $1",
            bundle_id,
        )
        assert (await purge())[tenant.id] >= 2
        got = (await http.get(f"/v1/sandboxes/{sandbox.id}/execs/{done.id}")).json()
        assert got["stdout"] == "" and got["exit_code"] == 0  # the record stays, not the output
        r = await http.post("/v1/reviews", json={"repo": bundle_id, "base": "main", "head": "main"})
        assert r.status_code == 404, r.text
        assert (await upload(http)).status_code == 201  # its place is free again

"""Creates take warm pool members atomically; the pool refills; every member is fresh."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from service.audit.recorder import AuditContext, next_event, pg_read_head, pg_try_append
from service.db.pg import driver_connection
from service.db.session import make_engine
from service.pool import claim_pg
from tests.conftest import Api, Tenant, database_kind
from tests.templates.conftest import BIG_QUOTAS, PROBE, delete_sandbox, run

from .conftest import pool_status, set_target, shared_template, sql, wait_ready

# Both claims, PostgreSQL's (claim_pg) and SQLite's (claim_sqlite), give the same answers.
pytestmark = pytest.mark.sqlite

TARGET = 10


@pytest.fixture(scope="module")
async def pooled(papi: Api) -> str:
    name = await shared_template(papi)
    await set_target(papi, name, TARGET)
    await wait_ready(papi, name, TARGET)
    return name


async def create(api: Api, tenant: Tenant, **body: Any) -> dict[str, Any]:
    r = await api.client.post("/v1/sandboxes", json={"ttl_s": 900, **body}, headers=tenant.headers)
    assert r.status_code == 201, r.text
    return dict(r.json())


# Twice the pool's target: more creates at once than ready members. Each
# sandbox holds its whole writable disk (1 GiB for a small one) on the node while it lives.
PER_TENANT = 4


async def test_concurrent_creates_never_share_a_member(
    papi: Api, pooled: str, own_database: str
) -> None:
    tenants = [await papi.tenant(**BIG_QUOTAS) for _ in range(5)]
    owners = [t for t in tenants for _ in range(PER_TENANT)]
    count = len(owners)
    answers = await asyncio.gather(
        *(create(papi, t, template=pooled) for t in owners), return_exceptions=True
    )
    boxes = [a for a in answers if isinstance(a, dict)]
    tenant_of = {b["id"]: t for b, t in zip(answers, owners, strict=True) if isinstance(b, dict)}
    sems = asyncio.Semaphore(8)

    async def remove(box: dict[str, Any]) -> None:
        async with sems:
            await delete_sandbox(papi, tenant_of[box["id"]], box["id"])

    try:
        failed = [a for a in answers if isinstance(a, BaseException)]
        if failed:
            raise failed[0]
        assert len(boxes) == count and all(b["state"] == "running" for b in boxes)
        ids = [b["id"] for b in boxes]
        rows = await sql(
            own_database,
            "SELECT id, runtime_id, started_from FROM sandboxes WHERE id IN :ids",
            ids=ids,
        )
        runtime_ids = [r.runtime_id for r in rows]
        assert len(set(runtime_ids)) == count  # no runtime sandbox handed out twice
        from_pool = {r.id: r.runtime_id for r in rows if r.started_from == "pool"}
        assert 1 <= len(from_pool)
        assert {r.started_from for r in rows} <= {"pool", "snapshot"}  # the rest started cold
        # every claim took its own member, recorded against exactly that sandbox
        members = await sql(
            own_database,
            "SELECT sandbox_id, runtime_id FROM pool_members WHERE sandbox_id IN :ids",
            ids=ids,
        )
        assert {m.sandbox_id: m.runtime_id for m in members} == from_pool
        status = await pool_status(papi, pooled)
        assert status["claims"] == len(from_pool)
        assert status["misses"] == count - len(from_pool)
        print(f"\n{count} concurrent creates: {len(from_pool)} from the pool, the rest cold")
    finally:
        await asyncio.gather(*(remove(b) for b in boxes))


async def test_the_pool_refills_after_claims(papi: Api, pooled: str) -> None:
    status = await wait_ready(papi, pooled, TARGET)
    assert status["last_refill_at"] is not None and status["last_refill_ms"] > 0
    metrics = (await papi.client.get("/metrics")).text
    assert "airlock_pool_claims_total" in metrics
    assert f'airlock_pool_ready{{size="small",template="{pooled}"}} 10.0' in metrics
    assert "airlock_pool_refill_seconds_bucket" in metrics


async def test_claimed_sandbox_gets_the_tenants_env_labels_and_ttl(papi: Api, pooled: str) -> None:
    await wait_ready(papi, pooled, TARGET)
    tenant = await papi.tenant(**BIG_QUOTAS)
    box = await create(
        papi, tenant, template=pooled, env={"WHO": "tenant-env"}, labels={"k": "v"}, ttl_s=321
    )
    assert box["started_from"] == "pool"
    assert box["labels"] == {"k": "v"} and box["ttl_s"] == 321
    out = await run(papi, tenant, box["id"], ["sh", "-c", "echo $WHO"])
    assert out["stdout"] == "tenant-env\n"
    assert (await run(papi, tenant, box["id"], PROBE))["stdout"] == "42\n"
    await delete_sandbox(papi, tenant, box["id"])


async def test_every_member_reads_fresh_randomness(papi: Api, pooled: str) -> None:
    await wait_ready(papi, pooled, TARGET)
    # one tenant each: a tenant's fair share while many ask is one claim a minute
    tenants = [await papi.tenant(**BIG_QUOTAS) for _ in range(TARGET)]
    boxes = [await create(papi, t, template=pooled) for t in tenants]
    assert all(b["started_from"] == "pool" for b in boxes)
    urandom, pyrandom = set(), set()
    for tenant, box in zip(tenants, boxes, strict=True):
        raw = await run(papi, tenant, box["id"], ["sh", "-c", "head -c16 /dev/urandom | od -x"])
        urandom.add(raw["stdout"])
        py = await run(
            papi, tenant, box["id"], ["python3", "-c", "import random; print(random.random())"]
        )
        pyrandom.add(py["stdout"])
    assert len(urandom) == TARGET and len(pyrandom) == TARGET
    for tenant, box in zip(tenants, boxes, strict=True):
        await delete_sandbox(papi, tenant, box["id"])


async def test_a_tenant_gets_only_its_fair_share_while_others_ask(papi: Api) -> None:
    name = await shared_template(papi, setup=[["true"]])
    await set_target(papi, name, 4)
    await wait_ready(papi, name, 4)
    greedy, other = await papi.tenant(**BIG_QUOTAS), await papi.tenant(**BIG_QUOTAS)
    first = await create(papi, other, template=name)
    # two tenants asked this minute: each may claim 4 // 2 = 2
    mine = [await create(papi, greedy, template=name) for _ in range(3)]
    assert first["started_from"] == "pool"
    assert [b["started_from"] for b in mine] == ["pool", "pool", "snapshot"]
    for tenant, box in [(other, first), *((greedy, b) for b in mine)]:
        await delete_sandbox(papi, tenant, box["id"])


async def test_deleting_a_template_with_pool_members_is_refused_unless_forced(
    papi: Api, own_database: str
) -> None:
    name = await shared_template(papi, setup=[["true"]])
    await set_target(papi, name, 2)
    await wait_ready(papi, name, 2)
    r = await papi.client.delete(f"/v1/templates/{name}", headers=papi.operator)
    assert r.status_code == 409, r.text
    assert r.json()["pool_members"] == 2
    members = await sql(
        own_database,
        "SELECT m.runtime_id FROM pool_members m JOIN pool_targets p ON p.id = m.pool_id "
        "JOIN templates t ON t.id = p.template_id WHERE t.name = :name AND m.state = 'ready'",
        name=name,
    )
    r = await papi.client.delete(f"/v1/templates/{name}?force=true", headers=papi.operator)
    assert r.status_code == 204, r.text
    runtime = papi.app.state.runtimes.current
    alive = {s.id for s in await runtime.list_sandboxes()}
    assert not ({m.runtime_id for m in members} & alive)


async def test_a_malformed_network_policy_is_refused_and_claims_nothing(
    papi: Api, pooled: str
) -> None:
    tenant = await papi.tenant(**BIG_QUOTAS)
    before = await pool_status(papi, pooled)
    network = {"mode": "none", "allow": ["10.0.0.1:443"]}
    r = await papi.client.post(
        "/v1/sandboxes",
        json={"template": pooled, "network": network},
        headers=tenant.headers,
    )
    assert r.status_code == 422, r.text
    assert (await pool_status(papi, pooled))["claims"] == before["claims"]


async def test_a_pool_must_match_the_templates_size(papi: Api, pooled: str) -> None:
    r = await papi.client.put(
        f"/v1/pool/{pooled}", json={"size": "medium", "target": 1}, headers=papi.operator
    )
    assert r.status_code == 422 and r.json()["size"] == "small"
    tenant = await papi.tenant(**BIG_QUOTAS)
    r = await papi.client.put(
        f"/v1/pool/{pooled}", json={"size": "small", "target": 1}, headers=tenant.headers
    )
    assert r.status_code == 403  # pools are the operator's


async def test_a_claim_is_recorded_as_fully_as_any_create(papi: Api, own_database: str) -> None:
    # A pool of its own: only this tenant asks it, so its fair share is the whole pool.
    pooled = await shared_template(papi, setup=[["true"]])
    await set_target(papi, pooled, 4)
    await wait_ready(papi, pooled, 4)
    tenant = await papi.tenant(max_sandboxes=3, max_vcpus=200, max_memory_mib=100_000)
    # On PostgreSQL the tenant's first create makes its audit chain on the general path and the
    # claims after it take the short one; on SQLite all take the short one. Both must leave the
    # same records as the general path.
    first = await create(papi, tenant, template=pooled)
    key = {"Idempotency-Key": "claim-1"}
    r = await papi.client.post(
        "/v1/sandboxes", json={"template": pooled}, headers={**tenant.headers, **key}
    )
    assert r.status_code == 201, r.text
    second = r.json()
    assert second["started_from"] == "pool" and second["state"] == "running"
    r = await papi.client.post(
        "/v1/sandboxes", json={"template": pooled}, headers={**tenant.headers, **key}
    )
    assert r.status_code == 200 and r.json()["id"] == second["id"]  # replayed, nothing new
    third = await create(papi, tenant, template=pooled)
    before = await pool_status(papi, pooled)
    r = await papi.client.post("/v1/sandboxes", json={"template": pooled}, headers=tenant.headers)
    assert r.status_code == 429 and r.json()["quota"] == "max_sandboxes", r.text
    after = await pool_status(papi, pooled)
    assert after["claims"] == before["claims"]  # a refused create claims nothing

    ids = [first["id"], second["id"], third["id"]]
    transitions = await sql(
        own_database,
        "SELECT sandbox_id, from_state, to_state, reason FROM sandbox_transitions "
        "WHERE sandbox_id IN :ids ORDER BY id",
        ids=ids,
    )
    for sandbox_id in ids:
        steps = [
            (t.from_state, t.to_state, t.reason) for t in transitions if t.sandbox_id == sandbox_id
        ]
        assert steps == [
            (None, "creating", None),
            ("creating", "running", "claimed from the warm pool"),
        ], steps
    requests = await sql(
        own_database,
        "SELECT claimed FROM pool_requests WHERE tenant_id = :t ORDER BY id",
        t=tenant.id,
    )
    assert [q.claimed for q in requests] == [True, True, True]
    events = await sql(
        own_database,
        "SELECT action, target, details FROM audit_events WHERE chain = :t ORDER BY seq",
        t=tenant.id,
    )
    created = [e for e in events if e.action == "sandbox.create"]
    assert [e.target for e in created] == ids
    for e in created:
        details = e.details if isinstance(e.details, dict) else json.loads(e.details)
        assert details["started_from"] == "pool" and details["template"] == pooled
    r = await papi.client.get(
        "/v1/audit/verify", params={"tenant_id": tenant.id}, headers=papi.operator
    )
    assert r.json()["valid"] is True, r.text
    for box in (first, second, third):
        await delete_sandbox(papi, tenant, box["id"])


@pytest.mark.skipif(
    database_kind() == "sqlite",
    reason="PostgreSQL's claim appends by compare-and-swap; SQLite's holds the write lock",
)
async def test_a_claim_whose_chain_moved_claims_nothing_and_tries_again(
    papi: Api, own_database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between a claim's read and its write another action of the tenant extends its audit
    chain: that write must leave nothing behind (no member claimed for a sandbox that was
    not recorded), and the claim reads again and succeeds."""
    pooled = await shared_template(papi, setup=[["true"]])
    await set_target(papi, pooled, 2)
    await wait_ready(papi, pooled, 2)
    tenant = await papi.tenant(**BIG_QUOTAS)
    first = await create(papi, tenant, template=pooled)  # makes the tenant's chain
    outcomes: list[str] = []
    original = claim_pg._write

    async def write_after_another_append(conn: Any, *args: Any) -> str:
        if not outcomes:
            async with driver_connection(papi_engine) as other:
                head = await pg_read_head(other, tenant.id)
                event = next_event(
                    AuditContext(actor="test", request_id=None, client=None),
                    chain=tenant.id,
                    head=head,
                    action="test.between",
                    target=None,
                    outcome="ok",
                    details={},
                )
                assert await pg_try_append(other, event)
        outcome = await original(conn, *args)
        outcomes.append(outcome)
        return outcome

    papi_engine = make_engine(own_database)
    monkeypatch.setattr(claim_pg, "_write", write_after_another_append)
    try:
        second = await create(papi, tenant, template=pooled)
    finally:
        await papi_engine.dispose()
    assert outcomes == ["moved", "claimed"]
    assert second["started_from"] == "pool"
    orphans = await sql(
        own_database,
        "SELECT m.id FROM pool_members m WHERE m.state = 'claimed' "
        "AND NOT EXISTS (SELECT 1 FROM sandboxes s WHERE s.id = m.sandbox_id)",
    )
    assert orphans == []
    r = await papi.client.get(
        "/v1/audit/verify", params={"tenant_id": tenant.id}, headers=papi.operator
    )
    assert r.json()["valid"] is True, r.text
    for box in (first, second):
        await delete_sandbox(papi, tenant, box["id"])

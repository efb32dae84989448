"""Idempotency-Key: a retried create answers with the first result and creates nothing new."""

from __future__ import annotations

import asyncio
import secrets

from tests.e2e.conftest import Airlock, Tenant, audit_events


async def test_retried_sandbox_create(airlock: Airlock, tenant: Tenant) -> None:
    key = "idem-" + secrets.token_hex(8)
    body = {"ttl_s": 600, "labels": {"try": "one"}}
    async with airlock.http(tenant.key) as http:
        first = await http.post("/v1/sandboxes", json=body, headers={"Idempotency-Key": key})
        assert first.status_code == 201, first.text
        tenant.sandboxes.append(first.json()["id"])
        again = await http.post("/v1/sandboxes", json=body, headers={"Idempotency-Key": key})
        assert again.status_code == 200, again.text
        assert again.json()["id"] == first.json()["id"]
        other = await http.post(
            "/v1/sandboxes", json={"ttl_s": 900}, headers={"Idempotency-Key": key}
        )
        assert other.status_code in (409, 422), other.text
    rows = await airlock.db.count("SELECT count(*) FROM sandboxes WHERE tenant_id = $1", tenant.id)
    assert rows == 1
    creates = [e for e in await audit_events(airlock, tenant) if e["action"] == "sandbox.create"]
    assert len(creates) == 1


async def test_concurrent_retries_of_a_sandbox_create(airlock: Airlock, tenant: Tenant) -> None:
    key = "idem-" + secrets.token_hex(8)
    async with airlock.http(tenant.key) as http:
        answers = await asyncio.gather(
            *(
                http.post("/v1/sandboxes", json={"ttl_s": 600}, headers={"Idempotency-Key": key})
                for _ in range(3)
            )
        )
    codes = sorted(r.status_code for r in answers)
    assert codes == [200, 200, 201], [r.text for r in answers]
    ids = {r.json()["id"] for r in answers}
    assert len(ids) == 1
    tenant.sandboxes.extend(ids)
    rows = await airlock.db.count("SELECT count(*) FROM sandboxes WHERE tenant_id = $1", tenant.id)
    assert rows == 1


async def test_retried_exec(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    path = f"/v1/sandboxes/{sandbox.id}/execs"
    key = "idem-" + secrets.token_hex(8)
    body = {"cmd": ["sh", "-c", "echo run >> /tmp/runs; wc -l < /tmp/runs"]}
    async with airlock.http(tenant.key) as http:
        first = await http.post(path, json=body, headers={"Idempotency-Key": key})
        assert first.status_code == 200, first.text
        assert first.json()["stdout"] == "1\n"
        again = await http.post(path, json=body, headers={"Idempotency-Key": key})
        assert again.status_code == 200, again.text
        assert again.json()["id"] == first.json()["id"]
        assert again.json()["stdout"] == "1\n"
        other = await http.post(
            path, json={"cmd": ["echo", "different"]}, headers={"Idempotency-Key": key}
        )
        assert other.status_code in (409, 422), other.text
        # The command really ran once: a new exec sees one line in the file.
        count = await http.post(path, json={"cmd": ["sh", "-c", "wc -l < /tmp/runs"]})
        assert count.json()["stdout"] == "1\n"
    rows = await airlock.db.count(
        "SELECT count(*) FROM execs WHERE sandbox_id = $1 AND idempotency_key = $2",
        sandbox.id,
        key,
    )
    assert rows == 1
    starts = [
        e
        for e in await audit_events(airlock, tenant)
        if e["action"] == "exec.start" and e["target"] == first.json()["id"]
    ]
    assert len(starts) == 1


async def test_retried_exec_while_it_still_runs(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    path = f"/v1/sandboxes/{sandbox.id}/execs"
    key = "idem-" + secrets.token_hex(8)
    body = {"cmd": ["sh", "-c", "sleep 2; echo slow"], "wait": False}
    async with airlock.http(tenant.key) as http:
        first = await http.post(path, json=body, headers={"Idempotency-Key": key})
        assert first.status_code == 202, first.text
        again = await http.post(path, json=body, headers={"Idempotency-Key": key})
        assert again.status_code in (200, 202), again.text
        assert again.json()["id"] == first.json()["id"]
    rows = await airlock.db.count("SELECT count(*) FROM execs WHERE sandbox_id = $1", sandbox.id)
    assert rows == 1


async def test_concurrent_retries_of_an_exec(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    path = f"/v1/sandboxes/{sandbox.id}/execs"
    key = "idem-" + secrets.token_hex(8)
    body = {"cmd": ["sh", "-c", "echo run >> /tmp/runs; wc -l < /tmp/runs"]}
    async with airlock.http(tenant.key) as http:
        answers = await asyncio.gather(
            *(http.post(path, json=body, headers={"Idempotency-Key": key}) for _ in range(4))
        )
        assert [r.status_code for r in answers] == [200] * 4, [r.text for r in answers]
        assert len({r.json()["id"] for r in answers}) == 1
        count = await http.post(path, json={"cmd": ["sh", "-c", "wc -l < /tmp/runs"]})
        assert count.json()["stdout"] == "1\n"
    rows = await airlock.db.count("SELECT count(*) FROM execs WHERE sandbox_id = $1", sandbox.id)
    assert rows == 2

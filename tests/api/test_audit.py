"""The audit log: every state change leaves a hash-chained event; tampering is detected."""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import Any

import msgspec
import pytest
from litestar.testing import AsyncTestClient
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from service.app import create_app
from service.audit import recorder
from service.db import migrate, models
from service.db.session import make_engine, make_sessionmaker
from service.jobs import retention
from service.jobs.retention import purge_once
from service.settings import Settings
from tests.conftest import Api, Tenant, create_pg_database, database_kind

GENESIS = "0" * 64
CLIENT = "testclient"  # the peer address the in-process test client reports

postgres_only = pytest.mark.skipif(
    database_kind() != "postgresql",
    reason="the append-only trigger and the superuser bypass exist only on PostgreSQL",
)


@pytest.fixture
async def raw(database_url: str) -> AsyncIterator[AsyncEngine]:
    """A direct connection to the test database, as someone with database access would have."""
    engine = make_engine(database_url)
    yield engine
    await engine.dispose()


async def events(api: Api, tenant_id: str, **params: Any) -> list[dict[str, Any]]:
    """Every event of a tenant's chain, newest first, read by the operator page by page."""
    out: list[dict[str, Any]] = []
    query: dict[str, Any] = {"tenant_id": tenant_id, "limit": 200, **params}
    while True:
        r = await api.client.get("/v1/audit", params=query, headers=api.operator)
        assert r.status_code == 200, r.text
        out.extend(r.json()["items"])
        if r.json()["next_cursor"] is None:
            return out
        query["cursor"] = r.json()["next_cursor"]


async def verify(api: Api, tenant_id: str, full: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"tenant_id": tenant_id}
    if full:
        params["full"] = "true"
    r = await api.client.get("/v1/audit/verify", params=params, headers=api.operator)
    assert r.status_code == 200, r.text
    return r.json()


async def tamper(engine: AsyncEngine, sql: str, **params: Any) -> None:
    """Change audit rows behind the service's back (on PostgreSQL: as superuser, no triggers)."""
    async with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            await conn.execute(text("SET LOCAL session_replication_role = replica"))
        result = await conn.execute(text(sql), params)
        assert result.rowcount == 1


async def refused(engine: AsyncEngine, *statements: str, **params: Any) -> str:
    """Run statements in one transaction that must fail; return the database's message."""
    async with engine.connect() as conn:
        trans = await conn.begin()
        try:
            with pytest.raises(DBAPIError) as excinfo:
                for sql in statements:
                    await conn.execute(text(sql), params)
        finally:
            await trans.rollback()
    return str(excinfo.value.orig)


async def tenant_with_events(api: Api, extra_keys: int) -> Tenant:
    """A tenant whose chain holds 2 + extra_keys events (tenant.create, api_key.create, ...)."""
    tenant = await api.tenant()
    for _ in range(extra_keys):
        await api.key(tenant, ["audit:read"])
    return tenant


@pytest.mark.sqlite
async def test_every_state_change_is_recorded_with_who_where_and_request(api: Api) -> None:
    name = f"audited-{secrets.token_hex(4)}"
    created = await api.client.post("/v1/tenants", json={"name": name}, headers=api.operator)
    assert created.status_code == 201, created.text
    tenant_id = created.json()["tenant"]["id"]
    initial_key_id = created.json()["api_key_id"]
    tenant_headers = api.bearer(created.json()["api_key"])

    key = await api.client.post(
        "/v1/api-keys", json={"name": "ci", "scopes": ["audit:read"]}, headers=tenant_headers
    )
    assert key.status_code == 201, key.text
    new_key_id = key.json()["api_key"]["id"]

    issued = await api.client.post(
        "/v1/tokens", json={"scopes": ["audit:read"], "ttl_s": 120}, headers=tenant_headers
    )
    assert issued.status_code == 201, issued.text
    jti = issued.json()["jti"]

    revoked_token = await api.client.delete(
        f"/v1/tokens/{jti}", headers=api.bearer(issued.json()["token"])
    )
    assert revoked_token.status_code == 204, revoked_token.text

    revoked_key = await api.client.delete(f"/v1/api-keys/{new_key_id}", headers=tenant_headers)
    assert revoked_key.status_code == 204, revoked_key.text

    updated = await api.client.patch(
        f"/v1/tenants/{tenant_id}",
        json={"quotas": {"max_sandboxes": 3}},
        headers=api.operator,
    )
    assert updated.status_code == 200, updated.text

    chain = list(reversed(await events(api, tenant_id)))

    def rid(response: Any) -> str:
        return str(response.headers["x-request-id"])

    expected = [
        ("tenant.create", "operator", tenant_id, rid(created)),
        ("api_key.create", "operator", initial_key_id, rid(created)),
        ("api_key.create", initial_key_id, new_key_id, rid(key)),
        ("token.issue", initial_key_id, jti, rid(issued)),
        ("token.revoke", jti, jti, rid(revoked_token)),
        ("api_key.revoke", initial_key_id, new_key_id, rid(revoked_key)),
        ("tenant.update", "operator", tenant_id, rid(updated)),
    ]
    assert [(e["action"], e["actor"], e["target"], e["request_id"]) for e in chain] == expected
    assert [e["seq"] for e in chain] == list(range(1, len(expected) + 1))
    assert {e["tenant_id"] for e in chain} == {tenant_id}
    assert {e["client"] for e in chain} == {CLIENT}
    assert {e["outcome"] for e in chain} == {"ok"}
    assert chain[0]["details"]["name"] == name
    assert chain[-1]["details"] == {"quotas": {"max_sandboxes": 3}}
    # Each event links to the one before it, starting from the genesis hash.
    assert [e["prev_hash"] for e in chain] == [GENESIS] + [e["hash"] for e in chain[:-1]]
    # The token's secret never lands in the audit log.
    assert issued.json()["token"] not in str(chain)
    assert key.json()["key"] not in str(chain)


@pytest.mark.sqlite
async def test_rejected_change_writes_no_event(api: Api, tenant: Tenant) -> None:
    before = await events(api, tenant.id)
    r = await api.client.patch(
        f"/v1/tenants/{tenant.id}",
        json={"quotas": {"max_token_ttl_s": 999_999}},
        headers=api.operator,
    )
    assert r.status_code == 422, r.text
    r = await api.client.delete("/v1/api-keys/key_does_not_exist", headers=tenant.headers)
    assert r.status_code == 404, r.text
    assert await events(api, tenant.id) == before


@pytest.mark.sqlite
async def test_filters_by_action_target_and_time(api: Api, tenant: Tenant) -> None:
    key_a = await api.client.post(
        "/v1/api-keys", json={"name": "a", "scopes": ["audit:read"]}, headers=tenant.headers
    )
    key_a_id = key_a.json()["api_key"]["id"]
    await api.key(tenant, ["audit:read"])
    await api.token(tenant.key, scopes=["audit:read"], ttl_s=60)
    r = await api.client.delete(f"/v1/api-keys/{key_a_id}", headers=tenant.headers)
    assert r.status_code == 204
    by_seq = {e["seq"]: e for e in await events(api, tenant.id)}
    assert [by_seq[s]["action"] for s in sorted(by_seq)] == [
        "tenant.create",
        "api_key.create",
        "api_key.create",
        "api_key.create",
        "token.issue",
        "api_key.revoke",
    ]

    async def seqs(**params: Any) -> list[int]:
        r = await api.client.get("/v1/audit", params=params, headers=tenant.headers)
        assert r.status_code == 200, r.text
        return [e["seq"] for e in r.json()["items"]]

    assert await seqs(action="api_key.create") == [4, 3, 2]
    assert await seqs(target=key_a_id) == [6, 3]
    assert await seqs(action="api_key.revoke", target=key_a_id) == [6]
    assert await seqs(action="sandbox.create") == []

    ts3 = datetime.fromisoformat(by_seq[3]["ts"])
    ts5 = datetime.fromisoformat(by_seq[5]["ts"])
    assert ts3.utcoffset() == timedelta(0)
    # `since` is inclusive, `until` exclusive.
    assert await seqs(since=ts3.isoformat(), until=ts5.isoformat()) == [4, 3]
    assert await seqs(since=ts5.isoformat()) == [6, 5]
    assert await seqs(until=ts3.isoformat()) == [2, 1]
    # The same instant at +02:00 selects the same events; a time without an offset (or a
    # number) is not an RFC 3339 date-time and is refused, never guessed at.
    plus_two = ts3.astimezone(timezone(timedelta(hours=2))).isoformat()
    assert await seqs(since=plus_two) == [6, 5, 4, 3]
    for loose in (ts3.replace(tzinfo=None).isoformat(), "0.5", "1700000000"):
        r = await api.client.get("/v1/audit", params={"since": loose}, headers=tenant.headers)
        assert r.status_code == 422, (loose, r.text)
        assert r.json()["code"] == "validation_failed"


@pytest.mark.sqlite
@pytest.mark.parametrize("gap", [timedelta(0), timedelta(seconds=-1)])
async def test_since_not_before_until_is_an_empty_page(
    api: Api, tenant: Tenant, gap: timedelta
) -> None:
    since = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
    until = since + gap
    r = await api.client.get(
        "/v1/audit",
        params={"since": since.isoformat(), "until": until.isoformat()},
        headers=tenant.headers,
    )
    assert r.status_code == 200, r.text
    assert r.json() == {"items": [], "next_cursor": None}


@pytest.mark.sqlite
async def test_cursor_pages_cover_the_chain_once(api: Api) -> None:
    tenant = await tenant_with_events(api, extra_keys=11)  # 13 events
    seen: list[int] = []
    pages = 0
    params: dict[str, Any] = {"limit": 4}
    while True:
        r = await api.client.get("/v1/audit", params=params, headers=tenant.headers)
        assert r.status_code == 200, r.text
        page = r.json()
        assert len(page["items"]) <= 4
        seen.extend(e["seq"] for e in page["items"])
        pages += 1
        if page["next_cursor"] is None:
            break
        params["cursor"] = page["next_cursor"]
    assert seen == list(range(13, 0, -1))
    assert pages == 4

    # Filters hold across pages too.
    filtered: list[int] = []
    params = {"limit": 5, "action": "api_key.create"}
    while True:
        r = await api.client.get("/v1/audit", params=params, headers=tenant.headers)
        filtered.extend(e["seq"] for e in r.json()["items"])
        if r.json()["next_cursor"] is None:
            break
        params["cursor"] = r.json()["next_cursor"]
    assert filtered == list(range(13, 1, -1))


@pytest.mark.sqlite
async def test_garbage_cursor_is_422(api: Api, tenant: Tenant) -> None:
    r = await api.client.get(
        "/v1/audit", params={"cursor": "%%%not-a-cursor"}, headers=tenant.headers
    )
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "validation_failed"


@pytest.mark.sqlite
async def test_fresh_chain_verifies(api: Api, tenant: Tenant) -> None:
    r = await api.client.get("/v1/audit/verify", headers=tenant.headers)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "tenant_id": tenant.id,
        "valid": True,
        "events_checked": 2,
        "first_seq": 1,
        "last_seq": 2,
        "anchored_after_purge": False,
        "broken": None,
        "checked_from_seq": None,
        "keyed_from_seq": 1,
    }


@pytest.mark.sqlite
async def test_other_tenants_chain_is_not_found(api: Api, tenant: Tenant) -> None:
    other = await api.tenant()
    for path in ("/v1/audit", "/v1/audit/verify"):
        r = await api.client.get(path, params={"tenant_id": other.id}, headers=tenant.headers)
        assert r.status_code == 404, r.text
        assert r.json()["code"] == "not_found"
        # The caller's own id is accepted.
        r = await api.client.get(path, params={"tenant_id": tenant.id}, headers=tenant.headers)
        assert r.status_code == 200, r.text
    r = await api.client.get("/v1/audit", headers=tenant.headers)
    assert {e["tenant_id"] for e in r.json()["items"]} == {tenant.id}
    assert other.id not in r.text

    # The operator reads any tenant's chain by naming it.
    mine = await events(api, tenant.id)
    theirs = await events(api, other.id)
    assert {e["tenant_id"] for e in mine} == {tenant.id}
    assert {e["tenant_id"] for e in theirs} == {other.id}
    assert [e["action"] for e in theirs] == ["api_key.create", "tenant.create"]


@postgres_only
async def test_database_refuses_update_delete_and_truncate(api: Api, raw: AsyncEngine) -> None:
    tenant = await tenant_with_events(api, extra_keys=1)
    where = {"c": tenant.id}
    message = await refused(
        raw, "UPDATE audit_events SET outcome = 'forged' WHERE chain = :c AND seq = 2", **where
    )
    assert "append-only (UPDATE refused)" in message
    message = await refused(raw, "DELETE FROM audit_events WHERE chain = :c AND seq = 2", **where)
    assert "append-only (DELETE refused)" in message
    message = await refused(raw, "TRUNCATE audit_events")
    assert "append-only (TRUNCATE refused)" in message
    # Even the retention job's flag does not let a recent event go.
    message = await refused(
        raw,
        "SET LOCAL airlock.audit_purge = 'on'",
        "DELETE FROM audit_events WHERE chain = :c AND seq = 2",
        **where,
    )
    assert "append-only (DELETE refused)" in message
    assert len(await events(api, tenant.id)) == 3
    assert (await verify(api, tenant.id))["valid"] is True


@pytest.mark.sqlite
@pytest.mark.skipif(database_kind() != "sqlite", reason="the SQLite trigger is checked on SQLite")
async def test_sqlite_refuses_update(api: Api, raw: AsyncEngine) -> None:
    tenant = await tenant_with_events(api, extra_keys=0)
    message = await refused(
        raw, "UPDATE audit_events SET outcome = 'forged' WHERE chain = :c", c=tenant.id
    )
    assert "append-only (UPDATE refused)" in message


@postgres_only
async def test_changed_details_break_the_chain_at_that_event(api: Api, raw: AsyncEngine) -> None:
    tenant = await tenant_with_events(api, extra_keys=2)  # seq 1..4
    assert (await verify(api, tenant.id))["valid"] is True
    await tamper(
        raw,
        """UPDATE audit_events SET details = '{"name": "innocent", "scopes": []}'::json
           WHERE chain = :c AND seq = 3""",
        c=tenant.id,
    )
    # Behind the verified point: the next verify starts there; a full one finds it.
    assert (await verify(api, tenant.id))["valid"] is True
    result = await verify(api, tenant.id, full=True)
    assert result["valid"] is False
    assert result["broken"]["seq"] == 3
    assert result["broken"]["reason"] == "event content does not match its hash"
    assert result["events_checked"] == 2


@postgres_only
async def test_rewritten_event_with_fresh_hash_breaks_the_next_link(
    api: Api, raw: AsyncEngine
) -> None:
    """Forging a row and recomputing its own hash is caught by the event after it."""
    from service.audit.chain import row_hash

    tenant = await tenant_with_events(api, extra_keys=2)
    row = next(e for e in await events(api, tenant.id) if e["seq"] == 2)

    forged = SimpleNamespace(
        **{**row, "chain": tenant.id, "ts": datetime.fromisoformat(row["ts"]), "outcome": "denied"}
    )
    await tamper(
        raw,
        "UPDATE audit_events SET outcome = 'denied', hash = :h WHERE chain = :c AND seq = 2",
        c=tenant.id,
        h=row_hash(forged),
    )
    result = await verify(api, tenant.id)
    assert result["valid"] is False
    assert result["broken"]["seq"] == 3
    assert result["broken"]["reason"] == "link to the previous event does not match"


@pytest.mark.sqlite
async def test_deleted_middle_event_is_reported_missing(api: Api, raw: AsyncEngine) -> None:
    tenant = await tenant_with_events(api, extra_keys=3)  # seq 1..5
    await tamper(raw, "DELETE FROM audit_events WHERE chain = :c AND seq = 3", c=tenant.id)
    result = await verify(api, tenant.id)
    assert result["valid"] is False
    assert result["broken"]["seq"] == 3
    assert result["broken"]["event_id"] is None
    assert result["broken"]["reason"] == "event missing from the chain"


@pytest.mark.sqlite
async def test_deleted_last_event_is_reported_missing_at_the_end(
    api: Api, raw: AsyncEngine
) -> None:
    tenant = await tenant_with_events(api, extra_keys=2)  # seq 1..4
    await tamper(raw, "DELETE FROM audit_events WHERE chain = :c AND seq = 4", c=tenant.id)
    result = await verify(api, tenant.id)
    assert result["valid"] is False
    assert result["broken"]["seq"] == 4
    assert result["broken"]["reason"] == "events at the end of the chain are missing"
    assert result["last_seq"] == 3


@pytest.mark.sqlite
async def test_retention_purges_old_events_and_keeps_the_chain_verifiable(
    api: Api, database_url: str, raw: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    hundred_days_ago = lambda: datetime.now(UTC) - timedelta(days=100)  # noqa: E731
    monkeypatch.setattr(recorder, "utcnow", hundred_days_ago)
    short = await tenant_with_events(api, extra_keys=1)  # seq 1..3, 100 days old
    long = await api.tenant(audit_retention_days=365)  # seq 1..2, 100 days old
    monkeypatch.undo()
    await api.key(short, ["audit:read"])  # seq 4, now
    await api.key(long, ["audit:read"])  # seq 3, now

    sessionmaker = make_sessionmaker(raw)
    async with sessionmaker() as session, session.begin():
        purged = await purge_once(session)
    assert purged[short.id] == 3
    assert long.id not in purged

    kept = await events(api, short.id)
    assert [(e["seq"], e["action"]) for e in kept] == [(5, "audit.purge"), (4, "api_key.create")]
    purge = kept[0]
    assert purge["actor"] == "system:retention"
    assert purge["details"]["events"] == 3
    assert purge["details"]["retention_days"] == 90
    assert purge["details"]["purged_through_seq"] == 3
    assert (await verify(api, short.id)) == {
        "tenant_id": short.id,
        "valid": True,
        "events_checked": 2,
        "first_seq": 4,
        "last_seq": 5,
        "anchored_after_purge": True,
        "broken": None,
        "checked_from_seq": None,
        "keyed_from_seq": 1,
    }
    # A tenant with a longer retention keeps its 100-day-old events.
    assert [e["seq"] for e in await events(api, long.id)] == [3, 2, 1]
    assert (await verify(api, long.id))["anchored_after_purge"] is False

    # A second run finds nothing more to purge and records nothing.
    async with sessionmaker() as session, session.begin():
        assert short.id not in await purge_once(session)
    assert len(await events(api, short.id)) == 2


@pytest.mark.sqlite
async def test_concurrent_changes_extend_the_chain_without_gaps(api: Api, tenant: Tenant) -> None:
    async def create_key(i: int) -> int:
        r = await api.client.post(
            "/v1/api-keys", json={"name": f"k{i}", "scopes": ["audit:read"]}, headers=tenant.headers
        )
        return r.status_code

    statuses = await asyncio.gather(*(create_key(i) for i in range(20)))
    assert statuses == [201] * 20
    chain = await events(api, tenant.id)
    assert sorted(e["seq"] for e in chain) == list(range(1, 23))
    assert (await verify(api, tenant.id))["valid"] is True


@pytest.mark.sqlite
async def test_appends_from_separate_transactions_are_serialised(
    api: Api, tenant: Tenant, raw: AsyncEngine
) -> None:
    """Writers that overlap in time (as two replicas would) never take the same link."""
    sessionmaker = make_sessionmaker(raw)
    ctx = recorder.AuditContext(actor="test", request_id=None, client=None)

    async def append(i: int) -> None:
        async with sessionmaker() as session, session.begin():
            await recorder.record(
                session, ctx, chain=tenant.id, action="test.append", target=str(i)
            )
            await asyncio.sleep(0.01)  # hold the transaction open while the others queue

    await asyncio.gather(*(append(i) for i in range(15)))
    chain = await events(api, tenant.id, action="test.append")
    assert sorted(int(e["target"]) for e in chain) == list(range(15))
    assert sorted(e["seq"] for e in chain) == list(range(3, 18))
    assert (await verify(api, tenant.id))["valid"] is True


async def test_long_chains_verify_across_batches(
    api: Api, tenant: Tenant, raw: AsyncEngine
) -> None:
    """Verification reads the chain in batches; links across batch edges are checked too."""
    sessionmaker = make_sessionmaker(raw)
    ctx = recorder.AuditContext(actor="test", request_id=None, client=None)
    async with sessionmaker() as session, session.begin():
        for i in range(1050):
            await recorder.record(session, ctx, chain=tenant.id, action="test.bulk", target=str(i))
    result = await verify(api, tenant.id)
    assert result["valid"] is True
    assert result["events_checked"] == 1052
    assert result["last_seq"] == 1052

    await tamper(raw, "DELETE FROM audit_events WHERE chain = :c AND seq = 1001", c=tenant.id)
    result = await verify(api, tenant.id, full=True)
    assert result["valid"] is False
    assert result["broken"]["seq"] == 1001
    assert result["events_checked"] == 1000


@pytest.mark.sqlite
async def test_cursor_from_another_listing_is_422(api: Api, tenant: Tenant) -> None:
    await api.tenant()
    await api.tenant()
    r = await api.client.get("/v1/tenants", params={"limit": 1}, headers=api.operator)
    foreign = r.json()["next_cursor"]
    assert foreign is not None
    r = await api.client.get(
        "/v1/audit", params={"cursor": foreign, "limit": 1}, headers=tenant.headers
    )
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "validation_failed"


@postgres_only
async def test_purge_tolerates_an_app_clock_slightly_ahead_of_the_database(
    api: Api, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, drop = await create_pg_database("airlock_purge_skew")
    engine = make_engine(url)
    try:
        await asyncio.to_thread(migrate.upgrade, url)
        sessionmaker = make_sessionmaker(engine)
        ctx = recorder.AuditContext(actor="test", request_id=None, client=None)
        async with sessionmaker() as session, session.begin():
            for tenant_id, days in (("ten_short", 1), ("ten_old", 90)):
                session.add(
                    models.Tenant(
                        id=tenant_id,
                        name=tenant_id,
                        status="active",
                        quotas={"audit_retention_days": days},
                    )
                )
            await session.flush()
            # ten_old has an event long past its retention; ten_short one just past one day
            # (as the app sees it: the app clock runs a minute ahead of the database's).
            monkeypatch.setattr(recorder, "utcnow", lambda: datetime.now(UTC) - timedelta(days=200))
            await recorder.record(session, ctx, chain="ten_old", action="test", target=None)
            monkeypatch.setattr(
                recorder, "utcnow", lambda: datetime.now(UTC) - timedelta(days=1, seconds=-30)
            )
            await recorder.record(session, ctx, chain="ten_short", action="test", target=None)
            monkeypatch.undo()
        monkeypatch.setattr(retention, "utcnow", lambda: datetime.now(UTC) + timedelta(minutes=1))
        async with sessionmaker() as session, session.begin():
            purged = await purge_once(session)
        # The old tenant is purged; the event the database still counts as recent is kept.
        assert purged == {"ten_old": 1}
        async with sessionmaker() as session:
            left = await session.scalars(
                text("SELECT chain || ':' || action FROM audit_events ORDER BY chain, seq")
            )
            assert list(left) == ["ten_old:audit.purge", "ten_short:test"]
    finally:
        await engine.dispose()
        await drop()


@pytest.mark.sqlite
async def test_out_of_range_cursor_is_422(api: Api, tenant: Tenant) -> None:
    import base64

    cursor = base64.urlsafe_b64encode(str(10**30).encode()).rstrip(b"=").decode()
    r = await api.client.get("/v1/audit", params={"cursor": cursor}, headers=tenant.headers)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "validation_failed"


@pytest.mark.sqlite
async def test_the_service_runs_the_retention_purge_itself(
    api: Api, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        recorder,
        "utcnow",
        lambda: datetime.now(UTC) - timedelta(days=settings.audit_retention_days + 1),
    )
    tenant = await api.tenant()
    monkeypatch.undo()
    await api.key(tenant, ["audit:read"])

    app = create_app(msgspec.structs.replace(settings, retention_interval_s=3600), run_jobs=True)
    async with AsyncTestClient(app=app) as client:
        for _ in range(200):  # bounded wait for the job's first run
            r = await client.get("/v1/audit", headers=tenant.headers)
            if r.json()["items"][0]["action"] == "audit.purge":
                break
            await asyncio.sleep(0.05)
        assert [e["action"] for e in r.json()["items"]] == ["audit.purge", "api_key.create"]
        r = await client.get("/v1/audit/verify", headers=tenant.headers)
        assert r.json()["valid"] is True
        assert r.json()["anchored_after_purge"] is True


@postgres_only
async def test_silently_deleted_oldest_events_are_detected(
    api: Api, raw: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(recorder, "utcnow", lambda: datetime.now(UTC) - timedelta(days=10))
    tenant = await tenant_with_events(api, extra_keys=2)  # seq 1..4, ten days old, kept 90 days
    monkeypatch.undo()
    await api.key(tenant, ["audit:read"])  # seq 5
    # No superuser bypass: the trigger itself lets this through.
    async with raw.begin() as conn:
        await conn.execute(text("SET LOCAL airlock.audit_purge = 'on'"))
        result = await conn.execute(
            text("DELETE FROM audit_events WHERE chain = :c AND seq <= 2"), {"c": tenant.id}
        )
        assert result.rowcount == 2
    result = await verify(api, tenant.id)
    assert result["valid"] is False, result
    assert result["broken"]["seq"] == 2
    assert result["broken"]["reason"] == (
        "events at the start of the chain were removed without a purge"
    )


@pytest.mark.sqlite
async def test_repeated_purges_keep_the_chain_verifiable(
    api: Api, raw: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A later purge may remove an earlier purge's own record; the chain still verifies."""
    sessionmaker = make_sessionmaker(raw)

    def clock(days_ago: int) -> Any:
        return lambda: datetime.now(UTC) - timedelta(days=days_ago)

    monkeypatch.setattr(recorder, "utcnow", clock(200))
    tenant = await tenant_with_events(api, extra_keys=0)  # seq 1..2, 200 days old
    # A purge that ran 100 days ago removed those two and recorded itself (seq 3).
    monkeypatch.setattr(recorder, "utcnow", clock(100))
    monkeypatch.setattr(retention, "utcnow", clock(100))
    async with sessionmaker() as session, session.begin():
        assert (await purge_once(session)).get(tenant.id) == 2
    monkeypatch.undo()
    await api.key(tenant, ["audit:read"])  # seq 4, now

    # Today's purge removes the old purge record (seq 3) and records itself (seq 5).
    async with sessionmaker() as session, session.begin():
        assert (await purge_once(session)).get(tenant.id) == 1
    kept = await events(api, tenant.id)
    assert [(e["seq"], e["action"]) for e in kept] == [(5, "audit.purge"), (4, "api_key.create")]
    result = await verify(api, tenant.id)
    assert result["valid"] is True, result
    assert result["first_seq"] == 4
    assert result["anchored_after_purge"] is True


@postgres_only
async def test_a_purge_the_database_refuses_for_one_tenant_spares_the_others(
    api: Api, raw: AsyncEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Events out of time order (a replica's clock behind) make one tenant's purge fail."""
    sessionmaker = make_sessionmaker(raw)
    old = lambda: datetime.now(UTC) - timedelta(days=200)  # noqa: E731
    monkeypatch.setattr(recorder, "utcnow", old)
    skewed = await api.tenant()  # seq 1..2, old
    healthy = await api.tenant()  # seq 1..2, old
    monkeypatch.undo()
    await api.key(skewed, ["audit:read"])  # seq 3, now
    monkeypatch.setattr(recorder, "utcnow", old)
    await api.key(skewed, ["audit:read"])  # seq 4, stamped old by a slow clock
    monkeypatch.undo()

    async with sessionmaker() as session, session.begin():
        purged = await purge_once(session)
    assert purged.get(healthy.id) == 2
    assert skewed.id not in purged
    # The refused tenant keeps its whole chain, still intact; the other verifies after its purge.
    assert [e["seq"] for e in await events(api, skewed.id)] == [4, 3, 2, 1]
    assert (await verify(api, skewed.id))["valid"] is True
    assert (await verify(api, healthy.id))["anchored_after_purge"] is True


def _plain_sha256(row: dict[str, Any], chain: str, prev_hash: str) -> str:
    """An event's hash as anyone can compute it without the server's audit key."""
    import hashlib
    import json

    ts = datetime.fromisoformat(row["ts"])
    micros = (ts - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)
    fields = [
        chain,
        row["seq"],
        micros,
        row["actor"],
        row["action"],
        row["target"],
        row["request_id"],
        row["client"],
        row["outcome"],
        row["details"],
        prev_hash,
    ]
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(canonical.encode()).hexdigest()


@postgres_only
async def test_history_rewritten_and_chained_again_without_the_key_is_caught(
    api: Api, raw: AsyncEngine
) -> None:
    """Someone with the database credentials, but not the audit key, changes an event and
    recomputes every hash after it up to the head: the event they changed no longer checks."""
    tenant = await tenant_with_events(api, extra_keys=3)  # seq 1..5
    chain = sorted(await events(api, tenant.id), key=lambda e: e["seq"])
    prev = chain[0]["hash"]
    async with raw.begin() as conn:
        await conn.execute(text("SET LOCAL session_replication_role = replica"))
        for row in chain[1:]:
            if row["seq"] == 2:
                row = {**row, "outcome": "denied"}
            forged = _plain_sha256(row, tenant.id, prev)
            await conn.execute(
                text(
                    "UPDATE audit_events SET outcome = :o, prev_hash = :p, hash = :h "
                    "WHERE chain = :c AND seq = :s"
                ),
                {"o": row["outcome"], "p": prev, "h": forged, "c": tenant.id, "s": row["seq"]},
            )
            prev = forged
        await conn.execute(
            text("UPDATE audit_chain_heads SET hash = :h WHERE chain = :c"),
            {"h": prev, "c": tenant.id},
        )
    result = await verify(api, tenant.id, full=True)
    assert result["valid"] is False, result
    assert result["broken"]["seq"] == 2
    assert result["broken"]["reason"] == "event content does not match its hash"


@pytest.mark.sqlite
async def test_a_verify_checks_what_is_new_since_the_last_verified_point(api: Api) -> None:
    tenant = await tenant_with_events(api, extra_keys=2)  # seq 1..4
    first = await verify(api, tenant.id)
    assert (first["valid"], first["events_checked"], first["checked_from_seq"]) == (True, 4, None)

    again = await verify(api, tenant.id)
    assert (again["valid"], again["events_checked"], again["checked_from_seq"]) == (True, 0, 4)

    await api.key(tenant, ["audit:read"])
    await api.key(tenant, ["audit:read"])  # seq 5, 6
    later = await verify(api, tenant.id)
    assert later["valid"] is True
    assert (later["events_checked"], later["checked_from_seq"], later["last_seq"]) == (2, 4, 6)

    whole = await verify(api, tenant.id, full=True)
    assert (whole["valid"], whole["events_checked"], whole["checked_from_seq"]) == (True, 6, None)


@postgres_only
async def test_a_moved_verified_point_is_reported(api: Api, raw: AsyncEngine) -> None:
    """Moving the verified point (to skip checking what follows it) breaks its MAC."""
    tenant = await tenant_with_events(api, extra_keys=2)
    assert (await verify(api, tenant.id))["valid"] is True
    await tamper(
        raw,
        "UPDATE audit_chain_heads SET keyed_from_seq = 100 WHERE chain = :c",
        c=tenant.id,
    )
    result = await verify(api, tenant.id)
    assert result["valid"] is False
    assert result["broken"]["reason"] == "the chain's last verified point was altered"

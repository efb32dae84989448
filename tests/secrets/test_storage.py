"""How values are kept: sealed with AES-GCM under a key in the state dir, bound to their
tenant and name, and absent from every other place the service writes."""

from __future__ import annotations

import logging
import stat

import pytest
from litestar.testing import AsyncTestClient
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import select, text, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.app import create_app
from service.db.models import TenantSecret
from service.secrets.crypto import KEY_FILE, SecretBox, Undecryptable
from service.secrets.service import reveal
from service.settings import Settings
from tests.conftest import Api, Tenant
from tests.secrets.conftest import PutSecret, secret_value

pytestmark = pytest.mark.sqlite
Db = async_sessionmaker[AsyncSession]
# Where the secrets of these tests may be sent.
HOSTS = ["git.example.com"]
URL = "https://git.example.com/acme/private.git"


async def stored(db: Db, tenant: Tenant, name: str) -> TenantSecret:
    async with db() as session:
        row = await session.scalar(
            select(TenantSecret).where(
                TenantSecret.tenant_id == tenant.id, TenantSecret.name == name
            )
        )
        assert row is not None
        return row


async def test_the_stored_row_is_ciphertext(
    api: Api, tenant: Tenant, put: PutSecret, sessionmaker: Db, settings: Settings
) -> None:
    value = secret_value()
    await put(tenant, "token", value, allowed_hosts=HOSTS)
    async with sessionmaker() as session:
        rows = (await session.execute(text("SELECT * FROM tenant_secrets"))).all()
    dump = repr(rows).encode()
    assert value.encode() not in dump
    for row in rows:
        for column in row:
            if isinstance(column, bytes | memoryview):
                assert value.encode() not in bytes(column)
    row = await stored(sessionmaker, tenant, "token")
    assert len(row.nonce) == 12
    # AES-GCM: the plaintext's length plus a 16-byte tag.
    assert len(row.ciphertext) == len(value.encode()) + 16
    async with sessionmaker() as session:
        key_file = settings.secrets_key_path
        assert await reveal(session, key_file, tenant.id, "token", url=URL) == value
    # Replacing seals again with a fresh nonce.
    await put(tenant, "token", value, allowed_hosts=HOSTS)
    assert (await stored(sessionmaker, tenant, "token")).nonce != row.nonce


async def test_the_key_is_a_private_file_in_the_state_dir(
    api: Api, tenant: Tenant, put: PutSecret, settings: Settings
) -> None:
    await put(tenant, "token", secret_value(), allowed_hosts=HOSTS)
    path = settings.state_dir / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len(path.read_bytes()) == 32


async def test_a_row_moved_to_another_tenant_does_not_decrypt(
    api: Api, tenant: Tenant, put: PutSecret, sessionmaker: Db, settings: Settings
) -> None:
    other = await api.tenant()
    await put(tenant, "token", secret_value(), allowed_hosts=HOSTS)
    await put(other, "token", secret_value(), allowed_hosts=HOSTS)
    mine = await stored(sessionmaker, tenant, "token")
    async with sessionmaker() as session, session.begin():
        # Copy this tenant's sealed value over the other tenant's row of the same name.
        await session.execute(
            update(TenantSecret)
            .where(TenantSecret.tenant_id == other.id, TenantSecret.name == "token")
            .values(nonce=mine.nonce, ciphertext=mine.ciphertext)
        )
    async with sessionmaker() as session:
        with pytest.raises(Undecryptable):
            await reveal(session, settings.secrets_key_path, other.id, "token", url=URL)


async def test_a_renamed_row_does_not_decrypt(
    api: Api, tenant: Tenant, put: PutSecret, sessionmaker: Db, settings: Settings
) -> None:
    await put(tenant, "prod", secret_value(), allowed_hosts=HOSTS)
    async with sessionmaker() as session, session.begin():
        await session.execute(
            update(TenantSecret)
            .where(TenantSecret.tenant_id == tenant.id, TenantSecret.name == "prod")
            .values(name="staging")
        )
    async with sessionmaker() as session:
        with pytest.raises(Undecryptable):
            await reveal(session, settings.secrets_key_path, tenant.id, "staging", url=URL)
        assert await reveal(session, settings.secrets_key_path, tenant.id, "prod", url=URL) is None


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record) + repr(record.args))


async def test_values_stay_out_of_logs_and_traces(
    settings: Settings, tenant: Tenant, capfd: pytest.CaptureFixture[str]
) -> None:
    exporter = InMemorySpanExporter()
    value = secret_value()
    app = create_app(settings, run_jobs=False, span_processor=SimpleSpanProcessor(exporter))
    collect = Collect()
    root = logging.getLogger()
    level = root.level
    async with AsyncTestClient(app=app) as client:
        # After start-up, which configures logging: every record from here on, at any level.
        root.addHandler(collect)
        root.setLevel(logging.DEBUG)
        try:
            for body in ({"value": value}, {"value": value, "x": 1}, {"value": value * 3000}):
                await client.put("/v1/secrets/traced", json=body, headers=tenant.headers)
            await client.get("/v1/secrets", headers=tenant.headers)
            await client.delete("/v1/secrets/traced", headers=tenant.headers)
        finally:
            root.removeHandler(collect)
            root.setLevel(level)
    spans = exporter.get_finished_spans()
    assert spans
    for span in spans:
        recorded = repr(dict(span.attributes or {})) + repr([e.attributes for e in span.events])
        assert value not in recorded
    assert any("/v1/secrets/traced" in line for line in collect.lines)
    assert all(value not in line for line in collect.lines)
    out, err = capfd.readouterr()
    assert value not in out and value not in err


def test_a_value_sealed_under_another_key_says_so() -> None:
    ours, theirs = SecretBox(b"\x01" * 32), SecretBox(b"\x02" * 32)
    sealed = theirs.seal("ten_a", "token", "value")
    with pytest.raises(Undecryptable, match="another key"):
        ours.open("ten_a", "token", sealed)
    assert theirs.open("ten_a", "token", sealed) == "value"

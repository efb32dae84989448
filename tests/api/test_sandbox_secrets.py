"""The secret values a sandbox's execs were given: held per tenant and sandbox, bounded, and
dropped once the sandbox has ended (the sweep reads the sandboxes' states from the database);
kept sealed in the database, so a new process (a restart, another node) masks them too."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.db import models
from service.db.base import utcnow
from service.execs.masking import Masker
from service.execs.records import ExecRecords
from service.execs.sandbox_secrets import (
    MAX_VALUES,
    SandboxSecrets,
    SandboxSecretsFull,
    SandboxSecretsUnreadable,
)
from tests.conftest import SandboxRecorder, Tenant

pytestmark = pytest.mark.sqlite

Db = async_sessionmaker[AsyncSession]


async def given(held: SandboxSecrets, tenant_id: str, sandbox_id: str, values: list[str]) -> None:
    """What an exec's start does with its secret values: sealed rows written, then held."""
    await held.load(tenant_id, sandbox_id)
    rows = held.sealed(tenant_id, sandbox_id, values, utcnow())
    async with ExecRecords(held.db.kw["bind"]).unit() as tx, tx.atomic(bool(rows)):
        await tx.insert_secret_values(rows)
    held.add(tenant_id, sandbox_id, values)


async def set_runtime(db: Db, sandbox_id: str, runtime_id: str) -> None:
    async with db() as session, session.begin():
        await session.execute(
            update(models.Sandbox)
            .where(models.Sandbox.id == sandbox_id)
            .values(state="running", runtime_id=runtime_id)
        )


async def kept(db: Db, sandbox_id: str) -> list[models.SandboxSecretValue]:
    async with db() as session:
        return list(
            await session.scalars(
                select(models.SandboxSecretValue).where(
                    models.SandboxSecretValue.sandbox_id == sandbox_id
                )
            )
        )


async def test_a_value_given_to_one_exec_is_masked_by_a_masker_started_before_it(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    held = SandboxSecrets(sessionmaker)
    earlier = Masker(held.add("ten_a", "sbx_1", []))
    held.add("ten_a", "sbx_1", ["s3cret-value"])
    assert earlier.feed(b"env: s3cret-value, s3cr") + earlier.flush(cut=True) == b"env: ***, ***"
    # Another tenant naming the same sandbox id shares nothing with it.
    assert len(held.known("ten_b", "sbx_1")) == 0


async def test_values_past_a_sandboxs_limit_are_refused(
    sessionmaker: async_sessionmaker[AsyncSession],
) -> None:
    held = SandboxSecrets(sessionmaker)
    held.add("ten_a", "sbx_1", [f"value-{n:04d}" for n in range(MAX_VALUES)])
    held.check("ten_a", "sbx_1", ["value-0000"])  # known already: nothing new
    with pytest.raises(SandboxSecretsFull) as full:
        held.check("ten_a", "sbx_1", ["one-more"])
    assert (full.value.status, full.value.code) == (409, "sandbox_secrets_full")
    held.check("ten_a", "sbx_2", ["one-more"])


async def test_the_values_of_ended_sandboxes_are_dropped(
    sessionmaker: async_sessionmaker[AsyncSession],
    sandbox_record: SandboxRecorder,
    tenant: Tenant,
) -> None:
    ended, running = await sandbox_record(tenant), await sandbox_record(tenant)
    async with sessionmaker() as session, session.begin():
        await session.execute(
            update(models.Sandbox).where(models.Sandbox.id == running).values(state="running")
        )
    held = SandboxSecrets(sessionmaker)
    for sandbox_id in (ended, running):
        held.add(tenant.id, sandbox_id, ["s3cret-value"])
    held.add("ten_other", running, ["s3cret-value"])  # not that tenant's sandbox
    await held._drop_ended()
    assert len(held.known(tenant.id, running)) == 1
    assert len(held.known(tenant.id, ended)) == 0
    assert len(held.known("ten_other", running)) == 0


async def test_a_new_process_masks_what_an_earlier_one_was_given(
    sessionmaker: Db, sandbox_record: SandboxRecorder, tenant: Tenant, tmp_path: Path
) -> None:
    key = tmp_path / "secrets.key"
    box = await sandbox_record(tenant)
    await given(SandboxSecrets(sessionmaker, key), tenant.id, box, ["s3cret-value", "other-one"])

    after = SandboxSecrets(sessionmaker, key)  # the node's process, restarted
    assert set((await after.load(tenant.id, box)).ordered) == {b"s3cret-value", b"other-one"}
    assert len(await after.load("ten_other", box)) == 0  # another tenant naming it: nothing
    rows = await kept(sessionmaker, box)
    assert len(rows) == 2
    assert not [r for r in rows if b"s3cret" in r.ciphertext or b"other-one" in r.ciphertext]


async def test_the_limits_count_the_values_kept(
    sessionmaker: Db, sandbox_record: SandboxRecorder, tenant: Tenant, tmp_path: Path
) -> None:
    key = tmp_path / "secrets.key"
    box = await sandbox_record(tenant)
    values = [f"value-{n:04d}" for n in range(MAX_VALUES)]
    await given(SandboxSecrets(sessionmaker, key), tenant.id, box, values)
    after = SandboxSecrets(sessionmaker, key)
    await after.load(tenant.id, box)
    after.check(tenant.id, box, ["value-0000"])
    with pytest.raises(SandboxSecretsFull):
        after.check(tenant.id, box, ["one-more"])


async def test_a_sandbox_without_values_is_read_once_and_again_after_it_moved(
    sessionmaker: Db, sandbox_record: SandboxRecorder, tenant: Tenant, tmp_path: Path
) -> None:
    key = tmp_path / "secrets.key"
    box = await sandbox_record(tenant)
    await set_runtime(sessionmaker, box, "rt-here")
    here = SandboxSecrets(sessionmaker, key)
    assert len(await here.load(tenant.id, box)) == 0
    # Paused, resumed on another node, given a value there, and back here under a new runtime id.
    await given(SandboxSecrets(sessionmaker, key), tenant.id, box, ["from-elsewhere"])
    assert len(await here.load(tenant.id, box)) == 0  # "none" is remembered: no read
    await here.settle(tenant.id, box, "rt-here")
    assert len(here.known(tenant.id, box)) == 0
    await here.settle(tenant.id, box, "rt-back-here")
    assert here.known(tenant.id, box).ordered == (b"from-elsewhere",)


async def test_a_row_that_does_not_open_refuses_the_sandboxs_execs(
    sessionmaker: Db, sandbox_record: SandboxRecorder, tenant: Tenant, tmp_path: Path
) -> None:
    first, other = await sandbox_record(tenant), await sandbox_record(tenant)
    await given(SandboxSecrets(sessionmaker, tmp_path / "a.key"), tenant.id, first, ["s3cret"])
    with pytest.raises(SandboxSecretsUnreadable):  # the deployment's key changed
        await SandboxSecrets(sessionmaker, tmp_path / "b.key").load(tenant.id, first)
    async with sessionmaker() as session, session.begin():  # a row moved to another sandbox
        await session.execute(
            update(models.SandboxSecretValue)
            .where(models.SandboxSecretValue.sandbox_id == first)
            .values(sandbox_id=other)
        )
    with pytest.raises(SandboxSecretsUnreadable):
        await SandboxSecrets(sessionmaker, tmp_path / "a.key").load(tenant.id, other)

"""The secret values a sandbox's execs were given: held per tenant and sandbox, bounded, and
dropped once the sandbox has ended (the sweep reads the sandboxes' states from the database)."""

from __future__ import annotations

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.db import models
from service.execs.masking import Masker
from service.execs.sandbox_secrets import MAX_VALUES, SandboxSecrets, SandboxSecretsFull
from tests.conftest import SandboxRecorder, Tenant


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

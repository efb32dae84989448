"""Concurrent writers extend one tenant's audit chain without forks, gaps or errors."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.audit.recorder import AuditContext, record
from service.audit.service import verify_chain
from tests.conftest import Api

pytestmark = pytest.mark.sqlite


async def test_concurrent_appends_keep_one_chain(
    api: Api, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    tenant = await api.tenant()
    ctx = AuditContext(actor="test", request_id=None, client=None)

    async def append(n: int) -> None:
        async with sessionmaker() as session, session.begin():
            # Read first, then write: the pattern that races when transactions start deferred.
            await verify_chain(session, tenant.id)
            await record(session, ctx, chain=tenant.id, action="test.append", target=str(n))

    await asyncio.gather(*[append(n) for n in range(30)])
    async with sessionmaker() as session:
        result = await verify_chain(session, tenant.id, full=True)
    assert result.valid, result.broken
    assert result.events_checked == 2 + 30

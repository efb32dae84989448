"""A sandbox made through the API records the node that runs it (this host's)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from service.db.models import Sandbox
from service.nodes.local import local_node_id
from tests.conftest import Api
from tests.files.conftest import Box


async def test_a_created_sandbox_records_its_node(
    files_api: Api, box: Box, sessionmaker: async_sessionmaker[AsyncSession]
) -> None:
    async with sessionmaker() as session:
        node_id = await session.scalar(select(Sandbox.node_id).where(Sandbox.id == box.id))
    assert node_id == local_node_id(files_api.settings)

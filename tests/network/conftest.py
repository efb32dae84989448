"""The end-to-end server fixtures (a real `airlock serve` on gVisor and PostgreSQL), started only
by the tests that ask for them; the sandboxes such a test made are deleted after it (they hold
host memory the server admits new ones against), and any left at the end go with the server."""

import contextlib
from collections.abc import AsyncIterator

import pytest
from airlock_client.api.sandboxes import delete_sandbox

from tests.e2e.conftest import airlock, e2e_state  # noqa: F401 (fixtures)


@pytest.fixture(autouse=True)
async def _delete_sandboxes(request: pytest.FixtureRequest) -> AsyncIterator[None]:
    if "airlock" not in request.fixturenames:
        yield
        return
    server = request.getfixturevalue("airlock")
    known = len(server.tenants)
    yield
    for tenant in server.tenants[known:]:
        for sandbox_id in tenant.sandboxes:
            with contextlib.suppress(Exception):
                await delete_sandbox.asyncio_detailed(sandbox_id, client=tenant.client)

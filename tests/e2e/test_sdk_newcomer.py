"""What a newcomer meets first, through `sbx` and the SDK against a real server."""

from __future__ import annotations

import asyncio

import pytest
from airlock_sdk import Sandbox, errors

from tests.e2e.conftest import REPO, Airlock, Tenant
from tests.e2e.test_sbx import bash

CLIENT_README = REPO / "clients/python/README.md"
MAIN_README = REPO / "README.md"


async def test_a_refused_value_is_named_with_its_rule(airlock: Airlock, tenant: Tenant) -> None:
    sandbox = await airlock.sandbox(tenant)
    done = await bash(
        'sbx new --ttl 99999999; echo "new=$?"\n'
        f'sbx exec {sandbox.id} --timeout 100000 -- true; echo "exec=$?"\n',
        airlock,
        tenant,
    )
    assert "new=1" in done.stdout and "exec=1" in done.stdout, done.stdout
    assert "ttl_s: must be at most 2592000" in done.stderr, done.stderr
    assert "timeout_s: must be at most 86400" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr

    def create_huge() -> Sandbox:
        return Sandbox.create(url=airlock.server.url, api_key=tenant.key, size="huge")

    with pytest.raises(errors.ValidationFailed) as refused:
        await asyncio.to_thread(create_huge)
    assert [(e.field, e.source) for e in refused.value.errors] == [("size", "body")]
    assert "; size: " in str(refused.value), str(refused.value)

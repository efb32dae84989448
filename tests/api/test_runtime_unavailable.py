"""A host where no sandbox runtime works answers sandbox calls with one problem: 503
`runtime_unavailable` with the holder's Retry-After, the same whether the runtime failed to
open just now or the holder remembers the failure. The diagnosis is the operator's, in the log."""

from __future__ import annotations

from pathlib import Path

import msgspec
import pytest
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.runtime.holder import RETRY_S
from service.settings import Settings
from tests.api.test_errors import assert_problem
from tests.conftest import Api


async def test_no_runtime_is_one_problem(
    settings: Settings, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # BoxLite really refuses this host: its state dir has no image to boot a probe VM from.
    bare = msgspec.structs.replace(settings, state_dir=tmp_path, runtime="boxlite")
    app = create_app(bare, run_jobs=False)
    async with AsyncTestClient(app=app) as client:
        tenant = await Api(client=client, settings=bare).tenant()
        for attempt in ("opening", "remembered"):
            r = await client.post("/v1/sandboxes", json={"ttl_s": 60}, headers=tenant.headers)
            problem = assert_problem(r, 503, "runtime_unavailable")
            assert r.headers["Retry-After"] == str(int(RETRY_S)), attempt
            assert problem["runtime"] == "boxlite"
            assert "image" not in problem["detail"], attempt  # the host's story stays in the log
    assert "no default image" in caplog.text

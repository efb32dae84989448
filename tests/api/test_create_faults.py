"""A fault of the host while a sandbox starts (here the EBADF a double-closed descriptor gave a
network setup) answers 500 with the request id, and leaves the sandbox's record `failed`
with the reason: never a record `starting` for ever, which its tenant could neither use nor
get counted right against its quota."""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import msgspec
from litestar.testing import AsyncTestClient

from service.app import create_app
from service.runtime.gvisor import GVisorRuntime
from service.settings import Settings
from tests.api.test_errors import assert_problem
from tests.conftest import Api

REPO = Path(__file__).resolve().parents[2]


class FaultyCreate:
    """The real gVisor runtime, whose `create` fails the way a host fault does."""

    def __init__(self, real: GVisorRuntime) -> None:
        self._real = real

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    async def create(self, image: str, spec: Any) -> Any:
        raise OSError(errno.EBADF, "Bad file descriptor")


async def test_a_host_fault_while_starting_leaves_a_failed_record(
    settings: Settings, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    (state / "images").symlink_to(REPO / ".airlock" / "images")
    real = await GVisorRuntime.open(state)
    bare = msgspec.structs.replace(settings, state_dir=state)
    app = create_app(bare, run_jobs=False, runtime=FaultyCreate(real))  # type: ignore[arg-type]
    try:
        async with AsyncTestClient(app=app) as client:
            tenant = await Api(client=client, settings=bare).tenant()
            r = await client.post("/v1/sandboxes", json={"ttl_s": 60}, headers=tenant.headers)
            problem = assert_problem(r, 500, "internal_error")
            assert "Bad file descriptor" not in problem["detail"]  # the host's story is logged
            listed = (await client.get("/v1/sandboxes", headers=tenant.headers)).json()["items"]
            assert [(s["state"], s["failure_reason"]) for s in listed] == [
                ("failed", "create failed: internal error (OSError)")
            ], listed
    finally:
        await real.close()

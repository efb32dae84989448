"""A build cut off by a restart is built again, from the start, and nothing of it leaks."""

from __future__ import annotations

import pytest

from service.runtime.gvisor import GVisorRuntime, destroy_left
from tests.conftest import Api

from .conftest import eventually, new_state, serve, unique


async def newest(api: Api, name: str) -> dict[str, object]:
    r = await api.client.get(f"/v1/templates/{name}", headers=api.operator)
    assert r.status_code == 200, r.text
    return dict(r.json()["versions"][0])


async def test_a_build_cut_off_by_a_restart_is_resumed(
    tmp_path_factory: pytest.TempPathFactory, own_database: str
) -> None:
    state = new_state(tmp_path_factory, "templates-restart")
    name = unique("slow")
    try:
        async with serve(state, own_database) as api:
            r = await api.client.post(
                "/v1/templates",
                json={"name": name, "setup": [["sleep", "2"], ["echo", "done"]]},
                headers=api.operator,
            )
            assert r.status_code == 202, r.text

            async def building() -> bool:
                return (await newest(api, name))["state"] == "building"

            await eventually(building)
        # the service stopped mid-build: the build sandbox is gone with it
        async with serve(state, own_database) as api:

            async def finished() -> dict[str, object] | None:
                version = await newest(api, name)
                return version if version["state"] in ("ready", "failed") else None

            version = await eventually(finished)
            assert version["state"] == "ready", version
            assert "done" in str(version["build_log"])
            runtime = await GVisorRuntime.open(state)
            try:
                assert await runtime.list_sandboxes() == []  # no build sandbox left behind
                assert len(await runtime.list_snapshots()) == 1
            finally:
                await runtime.close()
    finally:
        await destroy_left(state, snapshots=True, strict=True)

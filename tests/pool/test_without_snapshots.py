"""Where templates cannot be snapshotted, the pool keeps members pre-started from the image."""

from __future__ import annotations

import pytest

from service.runtime.gvisor import destroy_left
from tests.templates.conftest import (
    BIG_QUOTAS,
    PROBE,
    build_template,
    delete_sandbox,
    new_state,
    run,
    serve,
    unique,
)

from .conftest import pool_status, set_target, wait_ready


async def test_pool_members_start_from_the_image_when_snapshots_are_off(
    tmp_path_factory: pytest.TempPathFactory, own_database: str
) -> None:
    state = new_state(tmp_path_factory, "pool-nosnap")
    try:
        async with serve(state, own_database, template_snapshots="off") as api:
            name = unique("nosnap")
            built = await build_template(api, api.operator, name)
            assert built["state"] == "ready" and built["snapshot_bytes"] is None
            assert built["versions"][0]["start_mode"] == "image"
            await set_target(api, name, 2)
            await wait_ready(api, name, 2)
            overview = (await api.client.get("/v1/pool", headers=api.operator)).json()
            assert overview["snapshots"] == "disabled" and "image" in overview["note"]
            assert (await pool_status(api, name))["mode"] == "image"

            tenant = await api.tenant(**BIG_QUOTAS)
            boxes = []
            for expected in ("pool", "pool", "image"):
                r = await api.client.post(
                    "/v1/sandboxes", json={"template": name}, headers=tenant.headers
                )
                assert r.status_code == 201, r.text
                assert r.json()["started_from"] == expected
                boxes.append(r.json()["id"])
                if expected == "pool":
                    await wait_ready(api, name, 2)  # refilled before the next one
            # fair share of one tenant is the whole target per minute: the third is cold,
            # from the image with the setup run (once) in that sandbox
            for box in boxes:
                assert (await run(api, tenant, box, PROBE))["stdout"] == "42\n"
                runs = await run(api, tenant, box, ["cat", "/home/sandbox/setup-runs"])
                assert runs["stdout"] == "run\n"
                await delete_sandbox(api, tenant, box)
    finally:
        await destroy_left(state, snapshots=True, strict=True)

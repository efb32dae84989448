"""`AIRLOCK_POOL_TARGETS` seeds pools of operator templates; a PUT then wins."""

from __future__ import annotations

import pytest

from service.pool.service import parse_targets
from service.runtime.gvisor import destroy_left
from tests.templates.conftest import build_template, new_state, serve

from .conftest import pool_status, set_target, wait_ready


def test_targets_setting_is_parsed() -> None:
    assert parse_targets("py:small=3, web=2,") == [("py", "small", 3), ("web", "small", 2)]


async def test_a_target_from_the_settings_fills_once_the_template_exists(
    tmp_path_factory: pytest.TempPathFactory, own_database: str
) -> None:
    state = new_state(tmp_path_factory, "pool-settings")
    try:
        async with serve(state, own_database, pool_targets="seeded:small=2") as api:
            await build_template(api, api.operator, "seeded", setup=[["true"]])
            assert (await wait_ready(api, "seeded", 2))["target"] == 2
            await set_target(api, "seeded", 1)
            await wait_ready(api, "seeded", 1)
            assert (await pool_status(api, "seeded"))["target"] == 1  # the PUT is kept
    finally:
        await destroy_left(state, snapshots=True, strict=True)

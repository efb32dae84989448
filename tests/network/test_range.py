"""The address range of sandbox networks is a setting the runtime takes."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import pytest

from service.runtime import RuntimeUnavailable
from service.runtime.gvisor import GVisorRuntime
from service.settings import Settings


async def test_the_sandbox_network_range_setting_reaches_the_runtime(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"AIRLOCK_STATE_DIR": str(tmp_path), "AIRLOCK_SANDBOX_NETWORK_RANGE": "10.232.16.0/24"}
    )
    try:
        runtime = await GVisorRuntime.from_settings(settings)
    except RuntimeUnavailable as exc:
        pytest.skip(f"gVisor is not usable here: {exc}")
    try:
        assert runtime.networks.range == ipaddress.IPv4Network("10.232.16.0/24")
    finally:
        await runtime.close()

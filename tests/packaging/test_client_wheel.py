"""The client's wheel installs from the file, with its extras, into an empty virtualenv, and
what each extra brings imports there."""

from __future__ import annotations

import pytest

from .conftest import Wheels, new_venv


def test_the_wheel_carries_the_sdk(wheels: Wheels) -> None:
    names = wheels.names(wheels.client)
    assert "airlock_client/py.typed" in names
    assert "airlock_sdk/cli/__init__.py" in names
    # The Agents SDK client is a distribution of its own (test_agents_wheel.py).
    assert not any(n.startswith("airlock_sdk/agents/") for n in names)


@pytest.mark.parametrize("extras", ["", "[mcp]"])
def test_installs_from_the_wheel_file_with_its_extras(
    wheels: Wheels, extras: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    venv = new_venv(tmp_path_factory.mktemp("client-venv") / "venv")
    venv.pip("install", "-q", f"{wheels.client}{extras}")
    venv.pip("check")
    modules = {
        "": "airlock_client, airlock_sdk, airlock_sdk.cli",
        "[mcp]": "airlock_sdk.mcp, mcp",
    }[extras]
    venv.run(venv.bin("python"), "-c", f"import {modules}")
    assert "Usage: sbx" in venv.run(venv.bin("sbx"), "--help")

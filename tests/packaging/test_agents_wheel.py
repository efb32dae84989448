"""airlock-agents, the OpenAI Agents SDK's client (clients/agents), is a wheel of its own: it
installs beside the client's wheel into an empty virtualenv, its requirements are met there
(`pip check`), and `airlock_agents` imports with the SDK version it is pinned to."""

from __future__ import annotations

import pytest

from .conftest import Wheels, new_venv


def test_the_wheel_carries_only_the_agents_client(wheels: Wheels) -> None:
    names = wheels.names(wheels.agents)
    assert {"airlock_agents/__init__.py", "airlock_agents/session.py"} <= names
    assert not any(n.startswith(("airlock_sdk/", "airlock_client/")) for n in names)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    assert "airlock_agents-0.1.0.dist-info/" in metadata


def test_installs_from_the_wheel_files_beside_the_client(
    wheels: Wheels, tmp_path_factory: pytest.TempPathFactory
) -> None:
    venv = new_venv(tmp_path_factory.mktemp("agents-venv") / "venv")
    venv.pip("install", "-q", str(wheels.client), str(wheels.agents))
    venv.pip("check")
    shown = venv.pip("show", "airlock-agents")
    assert "Requires: airlock-client, httpx, openai-agents, pydantic" in shown, shown
    version = "import agents, airlock_agents; print(agents.__version__, airlock_agents.__name__)"
    assert venv.run(venv.bin("python"), "-c", version).split() == ["0.24.0", "airlock_agents"]
    # Without the client's wheel, pip names the requirement it cannot meet.
    bare = new_venv(tmp_path_factory.mktemp("agents-alone") / "venv")
    with pytest.raises(AssertionError, match="airlock-client"):
        bare.pip("install", "-q", "--no-index", str(wheels.agents))

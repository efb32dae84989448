"""Every `pip install` line of the client's README works as written, from where it says to run
it: a clone holding the client's sources and, after `make wheels`, its wheel in dist/."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from .conftest import REPO, Wheels, new_venv

README = REPO / "clients/python/README.md"
CLIENT_FILES = shutil.ignore_patterns("build", "*.egg-info", "__pycache__", ".ruff_cache")


def install_lines() -> list[str]:
    """Each `pip install …` of the README, in a shell block or in backticks, without comments."""
    text = README.read_text()
    lines = [line.partition(" #")[0].strip() for line in text.splitlines()]
    found = [line for line in lines if line.startswith("pip install ")]
    return found + re.findall(r"`(pip install [^`]+)`", text)


def test_the_readme_says_it_is_not_on_pypi() -> None:
    assert "not published on PyPI" in README.read_text()


def test_every_install_line_of_the_readme_works_from_the_clone(
    wheels: Wheels, tmp_path_factory: pytest.TempPathFactory
) -> None:
    lines = install_lines()
    assert any("[mcp" in line for line in lines) and any("agents" in line for line in lines)
    assert any(".whl" in line for line in lines) and any("clients/python" in line for line in lines)
    clone = tmp_path_factory.mktemp("clone")
    for client in ("python", "agents"):
        shutil.copytree(REPO / "clients" / client, clone / "clients" / client, ignore=CLIENT_FILES)
    (clone / "dist").mkdir()
    for wheel in (wheels.client, wheels.agents):  # what `make wheels` leaves there
        shutil.copy(wheel, clone / "dist")
    # One virtualenv for them all: the first brings the dependencies, the rest reinstall the
    # client from where each line takes it, with its extras resolved again.
    venv = new_venv(tmp_path_factory.mktemp("readme-venv") / "venv")
    for line in lines:
        done = subprocess.run(
            ["bash", "-c", f"set -euo pipefail; {line} -q"],
            cwd=clone,
            env=venv.env(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert done.returncode == 0, f"{line!r} exited {done.returncode}:\n{done.stderr}"
    venv.pip("check")
    venv.run(venv.bin("python"), "-c", "import airlock_sdk.cli, airlock_sdk.mcp, airlock_agents")
    assert "login" in venv.run(venv.bin("sbx"), "--help")

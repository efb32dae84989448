"""Wheels built once per session by `scripts/build-wheels.sh` (the `wheels` fixture, which
tests/conftest.py offers to every suite: the packaging tests and the client README's walk share
one build), and empty virtualenvs to install them into, as someone who has only the wheel files
would.

Installs go through pip with its usual cache (`~/.cache/pip`): the first run downloads the
dependencies from PyPI, later runs install them from the cache.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Wheels:
    service: Path
    client: Path
    agents: Path

    def names(self, wheel: Path) -> set[str]:
        with zipfile.ZipFile(wheel) as archive:
            return set(archive.namelist())


@dataclass(frozen=True)
class Venv:
    """A virtualenv that has only what was installed into it (no access to the clone's)."""

    path: Path

    def bin(self, name: str) -> str:
        return str(self.path / "bin" / name)

    def env(self, **extra: str) -> dict[str, str]:
        # Nothing of the calling environment that could make the clone importable.
        path = os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")
        return {
            "PATH": f"{self.path / 'bin'}:{path}",
            "HOME": os.environ.get("HOME", "/root"),
            "LANG": "C.UTF-8",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            **extra,
        }

    def run(self, *argv: str, cwd: Path | None = None, **env: str) -> str:
        done = checked(list(argv), cwd=cwd or self.path, env=self.env(**env), timeout=900)
        return done.stdout + done.stderr

    def pip(self, *args: str) -> str:
        return self.run(self.bin("python"), "-m", "pip", *args)


def checked(
    argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float, what: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`argv` run to its end with no input, its output captured; it must exit 0 (the failure
    names `what` it ran, the command line unless said)."""
    done = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, (
        f"{what or argv} exited {done.returncode}:\n{done.stdout}{done.stderr}"
    )
    return done


def new_venv(path: Path) -> Venv:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    return Venv(path)


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Wheels:
    out = tmp_path_factory.mktemp("wheels")
    subprocess.run(
        [str(REPO / "scripts/build-wheels.sh"), str(out)],
        check=True,
        capture_output=True,
        timeout=900,
    )
    (service,) = out.glob("airlock-*.whl")
    (client,) = out.glob("airlock_client-*.whl")
    (agents,) = out.glob("airlock_agents-*.whl")
    return Wheels(service=service, client=client, agents=agents)

"""scripts/runtime-setup.sh on Debian bookworm: a runsc without systrap gets the one from
bookworm-backports, the suite added to apt's sources (deb822, the host mirror and keyring)
when missing. Run with --dry-run, so nothing is written or installed."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from service.runtime import apt

from .conftest import REPO

BOOKWORM = """Types: deb
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/example.gpg
"""


def fake_runsc(bin_dir: Path, platforms: str) -> None:
    bin_dir.mkdir()
    script = bin_dir / "runsc"
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        '  flags) echo "    specifies which platform to use: ' + platforms + '.";;\n'
        '  --version) echo "runsc version 0.0~20221219.0";;\n'
        "esac\n"
    )
    script.chmod(0o755)


def dry_run(tmp_path: Path, platforms: str, sources: str) -> str:
    if "bookworm" not in Path("/etc/os-release").read_text():
        pytest.skip("the backports route is for Debian bookworm hosts")
    apt_dir = tmp_path / "apt"
    (apt_dir / "sources.list.d").mkdir(parents=True)
    (apt_dir / "sources.list.d" / "debian.sources").write_text(sources)
    fake_runsc(tmp_path / "bin", platforms)
    env = {
        **os.environ,
        "PATH": f"{tmp_path / 'bin'}:{os.environ['PATH']}",
        "AIRLOCK_APT_DIR": str(apt_dir),
    }
    done = subprocess.run(
        [str(REPO / "scripts/runtime-setup.sh"), "--dry-run"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert list((apt_dir / "sources.list.d").iterdir()) == [
        apt_dir / "sources.list.d" / "debian.sources"
    ]  # a dry run writes nothing
    return done.stderr


def test_a_runsc_without_systrap_gets_backports_added_and_installed(tmp_path: Path) -> None:
    said = dry_run(tmp_path, "ptrace (default), kvm", BOOKWORM)
    assert "has no systrap" in said
    wanted = tmp_path / "apt/sources.list.d/debian-backports.sources"
    assert f"would write {wanted}:" in said
    assert "URIs: http://mirror.example/debian\nSuites: bookworm-backports\n" in said
    assert "Signed-By: /usr/share/keyrings/example.gpg" in said
    assert "apt-get install -y -q --no-install-recommends -t bookworm-backports runsc" in said


def test_backports_already_in_the_sources_is_not_added_again(tmp_path: Path) -> None:
    said = dry_run(tmp_path, "ptrace (default), kvm", BOOKWORM.replace("updates", "backports"))
    assert "would write" not in said
    assert "-t bookworm-backports runsc" in said


def test_a_runsc_with_systrap_is_left_alone(tmp_path: Path) -> None:
    said = dry_run(tmp_path, "systrap (default), ptrace, kvm", BOOKWORM)
    assert "runsc" not in said


def test_the_sources_file_takes_the_hosts_mirror_and_keyring(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(BOOKWORM)
    assert apt.backports_sources("bookworm", tmp_path) == (
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm-backports\n"
        "Components: main\nSigned-By: /usr/share/keyrings/example.gpg\n"
    )
    (tmp_path / "sources.list").write_text(
        "deb http://mirror.example/debian bookworm-backports main\n"
    )
    assert apt.backports_sources("bookworm", tmp_path) is None

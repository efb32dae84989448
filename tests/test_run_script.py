"""`scripts/run.sh` reads its options before it installs anything: `--help` prints the usage at
once, a mistaken option stops it with a message."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run_alone(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """run.sh copied into an empty clone (no .venv, no other script) with only `cat` on PATH:
    anything past reading its options (installing, a network call) would fail or leave a mark."""
    clone = tmp_path / "clone"
    (clone / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts/run.sh", clone / "scripts/run.sh")
    tools = tmp_path / "bin"
    tools.mkdir()
    (tools / "cat").symlink_to(shutil.which("cat") or "/bin/cat")
    done = subprocess.run(
        ["/bin/bash", "scripts/run.sh", *args],
        cwd=clone,
        env={"PATH": str(tools), "HOME": str(tmp_path), "LANG": "C.UTF-8"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=30,  # bounds a hang; an install would fail here anyway
    )
    assert sorted(p.name for p in clone.iterdir()) == ["scripts"], "run.sh made something"
    return done


def test_help_prints_the_usage_and_installs_nothing(tmp_path: Path) -> None:
    done = run_alone(tmp_path, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Usage: scripts/run.sh [--host HOST] [--port PORT]"), done.stdout
    for name in ("--port PORT", "AIRLOCK_PORT", "AIRLOCK_HOST", "AIRLOCK_STATE_DIR"):
        assert name in done.stdout, name
    assert "AIRLOCK_DATABASE_URL" in done.stdout and "AIRLOCK_OPERATOR_KEY" in done.stdout
    assert run_alone(tmp_path / "short", "-h").stdout == done.stdout


def test_a_mistaken_option_stops_it_before_it_installs(tmp_path: Path) -> None:
    done = run_alone(tmp_path, "--prot", "9000")
    assert done.returncode == 2
    assert "unknown option --prot (see scripts/run.sh --help)" in done.stderr
    done = run_alone(tmp_path / "again", "--port")
    assert done.returncode == 2 and "--port needs a value" in done.stderr


def test_the_quick_start_says_how_to_change_the_port() -> None:
    readme = (REPO / "README.md").read_text()
    quick_start = re.search(r"^## Quick start\n(.*?)^## ", readme, re.DOTALL | re.M)
    assert quick_start, "no Quick start section in README.md"
    assert "./scripts/run.sh --port 9000" in quick_start.group(1)
    assert "./scripts/run.sh --help" in quick_start.group(1)

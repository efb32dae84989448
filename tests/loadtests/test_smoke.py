"""The load tests, run briefly by the test command: loadtests/run.py starts its own server,
two users (an agent session and a followed exec stream) work for a bounded time, and the run
must end with every request answered as documented, no exception in the scenarios, nothing
left running and no runtime process, network namespace or iptables chain more than before."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def test_a_short_load_run_fails_nothing_and_leaves_nothing(tmp_path: Path) -> None:
    if not (REPO / ".venv-load" / "bin" / "locust").exists():
        pytest.fail("no load environment: the test command runs loadtests/setup.sh first")
    out = tmp_path / "smoke"
    run = subprocess.run(
        [sys.executable, str(REPO / "loadtests" / "run.py"), "--scenario", "smoke",
         "--users", "2", "--spawn-rate", "2", "--duration", "20s", "--out", str(out)],
        env=os.environ, capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    summary = (out / "summary.md").read_text() if (out / "summary.md").exists() else ""
    assert run.returncode == 0, f"{run.stderr[-3000:]}\n{summary}"
    verdict = json.loads((out / "verdict.json").read_text())
    assert verdict["ok"] and verdict["failed_requests"] == 0 and verdict["exceptions"] == 0
    assert verdict["leaked"] == {} and verdict["sandboxes_left"] == 0
    with (out / "locust_stats.csv").open() as fh:
        rows = {r["Name"]: r for r in csv.DictReader(fh)}
    # Both kinds of user did their work: not a run that passed by doing nothing.
    assert int(rows["/v1/sandboxes/[id]/execs"]["Request Count"]) >= 20, rows.keys()
    assert int(rows["exec followed to its exit"]["Request Count"]) >= 1, rows.keys()
    for plot in ("requests.png", "latency.png", "errors.png"):
        assert (out / plot).stat().st_size > 0

"""A bench's run, written as `--json PATH` writes it, for the tests of bench/tables.py and
bench/compare.py. Pure logic: no bench, server or runtime runs in these tests."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bench.tables import Better, Column, Label, Report

LATENCY = (
    Column("median ms", "ms", Better.LOWER, width=11),
    Column("p95 ms", "ms", Better.LOWER, width=10),
)
RATE = (
    Column("execs", "execs", Better.NEITHER, width=8, format="d"),
    Column("per s", "execs/s", Better.HIGHER, width=8),
)


def write_run(
    path: Path, latencies: dict[str, tuple[float, float]], rate: tuple[int, float]
) -> Path:
    """Two printed tables of an api.py-like run, written to `path`."""
    report = Report("api", argparse.Namespace(runs=20, seconds=2.0, json=path))
    report.database = "SQLite"
    exec_of_true = report.table("exec of true", Label("path", 30), *LATENCY)
    exec_of_true.heading()
    for label, figures in latencies.items():
        exec_of_true.row(label, *figures)
    per_second = report.table("execs per second", Label("clients", 8, ">"), *RATE)
    per_second.heading()
    per_second.row(8, *rate)
    report.write()
    return path


@pytest.fixture
def before(tmp_path: Path) -> Path:
    latencies = {"API, httpx client": (10.0, 20.0), "runtime directly": (5.0, 8.0)}
    return write_run(tmp_path / "before.json", latencies, (400, 200.0))

"""A bench's table prints as the bench always printed it, and the run's JSON document holds
every table with the facts of the run."""

from __future__ import annotations

import argparse
import json
import re
from datetime import datetime
from pathlib import Path

import pytest

from bench.tables import Better, Column, Label, Report

from .conftest import LATENCY, RATE


def test_a_table_prints_as_the_bench_printed_it(capsys: pytest.CaptureFixture[str]) -> None:
    report = Report("pool", argparse.Namespace(runs=3, json=None))
    table = report.table(
        "create and first exec",
        Label("path", 36),
        *LATENCY,
        Column("create ms", "ms", Better.LOWER, width=11),
    )
    table.heading()
    table.row("claim from the warm pool", 41.25, 60.0, None)
    clients = report.table("execs per second", Label("clients", 8, ">"), *RATE)
    clients.heading()
    clients.row(32, 1234, 123.45)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        f"{'path':<36}{'median ms':>11}{'p95 ms':>10}{'create ms':>11}",
        f"{'claim from the warm pool':<36}{41.25:>11.1f}{60.0:>10.1f}{'-':>11}",
        f"{'clients':>8}{'execs':>8}{'per s':>8}",
        f"{32:>8}{1234:>8}{123.45:>8.1f}",
    ]


def test_the_document_holds_the_tables_and_the_facts_of_the_run(before: Path) -> None:
    document = json.loads(before.read_text())
    assert document["bench"] == "api"
    assert document["arguments"] == {"runs": 20, "seconds": 2.0}
    assert document["database"] == "SQLite"
    assert re.fullmatch("[0-9a-f]{40}", document["commit"]) and document["dirty"] in (True, False)
    assert datetime.fromisoformat(document["date"]).tzinfo is not None
    machine = document["machine"]
    assert machine["cpus"] and machine["memory_mib"] and machine["kernel"] and machine["python"]
    table = document["tables"]["exec of true"]
    assert table["columns"]["p95 ms"] == {"unit": "ms", "better": "lower", "format": ".1f"}
    assert table["rows"]["API, httpx client"] == {"median ms": 10.0, "p95 ms": 20.0}
    assert document["tables"]["execs per second"]["rows"] == {"8": {"execs": 400, "per s": 200.0}}


def test_without_a_path_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    report = Report("api", argparse.Namespace(runs=1, json=None))
    report.table("t", Label("path", 4), *LATENCY).record("a", 1.0, 2.0)
    report.write()
    assert list(tmp_path.iterdir()) == [] and capsys.readouterr().out == ""


def test_a_row_needs_a_figure_for_every_column() -> None:
    table = Report("api", argparse.Namespace(json=None)).table("t", Label("path", 4), *LATENCY)
    with pytest.raises(ValueError, match="1 figures for 2 columns"):
        table.record("a", 1.0)


def test_a_suffix_an_indent_and_keys_for_headings_printed_twice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = Report("runtime", argparse.Namespace(json=None))
    table = report.table(
        "against raw",
        Label("", 6, indent=2),
        Column("ours p50", "ms", Better.LOWER, width=10),
        Column("p95", "ms", Better.LOWER, width=6, key="ours p95"),
        Column("raw p50", "ms", Better.LOWER, width=9),
        Column("p95", "ms", Better.LOWER, width=6, key="raw p95"),
        Column("ratio", "x", Better.LOWER, width=6, format=".2f", suffix="x"),
    )
    table.heading("   (ms)")
    table.row("exec", 1.25, 2.5, 1.0, 2.0, 1.25)
    table.row("fork", 3.0, 4.0, None, None, None)
    printed = capsys.readouterr().out.splitlines()
    assert printed == [
        f"{'':8}{'ours p50':>10}{'p95':>6}{'raw p50':>9}{'p95':>6}{'ratio':>7}   (ms)",
        f"  {'exec':6}{1.25:>10.1f}{2.5:>6.1f}{1.0:>9.1f}{2.0:>6.1f}{1.25:>6.2f}x",
        f"  {'fork':6}{3.0:>10.1f}{4.0:>6.1f}{'-':>9}{'-':>6}{'-':>7}",
    ]
    document = report.document()["tables"]["against raw"]
    assert list(document["columns"]) == ["ours p50", "ours p95", "raw p50", "raw p95", "ratio"]
    assert document["columns"]["ratio"] == {"unit": "x", "better": "lower", "format": ".2f"}
    assert document["rows"]["exec"] == {
        "ours p50": 1.25,
        "ours p95": 2.5,
        "raw p50": 1.0,
        "raw p95": 2.0,
        "ratio": 1.25,
    }


def test_two_columns_cannot_share_a_key() -> None:
    report = Report("runtime", argparse.Namespace(json=None))
    with pytest.raises(ValueError, match="two columns keyed alike"):
        report.table("t", Label("op", 4), *LATENCY, Column("p95 ms", "ms", Better.LOWER))

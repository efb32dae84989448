"""bench/compare.py reads two runs' JSON documents and names the figures that moved beyond
the threshold, worse or better by the direction each column declares; it lists what only one
run has, and refuses a file that is not a run's document with a clear message."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import compare

from .conftest import write_run


def compared(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> str:
    capsys.readouterr()
    assert compare.main([str(a) for a in argv]) == 0
    return capsys.readouterr().out


def test_names_what_got_worse_and_what_got_better(
    before: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # httpx p95 +25% (worse: lower is better), per s +20% (better: higher is better),
    # execs +20% (context only), the median +5% (within the threshold)
    latencies = {"API, httpx client": (10.5, 25.0), "runtime directly": (5.0, 8.0)}
    after = write_run(tmp_path / "after.json", latencies, (480, 240.0))
    out = compared(capsys, before, after)
    moved = out.split("moved beyond 10%:")[1].splitlines()
    assert (
        "  worse: exec of true · API, httpx client · p95 ms: 20.0 → 25.0 ms (+25.0%, +5.0 ms)"
        in moved
    )
    assert (
        "  better: execs per second · clients 8 · per s: "
        "200.0 → 240.0 execs/s (+20.0%, +40.0 execs/s)" in moved
    )
    assert not any("median ms" in line or "· execs:" in line for line in moved)
    listed = [" ".join(line.split()) for line in out.split("moved beyond")[0].splitlines()]
    assert "API, httpx client · p95 ms 20.0 → 25.0 ms +25.0% +5.0 ms WORSE" in listed
    assert "API, httpx client · median ms 10.0 → 10.5 ms +5.0% +0.5 ms" in listed
    assert "clients 8 · execs 400 → 480 execs +20.0% +80 execs" in listed  # shown, not named
    assert "clients 8 · per s 200.0 → 240.0 execs/s +20.0% +40.0 execs/s BETTER" in listed

    # the same runs read the other way round: the moves turn over
    out = compared(capsys, after, before)
    moved = out.split("moved beyond 10%:")[1]
    assert "better: exec of true · API, httpx client · p95 ms: 25.0 → 20.0 ms (-20.0%" in moved
    assert "worse: execs per second · clients 8 · per s: 240.0 → 200.0 execs/s (-16.7%" in moved


def test_the_threshold_decides_what_is_named(
    before: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latencies = {"API, httpx client": (10.5, 25.0), "runtime directly": (5.0, 8.0)}
    after = write_run(tmp_path / "after.json", latencies, (480, 240.0))
    moved = compared(capsys, before, after, "--threshold", "30").split("moved beyond 30%:")[1]
    assert moved.splitlines()[1:] == ["  nothing"]
    moved = compared(capsys, before, after, "--threshold", "4").split("moved beyond 4%:")[1]
    assert "worse: exec of true · API, httpx client · median ms" in moved


def test_the_direction_is_the_one_the_column_declares() -> None:
    # a figure named like a latency, declared higher-is-better, is judged as declared
    table = {
        "columns": {"median ms": {"unit": "ms", "better": "higher", "format": ".1f"}},
        "rows": {"r": {"median ms": 10.0}},
    }
    after = json.loads(json.dumps(table))
    after["rows"]["r"]["median ms"] = 20.0
    comparison = compare.compare({"tables": {"t": table}}, {"tables": {"t": after}})
    assert [c.column for c in comparison.moved(10, "better")] == ["median ms"]
    assert comparison.moved(10, "worse") == []


def test_lists_what_one_run_has_and_the_other_has_not(
    before: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    after = write_run(tmp_path / "after.json", {"API, httpx client": (10.0, 20.0)}, (400, 200.0))
    document = json.loads(after.read_text())
    document["tables"]["ratios"] = {"columns": {}, "rows": {}}
    document["arguments"]["runs"] = 200
    after.write_text(json.dumps(document))
    out = compared(capsys, before, after)
    assert f"only in {before}:\n  row 'runtime directly' of table 'exec of true'\n" in out
    assert f"only in {after}:\n  table 'ratios'\n" in out
    assert "runs made under other conditions:\n  arguments runs: 20 → 200\n" in out
    assert "moved beyond 10%:\n  nothing\n" in out


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("median 10 ms\n", "not JSON"),
        ('{"bench": "api"}', "not the tables of a bench run"),
        ('{"tables": {"t": {"rows": {}}}}', "table 't' has no 'columns' and 'rows' objects"),
    ],
)
def test_a_file_that_is_not_a_bench_run_is_refused_clearly(
    before: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str,
    says: str,
) -> None:
    wrong = tmp_path / "wrong.json"
    wrong.write_text(content)
    capsys.readouterr()
    assert compare.main([str(before), str(wrong)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.startswith(f"compare.py: {wrong}: {says}")
    assert compare.main([str(before), str(tmp_path / "missing.json")]) == 2
    assert "missing.json: cannot be read" in capsys.readouterr().err

"""Two runs of a bench side by side: every figure before → after, and what moved.

    .venv/bin/python bench/compare.py BEFORE.json AFTER.json [--threshold 10]

Reads the documents a bench writes with `--json PATH` (bench/tables.py); it never runs a
bench. Tables are matched by name, rows by label, figures by column. A figure moved when it
changed by more than the threshold, in percent of its value before; it is named worse or
better by the direction its column declares (latencies lower, throughput higher), and figures
that only give context are shown but never named. Tables, rows and columns found in one run
only are listed, and so are the facts of the runs that differ (arguments, database, machine),
since a figure measured under other conditions moves for that reason alone.

A report, not a gate: the exit status is 0 whatever moved, 2 when a file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class Unreadable(Exception):
    """A file that is not a bench's JSON document."""


@dataclass(frozen=True)
class Change:
    """One figure of one row of one table, in both runs."""

    table: str
    row: str
    column: str
    unit: str
    better: str  # "lower", "higher" or "neither", as the column declares it
    format: str
    before: float | None
    after: float | None

    @property
    def delta(self) -> float | None:
        if self.before is None or self.after is None:
            return None
        return self.after - self.before

    @property
    def percent(self) -> float | None:
        if self.delta is None or not self.before:
            return None
        return self.delta / abs(self.before) * 100

    def verdict(self, threshold: float) -> str | None:
        """Worse or better, when the figure moved beyond `threshold` percent; else None."""
        if self.percent is None or abs(self.percent) <= threshold:
            return None
        if self.better == "lower":
            return "better" if self.percent < 0 else "worse"
        if self.better == "higher":
            return "better" if self.percent > 0 else "worse"
        return None

    def show(self, value: float | None, sign: str = "") -> str:
        if value is None:
            return "-"
        try:
            return f"{value:{sign}{self.format}}"
        except ValueError:  # an integer format for a figure that is not one
            return f"{value:{sign}g}"

    @property
    def figure(self) -> str:
        return f"{self.row} · {self.column}"  # labels and headings hold slashes and commas

    def line(self, threshold: float) -> str:
        """The figure's before, after and change, in columns that align down a table."""
        unit = f" {self.unit}" if self.unit else ""
        percent = "" if self.percent is None else f"{self.percent:+.1f}%"
        delta = "" if self.delta is None else f"{self.show(self.delta, '+')}{unit}"
        verdict = self.verdict(threshold)
        return (
            f"{self.show(self.before):>9} → {self.show(self.after):>9}{unit:<8}"
            f"{percent:>8}  {delta:<15}" + (verdict.upper() if verdict else "")
        ).rstrip()

    def summary(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        moved = ""
        if self.delta is not None:
            percent = "n/a %" if self.percent is None else f"{self.percent:+.1f}%"
            moved = f" ({percent}, {self.show(self.delta, '+')}{unit})"
        return f"{self.show(self.before)} → {self.show(self.after)}{unit}{moved}"


@dataclass
class Comparison:
    changes: list[Change] = field(default_factory=list)
    only_before: list[str] = field(default_factory=list)
    only_after: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)  # facts of the runs that differ

    def moved(self, threshold: float, verdict: str) -> list[Change]:
        return [c for c in self.changes if c.verdict(threshold) == verdict]


def load(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as e:
        raise Unreadable(f"{path}: cannot be read: {e.strerror or e}") from e
    try:
        document = json.loads(text)
    except json.JSONDecodeError as e:
        raise Unreadable(f"{path}: not JSON ({e})") from e
    if not isinstance(document, dict) or not isinstance(document.get("tables"), dict):
        raise Unreadable(f"{path}: not the tables of a bench run (no 'tables' object)")
    for name, table in document["tables"].items():
        if not isinstance(table, dict) or not all(
            isinstance(table.get(part), dict) for part in ("columns", "rows")
        ):
            raise Unreadable(f"{path}: table {name!r} has no 'columns' and 'rows' objects")
        if not all(isinstance(row, dict) for row in table["rows"].values()):
            raise Unreadable(f"{path}: a row of table {name!r} is not an object")
    return document


def compare(before: dict[str, Any], after: dict[str, Any]) -> Comparison:
    result = Comparison(facts=list(differing_facts(before, after)))
    old, new = before["tables"], after["tables"]
    result.only_before += [f"table {name!r}" for name in old if name not in new]
    result.only_after += [f"table {name!r}" for name in new if name not in old]
    for name in (n for n in new if n in old):
        compare_table(name, old[name], new[name], result)
    return result


def compare_table(name: str, old: dict[str, Any], new: dict[str, Any], result: Comparison) -> None:
    result.only_before += [
        f"column {c!r} of table {name!r}" for c in old["columns"] if c not in new["columns"]
    ]
    result.only_after += [
        f"column {c!r} of table {name!r}" for c in new["columns"] if c not in old["columns"]
    ]
    result.only_before += [
        f"row {r!r} of table {name!r}" for r in old["rows"] if r not in new["rows"]
    ]
    result.only_after += [
        f"row {r!r} of table {name!r}" for r in new["rows"] if r not in old["rows"]
    ]
    columns = {c: d for c, d in new["columns"].items() if c in old["columns"]}
    for row in (r for r in new["rows"] if r in old["rows"]):
        for column, declared in columns.items():
            result.changes.append(
                Change(
                    table=name,
                    # a bare number says little alone: "clients 8", as the table's heading reads
                    row=f"{old.get('label', '')} {row}".strip() if row.isdigit() else row,
                    column=column,
                    unit=declared.get("unit", ""),
                    better=declared.get("better", "neither"),
                    format=declared.get("format", "g"),
                    before=number(old["rows"][row].get(column)),
                    after=number(new["rows"][row].get(column)),
                )
            )


def number(value: object) -> float | None:
    """A figure, or None for one that is missing or not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def differing_facts(before: dict[str, Any], after: dict[str, Any]) -> Iterator[str]:
    """The conditions of the runs that are not the same (the commit and date always differ)."""
    for fact in ("bench", "database"):
        if before.get(fact) != after.get(fact):
            yield f"{fact}: {before.get(fact)} → {after.get(fact)}"
    for group in ("arguments", "machine"):
        old, new = before.get(group) or {}, after.get(group) or {}
        for key in dict.fromkeys([*old, *new]):
            if old.get(key) != new.get(key):
                yield f"{group} {key}: {old.get(key)} → {new.get(key)}"


def run_line(path: Path, document: dict[str, Any]) -> str:
    commit = (document.get("commit") or "no commit")[:12]
    if document.get("dirty"):
        commit += " (uncommitted changes)"
    return (
        f"{path}: {document.get('bench')}, {commit}, {document.get('date')}, "
        f"{document.get('database') or 'no database'}"
    )


def render(
    comparison: Comparison, threshold: float, before: str = "before", after: str = "after"
) -> list[str]:
    lines: list[str] = []
    if comparison.facts:
        lines += ["", "runs made under other conditions:"]
        lines += [f"  {fact}" for fact in comparison.facts]
    width = max((len(c.figure) for c in comparison.changes), default=0)
    table = None
    for change in comparison.changes:
        if change.before is None and change.after is None:
            continue  # a cell that has no figure in either run ("-")
        if change.table != table:
            table = change.table
            lines += ["", table]
        lines.append(f"  {change.figure:<{width}}  {change.line(threshold)}")
    lines += ["", f"moved beyond {threshold:g}%:"]
    for verdict in ("worse", "better"):
        moved = comparison.moved(threshold, verdict)
        lines += [f"  {verdict}: {c.table} · {c.figure}: {c.summary()}" for c in moved]
    if not comparison.moved(threshold, "worse") and not comparison.moved(threshold, "better"):
        lines.append("  nothing")
    for side, items in ((before, comparison.only_before), (after, comparison.only_after)):
        if items:
            lines += ["", f"only in {side}:"] + [f"  {item}" for item in items]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, metavar="BEFORE.json")
    parser.add_argument("after", type=Path, metavar="AFTER.json")
    parser.add_argument(
        "--threshold", type=float, default=10.0, help="percent a figure must move (default 10)"
    )
    args = parser.parse_args(argv)
    try:
        before, after = load(args.before), load(args.after)
    except Unreadable as e:
        print(f"compare.py: {e}", file=sys.stderr)
        return 2
    comparison = compare(before, after)
    print(f"before  {run_line(args.before, before)}")
    print(f"after   {run_line(args.after, after)}")
    print("\n".join(render(comparison, args.threshold, str(args.before), str(args.after))))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The tables a bench prints, kept as figures too, and the run they came from as one JSON file.

A bench declares each table once: its stable name, the column of row labels, and its figure
columns with their printed heading and width (and what follows each figure, as the `x` of a
ratio), their unit, and which way is better. `row()` prints a line exactly as the bench
always printed it and keeps the figures; `record()` keeps figures the bench prints in
sentences of its own (ratios, overheads). `Report.write()` puts every table of the run, with
the facts of the run (bench, arguments, commit, date, database, machine), into one JSON
document that `bench/compare.py` reads.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
FORMAT = 1  # the version of the JSON document; raised when its shape changes

Figure = float | int | None


class Better(StrEnum):
    """Which way a figure should move: latencies down, throughput up; `NEITHER` for figures
    that only give context (counts that follow from the arguments, ratios without a goal)."""

    LOWER = "lower"
    HIGHER = "higher"
    NEITHER = "neither"


@dataclass(frozen=True)
class Label:
    """The column of row labels: its heading, printed width and alignment, and the spaces
    printed before it on every line of the table."""

    heading: str
    width: int
    align: str = "<"
    indent: int = 0

    def show(self, text: object) -> str:
        return " " * self.indent + f"{text!s:{self.align}{self.width}}"


@dataclass(frozen=True)
class Column:
    """A column of figures. `heading` is printed and is the column's key in the JSON
    document, so it stays as it is; `key`, when given, is that key instead, for a heading
    printed over more than one column of a table (`p95` under each of two paths). `format`
    is the format spec of one figure, and `suffix` what is printed right after it (the
    heading is right-aligned over both)."""

    heading: str
    unit: str
    better: Better
    width: int = 0
    format: str = ".1f"
    suffix: str = ""
    key: str = ""

    @property
    def name(self) -> str:
        """The column's key in the JSON document."""
        return self.key or self.heading

    @property
    def span(self) -> int:
        return self.width + len(self.suffix)

    def show(self, value: Figure) -> str:
        if value is None:
            return f"{'-':>{self.span}}"
        return f"{value:>{self.width}{self.format}}{self.suffix}"

    def describe(self) -> dict[str, str]:
        return {
            "unit": self.unit,
            "better": self.better.value,
            "format": self.format,
        }


# The two columns of a latency table: the median and the 95th percentile, in ms.
MEDIAN_P95 = (
    Column("median ms", "ms", Better.LOWER, width=11),
    Column("p95 ms", "ms", Better.LOWER, width=10),
)


@dataclass
class Table:
    name: str
    label: Label
    columns: tuple[Column, ...]
    rows: dict[str, dict[str, Figure]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: two columns keyed alike in {names} (give one a key)")

    def heading(self, after: str = "") -> None:
        """Print the headings, and `after` at the end of the line (a note such as `(ms)`)."""
        print(
            self.label.show(self.label.heading)
            + "".join(f"{c.heading:>{c.span}}" for c in self.columns)
            + after
        )

    def row(self, label: object, *values: Figure) -> None:
        """Print one row as the bench always did, and keep its figures."""
        self.record(label, *values)
        print(
            self.label.show(label)
            + "".join(c.show(v) for c, v in zip(self.columns, values, strict=True))
        )

    def record(self, label: object, *values: Figure) -> None:
        """Keep one row's figures without printing them."""
        if len(values) != len(self.columns):
            raise ValueError(f"{self.name}: {len(values)} figures for {len(self.columns)} columns")
        self.rows[str(label)] = {c.name: v for c, v in zip(self.columns, values, strict=True)}

    def document(self) -> dict[str, Any]:
        return {
            "label": self.label.heading,
            "columns": {c.name: c.describe() for c in self.columns},
            "rows": self.rows,
        }


def json_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json",
        type=Path,
        metavar="PATH",
        help="also write every table of the run, with its commit, database and machine, to PATH",
    )


class Report:
    """Every table of one run of a bench, and the facts of that run."""

    def __init__(self, bench: str, args: argparse.Namespace) -> None:
        self.bench = bench
        self.arguments = {
            k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "json"
        }
        self.path: Path | None = getattr(args, "json", None)
        self.database: str | None = None  # "SQLite" or "PostgreSQL"; None without one
        # the runsc platform: the one the environment forces, else where the bench learns it
        self.platform: str | None = os.environ.get("AIRLOCK_RUNSC_PLATFORM") or None
        self.runsc: str | None = runsc_version()
        self.tables: dict[str, Table] = {}

    def table(self, name: str, label: Label, *columns: Column) -> Table:
        if name in self.tables:
            raise ValueError(f"two tables named {name!r}")
        self.tables[name] = Table(name, label, columns)
        return self.tables[name]

    def document(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "bench": self.bench,
            "arguments": self.arguments,
            **git_state(),
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "database": self.database,
            "machine": {
                **machine(),
                "runsc": self.runsc,
                "platform": self.platform,
            },
            "tables": {name: table.document() for name, table in self.tables.items()},
        }

    def write(self) -> None:
        """Write the document to the path of `--json`, if one was given."""
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(self.document(), indent=2) + "\n")
        print(f"\n(tables written to {self.path})")


def git_state() -> dict[str, Any]:
    def git(*argv: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *argv], cwd=REPO, capture_output=True, text=True, check=True
            )
        except (OSError, subprocess.CalledProcessError):
            return None
        return done.stdout.strip()

    commit = git("rev-parse", "HEAD")
    # The results being written (bench/results) do not make the tree dirty; any other change does.
    status = git("status", "--porcelain", "--", ".", ":(exclude)bench/results")
    return {"commit": commit, "dirty": None if status is None else bool(status)}


def machine() -> dict[str, Any]:
    return {
        "cpu": _proc_field("/proc/cpuinfo", "model name") or platform.processor() or None,
        "cpus": os.cpu_count(),
        "memory_mib": _memory_mib(),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def runsc_version() -> str | None:
    """The version of the runsc on PATH, the one the service finds: `0.0~20240729.0`."""
    runsc = shutil.which("runsc")
    if runsc is None:
        return None
    try:
        done = subprocess.run([runsc, "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = done.stdout.splitlines()[:1]
    return first[0].split()[-1] if first and first[0].split() else None


def _proc_field(path: str, name: str) -> str | None:
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == name:
            return value.strip()
    return None


def _memory_mib() -> int | None:
    total = _proc_field("/proc/meminfo", "MemTotal")  # "24683784 kB"
    return int(total.split()[0]) // 1024 if total else None

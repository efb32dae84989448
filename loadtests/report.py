"""Turn a load run's results folder into `summary.md`, the plots and `verdict.json`.

    .venv-load/bin/python loadtests/report.py loadtests/results/<run>

Reads locust's CSV files (`locust_stats.csv`, `locust_stats_history.csv`,
`locust_failures.csv`) and `run.json` (written by run.py: the command, the host's counts
before and after). The verdict is ok when no request failed and the host holds after the run
what it held before (runtime processes, network namespaces, iptables chains) with no sandbox
left running.
"""

from __future__ import annotations

import csv
import json
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

LEAKS = ("runtime_processes", "network_namespaces", "iptables_chains")


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _num(value: str | None) -> float:
    try:
        return float(value or 0)
    except ValueError:
        return 0.0


def plots(out: Path, history: list[dict[str, str]]) -> list[str]:
    rows = [r for r in history if r.get("Name") == "Aggregated"]
    if not rows:
        return []
    t0 = _num(rows[0]["Timestamp"])
    t = [(_num(r["Timestamp"]) - t0) / 60 for r in rows]
    made = []

    def figure(name: str, title: str, ylabel: str, series: dict[str, list[float]]) -> None:
        fig, ax = plt.subplots(figsize=(9, 3.6))
        for label, values in series.items():
            ax.plot(t, values, label=label, linewidth=1.2)
        ax.set_title(title)
        ax.set_xlabel("minutes into the run")
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3)
        ax.legend(loc="upper left")
        fig.tight_layout()
        fig.savefig(out / name, dpi=110)
        plt.close(fig)
        made.append(name)

    figure(
        "requests.png",
        "Requests per second (all requests)",
        "requests/s",
        {"requests/s": [_num(r["Requests/s"]) for r in rows]},
    )
    figure(
        "latency.png",
        "Response time percentiles (all requests, over the last 10 s)",
        "ms",
        {f"p{p}": [_num(r.get(f"{p}%")) for r in rows] for p in ("50", "95", "99")},
    )
    figure(
        "errors.png",
        "Failed requests per second",
        "failures/s",
        {"failures/s": [_num(r["Failures/s"]) for r in rows]},
    )
    return made


def host_plot(out: Path) -> list[str]:
    """What the host held through the run (host.csv, sampled by run.py)."""
    rows = _rows(out / "host.csv")
    if len(rows) < 2:
        return []
    t = [_num(r["seconds"]) / 60 for r in rows]
    fig, (counts, memory) = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for key in ("runtime_processes", "network_namespaces", "iptables_chains"):
        counts.plot(t, [_num(r[key]) for r in rows], label=key.replace("_", " "), linewidth=1.2)
    counts.set_title("What the host holds during the run")
    counts.set_ylabel("count")
    counts.legend(loc="upper left")
    counts.grid(alpha=0.3)
    for key in ("api_rss_mib", "postgres_pss_mib"):
        if key not in rows[0]:
            continue
        memory.plot(t, [_num(r[key]) for r in rows], label=key.replace("_", " "), linewidth=1.2)
    memory.set_ylabel("MiB")
    memory.set_xlabel("minutes into the run")
    memory.legend(loc="upper left")
    memory.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "host.png", dpi=110)
    plt.close(fig)
    return ["host.png"]


def summary(out: Path) -> dict[str, Any]:
    run = json.loads((out / "run.json").read_text())
    stats = _rows(out / "locust_stats.csv")
    failures = _rows(out / "locust_failures.csv")
    # A scenario's own code raising is no request failure to locust, but the run is broken.
    raised = _rows(out / "locust_exceptions.csv")
    exceptions = sum(int(_num(r.get("Count"))) for r in raised)
    history = _rows(out / "locust_stats_history.csv")
    images = plots(out, history) + host_plot(out)
    total = next((r for r in stats if r["Name"] == "Aggregated"), None)
    failed = int(_num(total["Failure Count"])) if total else 0
    leaks = {k: (run["before"][k], run["after"][k]) for k in LEAKS}
    leaked = {k: v for k, v in leaks.items() if v[1] > v[0]}
    ok = (
        bool(total)
        and failed == 0
        and exceptions == 0
        and not leaked
        and run["sandboxes_left"] == 0
    )
    lines = [
        f"# Load run: {run['scenario']} on {run['target']}",
        "",
        f"- command: `{run['command']}`",
        f"- {run['users']} users ({', '.join(run['classes'])}), spawned at {run['spawn_rate']}/s,"
        f" for {run['duration']}; {run['nodes']} node(s); {run['cpus']} CPUs",
        f"- from {run['started']} to {run['ended']}",
        f"- verdict: **{'ok' if ok else 'NOT ok'}** ({failed} failed requests, "
        f"{exceptions} exceptions in the scenario, "
        f"{run['sandboxes_left']} sandboxes left, leaks: {leaked or 'none'})",
        f"- the host back to its counts before the run {_settled(run)}",
        "",
        "| request | count | failed | p50 ms | p95 ms | p99 ms | max ms | per s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in stats:
        name = f"{r['Type']} {r['Name']}".strip() if r["Name"] != "Aggregated" else "**all**"
        lines.append(
            f"| {name} | {int(_num(r['Request Count']))} | {int(_num(r['Failure Count']))} "
            f"| {_num(r.get('50%')):.0f} | {_num(r.get('95%')):.0f} | {_num(r.get('99%')):.0f} "
            f"| {_num(r['Max Response Time']):.0f} | {_num(r['Requests/s']):.2f} |"
        )
    lines += [
        "",
        "Custom rows: `BURST` is one burst of creates at once (its content size is the number"
        " admitted), `STREAM` an exec followed to its exit, `REVIEW` a review to its verdict.",
        "",
        "| on the host | before | after |",
        "| --- | ---: | ---: |",
    ]
    for key in (*LEAKS, "api_rss_mib", "postgres_pss_mib", "postgres_rss_mib"):
        if key not in run["before"]:
            continue
        lines.append(f"| {key.replace('_', ' ')} | {run['before'][key]} | {run['after'][key]} |")
    if failures:
        lines += ["", "| failed request | error | times |", "| --- | --- | ---: |"]
        for f in failures:
            error = f["Error"].replace("|", "\\|").replace("\n", " ")[:200]
            lines.append(f"| {f['Method']} {f['Name']} | {error} | {f['Occurrences']} |")
    if raised:
        lines += ["", "| exception in the scenario | times |", "| --- | ---: |"]
        for r in raised:
            lines.append(f"| {r['Message'][:200]} | {r['Count']} |")
    lines += ["", *[f"![{name}]({name})" for name in images]]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    verdict = {
        "ok": ok,
        "failed_requests": failed,
        "exceptions": exceptions,
        "leaked": leaked,
        "sandboxes_left": run["sandboxes_left"],
        "made": datetime.now(UTC).isoformat(),
    }
    (out / "verdict.json").write_text(json.dumps(verdict, indent=2))
    return verdict


def _settled(run: dict[str, Any]) -> str:
    if "settle_s" not in run:  # a run from before the settle wait
        return "(not measured)"
    if run["settle_s"] is None:
        return f"**not** within the wait; still there: {json.dumps(run.get('left_behind'))}"
    return f"{run['settle_s']} s after the clean-up"


if __name__ == "__main__":
    print(json.dumps(summary(Path(sys.argv[1]))))

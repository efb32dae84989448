"""What the host holds for Airlock, counted before and after a load run: runtime processes,
network namespaces, iptables chains, and the memory of the API and database processes.

Only what belongs to the server under load is counted, so other servers on the host (a test
suite's, another run's) do not change the figures: runtime processes by its state dirs, and
network namespaces and iptables chains by the runtime ids its database has ever recorded
(a sandbox's netns is named by its runtime id, its chains by that id's tag)."""

from __future__ import annotations

import csv
import subprocess
import threading
import time
from pathlib import Path
from typing import Any


def _ps() -> dict[int, tuple[int, int, str]]:
    """pid -> (ppid, rss KiB, command line) of every process."""
    out = subprocess.run(
        ["ps", "-eww", "-o", "pid=,ppid=,rss=,args="], capture_output=True, text=True, check=True
    )
    procs = {}
    for line in out.stdout.splitlines():
        pid, ppid, rss, args = [*line.strip().split(None, 3), "", "", ""][:4]
        procs[int(pid)] = (int(ppid), int(rss or 0), args)
    return procs


def runtime_processes(state_dirs: list[Path], procs: dict[int, tuple[int, int, str]]) -> int:
    """runsc processes of these state dirs (their command lines name the runsc root there)."""
    roots = [str(d / "gvisor") for d in state_dirs]
    return sum(
        1 for _, _, args in procs.values() if "runsc" in args and any(r in args for r in roots)
    )


def runtime_ids(database_url: str) -> set[str]:
    """Every runtime id the server's database holds (its sandboxes, live or ended)."""
    url = database_url.replace("postgresql+asyncpg://", "postgresql://", 1)
    out = subprocess.run(
        ["psql", url, "-Atc", "SELECT runtime_id FROM sandboxes WHERE runtime_id IS NOT NULL"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return set(out.stdout.split())


def left_behind(target: Any) -> dict[str, Any]:
    """What holds the host after a run, by the database's word: each network namespace of a
    recorded runtime id with its sandbox's state, and the runsc processes by the sandbox id on
    their command line (runsc names the container) with its state."""
    url = target.database.replace("postgresql+asyncpg://", "postgresql://", 1)
    sql = "SELECT runtime_id, state FROM sandboxes WHERE runtime_id IS NOT NULL"
    out = subprocess.run(
        ["psql", url, "-AtF", " ", "-c", sql], capture_output=True, text=True, check=True
    )
    states = dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    netns = [line.split(" ")[0] for line in listed.stdout.splitlines()]
    roots = [str(d / "gvisor") for d in target.state_dirs]
    holders: dict[str, int] = {}
    for _, _, args in _ps().values():
        if "runsc" in args and any(r in args for r in roots):
            named = next((w for w in args.split() if w in states), "(no sandbox id)")
            holders[named] = holders.get(named, 0) + 1
    return {
        "netns": {n: states[n] for n in netns if n in states},
        "runsc_processes": {k: [n, states.get(k, "?")] for k, n in holders.items()},
    }


def _netns(ids: set[str]) -> int:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, check=False)
    return sum(1 for line in out.stdout.splitlines() if line.split(" ")[0] in ids)


def _chains(ids: set[str]) -> int:
    """The sandboxes' egress and ingress chains (ALK-<tag>, ALI-<tag>)."""
    tags = {i.rsplit("-", 1)[-1] for i in ids}
    out = subprocess.run(
        ["iptables-save", "-t", "filter"], capture_output=True, text=True, check=False
    )
    found = 0
    for line in out.stdout.splitlines():
        name = line[1:].split(" ")[0] if line.startswith(":") else ""
        if name[:4] in ("ALK-", "ALI-") and name[4:] in tags:
            found += 1
    return found


def _pss_kib(pid: int) -> int:
    """A process's proportional set size: its own pages, and its share of shared ones (so
    PostgreSQL's shared buffers count once across its processes, not once per process)."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def snapshot(state_dirs: list[Path], api_pids: list[int], database_url: str) -> dict[str, Any]:
    procs = _ps()
    postgres = sum(_pss_kib(p) for p, (_, _, args) in procs.items() if args.startswith("postgres"))
    ids = runtime_ids(database_url)
    return {
        "runtime_processes": runtime_processes(state_dirs, procs),
        "network_namespaces": _netns(ids),
        "iptables_chains": _chains(ids),
        "api_rss_mib": round(sum(procs[p][1] for p in api_pids if p in procs) / 1024, 1),
        "postgres_pss_mib": round(postgres / 1024, 1),
    }


def of(target: Any) -> dict[str, Any]:
    """The snapshot of a server under load (loadtests/run.py's Target)."""
    return snapshot(target.state_dirs, target.api_pids, target.database)


class Timeline:
    """The snapshot every `every_s` while a run goes on, as CSV rows (seconds since start)."""

    def __init__(self, path: Path, target: Any, every_s: float) -> None:
        self.path, self.target, self.every_s = path, target, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="host-timeline", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        t0 = time.monotonic()
        with self.path.open("w", newline="") as fh:
            writer: csv.DictWriter[str] | None = None
            while True:
                row = {"seconds": round(time.monotonic() - t0, 1)}
                row.update(of(self.target))
                if writer is None:
                    writer = csv.DictWriter(fh, fieldnames=list(row))
                    writer.writeheader()
                writer.writerow(row)
                fh.flush()
                if self._stop.wait(self.every_s):
                    return

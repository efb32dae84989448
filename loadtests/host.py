"""What the host holds for Airlock, counted before and after a load run: runtime processes,
network namespaces, iptables chains, and the memory of the API and database processes."""

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


def _lines(command: list[str], prefix: str) -> int:
    try:
        out = subprocess.run(command, capture_output=True, text=True, check=False).stdout
    except OSError:
        return -1
    return sum(1 for line in out.splitlines() if line.startswith(prefix))


def snapshot(state_dirs: list[Path], api_pids: list[int]) -> dict[str, Any]:
    procs = _ps()
    postgres = sum(rss for _, rss, args in procs.values() if args.startswith("postgres"))
    return {
        "runtime_processes": runtime_processes(state_dirs, procs),
        "network_namespaces": _lines(["ip", "netns", "list"], "alk-"),
        "iptables_chains": _lines(["iptables-save", "-t", "filter"], ":ALK-"),
        "api_rss_mib": round(sum(procs[p][1] for p in api_pids if p in procs) / 1024, 1),
        "postgres_rss_mib": round(postgres / 1024, 1),
    }


class Timeline:
    """The snapshot every `every_s` while a run goes on, as CSV rows (seconds since start)."""

    def __init__(self, path: Path, state_dirs: list[Path], api_pids: list[int], every_s: float):
        self.path, self.state_dirs, self.api_pids, self.every_s = (
            path,
            state_dirs,
            api_pids,
            every_s,
        )
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
                row.update(snapshot(self.state_dirs, self.api_pids))
                if writer is None:
                    writer = csv.DictWriter(fh, fieldnames=list(row))
                    writer.writeheader()
                writer.writerow(row)
                fh.flush()
                if self._stop.wait(self.every_s):
                    return

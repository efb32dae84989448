"""What the host holds for Airlock, counted before and after a load run: runtime processes,
network namespaces, iptables chains, and the memory of the API and database processes."""

from __future__ import annotations

import subprocess
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

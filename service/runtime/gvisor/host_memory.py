"""Admission of gVisor sandboxes against the host's memory.

A gVisor sandbox's memory cgroup limit (`bundle.memory_limit_mib`: its memory, its kernel's
included; its writable space is on the node's disk, disk.py) is what it can take from the
host's memory (records from before kept writable space in tmpfs, in memory, and count it).
The sum of those limits over the sandboxes this runtime holds may not exceed the budget: a
start that would go over it is refused (`HostMemoryExhausted`, a 503 with Retry-After at the
edge) instead of letting the host's OOM killer choose among the database,
the service and other tenants' sandboxes.

The ledger is the sandboxes' own records (each directory's `memory_limit_mib`), read once when
the runtime opens; a start reserves before anything is made and a teardown releases.
"""

from __future__ import annotations

import logging
from pathlib import Path

import msgspec

from ..errors import ResourceExhausted
from . import bundle
from .record import SandboxRecord

log = logging.getLogger("airlock.runtime.gvisor")

MEMINFO = Path("/proc/meminfo")
# Of the host's MemTotal, what sandboxes may be promised when no budget is configured: the
# rest is for the service, the database and the host's own page cache.
DEFAULT_FRACTION = 0.75


class HostMemoryExhausted(ResourceExhausted):
    """Starting the sandbox would promise sandboxes more memory than the host has for them."""


def mem_total_mib(meminfo: Path = MEMINFO) -> int:
    for line in meminfo.read_text().splitlines():
        name, _, value = line.partition(":")
        if name == "MemTotal":
            return int(value.split()[0]) // 1024
    raise ValueError(f"no MemTotal in {meminfo}")


def default_budget_mib() -> int:
    return int(mem_total_mib() * DEFAULT_FRACTION)


class HostMemory:
    """What this runtime's sandboxes may take from the host, and what they hold."""

    def __init__(self, budget_mib: int) -> None:
        self.budget_mib = budget_mib
        self._held: dict[str, int] = {}

    @property
    def held_mib(self) -> int:
        return sum(self._held.values())

    def admit(self, sandbox_id: str, limit_mib: int) -> None:
        """Reserve `limit_mib` for a new sandbox, or raise HostMemoryExhausted. Synchronous, so
        two starts in one event loop never both take the last room."""
        if self.held_mib + limit_mib > self.budget_mib:
            log.warning(
                "sandbox refused: %d MiB asked, %d of %d MiB promised",
                limit_mib,
                self.held_mib,
                self.budget_mib,
            )
            raise HostMemoryExhausted(
                f"this host cannot take a sandbox of {limit_mib} MiB of memory now; retry "
                "later or ask for less"
            )
        self._held[sandbox_id] = limit_mib

    def release(self, sandbox_id: str) -> None:
        self._held.pop(sandbox_id, None)

    def load(self, sandboxes_dir: Path) -> None:
        """Count the sandboxes a previous process left (until they are destroyed or reaped)."""
        for record in sandboxes_dir.glob("*/sandbox.json"):
            try:
                meta = SandboxRecord.read(record)
            except (OSError, msgspec.DecodeError):
                continue
            if meta.paused:  # checkpointed to disk: it holds no memory
                continue
            limit = meta.memory_limit_mib or bundle.memory_limit_mib(
                meta.spec, True, bundle.layout_of(meta.writable)
            )
            self._held[record.parent.name] = int(limit)

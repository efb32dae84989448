"""What the parts of the gVisor runtime share: its collaborators, held by `GVisorRuntime`.

The runtime is one class made of parts by responsibility (lifecycle.py, execs.py, files.py,
snapshots.py, network.py); each part reaches the others only through what is declared here
and through the methods of the parts it builds on.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from .. import records
from ..transfers import TRANSFER_TIMEOUT_S
from ..types import HELPER_PATH
from . import platform
from .host_memory import HostMemory
from .network import Networks
from .runsc import BackgroundReaper, Runsc
from .store import Store

__all__ = ["TRANSFER_TIMEOUT_S", "Core"]


class Core:
    name = "gvisor"
    # The service's own root helpers (kill, hostname, snapshot checks) never take the tenant's
    # environment: a tenant PATH or LD_PRELOAD would run its code with their privileges.
    HELPER_ENV: ClassVar[list[str]] = [f"PATH={HELPER_PATH}"]

    state_dir: Path
    root: Path  # <state_dir>/gvisor: runsc's root, the sandbox records, the snapshots
    use_agent: bool  # new sandboxes get the exec agent as PID 1 where the image has python3
    cli: Runsc
    store: Store
    reaper: BackgroundReaper
    networks: Networks
    host_memory: HostMemory
    runsc_version: str  # the first line of `runsc --version`
    exact_nproc: bool  # sandboxes count ceil(vcpus) CPUs (bundle.boot_cpus)
    # `runsc run|restore` calls under way: while any is, the sandboxes' parent cgroup stays
    # (a start fills its cpuset before runsc makes the sandbox's own under it).
    starting: int

    @property
    def _snapshots(self) -> Path:
        return self.root / "snapshots"

    def _snapshot_dir(self, snapshot_id: str) -> Path:
        """A snapshot's directory (template, fork or pause checkpoint); SnapshotNotFound for
        an id that cannot be one."""
        return self._snapshots / records.check_snapshot_id(snapshot_id)

    @property
    def keeps_exec_processes(self) -> bool:
        """Whether processes started through `runsc exec` survive a snapshot here."""
        return platform.keeps_exec_processes(self.runsc_version)

    @property
    def checkpoint_leaves_running(self) -> bool:
        """Whether a checkpoint here leaves the sandbox running (no restore in place)."""
        return platform.checkpoint_leaves_running(self.runsc_version)

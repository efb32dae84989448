"""What the parts of the gVisor runtime share: the state dir, the runsc driver, the record
store, the network, the host memory budget, and what opening the runtime learned.

`GVisorRuntime` (runtime.py) builds one `Core` and hands each part (lifecycle.py, execs.py,
files.py, snapshots.py, pause.py, policy.py) what it uses of it; no part inherits another.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .. import records
from ..transfers import TRANSFER_TIMEOUT_S
from ..types import HELPER_PATH
from . import platform
from .host_memory import HostMemory
from .network import Networks
from .platform import PlatformChoice
from .runsc import Runsc
from .store import Store

__all__ = ["HELPER_ENV", "NAME", "TRANSFER_TIMEOUT_S", "Core"]

NAME = "gvisor"

# The service's own root helpers (kill, hostname, snapshot checks) never take the tenant's
# environment: a tenant PATH or LD_PRELOAD would run its code with their privileges.
HELPER_ENV: list[str] = [f"PATH={HELPER_PATH}"]


@dataclass
class Core:
    state_dir: Path
    cli: Runsc
    store: Store
    networks: Networks
    host_memory: HostMemory
    platform_choice: PlatformChoice  # the platform and the stack networked sandboxes get
    use_agent: bool = True  # new sandboxes get the exec agent as PID 1 where the image has python3
    runsc_version: str = "unknown"  # the first line of `runsc --version`
    exact_nproc: bool = True  # sandboxes count ceil(vcpus) CPUs (bundle.boot_cpus)
    # `runsc run|restore` calls under way: while any is, the sandboxes' parent cgroup stays
    # (a start fills its cpuset before runsc makes the sandbox's own under it).
    starting: int = 0

    @property
    def root(self) -> Path:
        """`<state_dir>/gvisor`: runsc's root, the sandbox records, the snapshots."""
        return self.state_dir / "gvisor"

    @property
    def snapshots(self) -> Path:
        return self.root / "snapshots"

    def snapshot_dir(self, snapshot_id: str) -> Path:
        """A snapshot's directory (template, fork or pause checkpoint); SnapshotNotFound for
        an id that cannot be one."""
        return self.snapshots / records.check_snapshot_id(snapshot_id)

    @property
    def keeps_exec_processes(self) -> bool:
        """Whether processes started through `runsc exec` survive a snapshot here."""
        return platform.keeps_exec_processes(self.runsc_version)

    @property
    def checkpoint_leaves_running(self) -> bool:
        """Whether a checkpoint here leaves the sandbox running (no restore in place)."""
        return platform.checkpoint_leaves_running(self.runsc_version)

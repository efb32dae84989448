"""The gVisor runtime: one `runsc` sandbox per Airlock sandbox. See ../README.md.

| module | part |
| --- | --- |
| `core.py`, `runtime.py` | what the parts share; `GVisorRuntime`, composed of the parts |
| `leftovers.py` | `destroy_left` (a state dir emptied) |
| `runsc.py` | runsc command lines, running them, reaping its helpers |
| `platform.py` | the platform (systrap where a probe works, else ptrace) and why |
| `record.py`, `store.py` | a sandbox's record (`sandbox.json`); the store and the live handles |
| `bundle.py` | the OCI bundle (`config.json`) and exec process documents |
| `lifecycle.py` | launch, teardown, orphans of a previous run |
| `execs.py`, `outcomes.py` | execs (agent or `runsc exec`); how one that failed ended |
| `files.py`, `usage.py` | files in, out and between sandboxes; a sandbox's usage |
| `snapshots.py`, `pause.py` | snapshots (checkpoint/restore); pause and resume in place |
| `policy.py` | a running sandbox's network policy |
| `network.py`, `netstack.py` | namespaces, veth pairs, iptables chains; netstack or hostinet |
| `agent/` | the exec agent (PID 1 inside; stdlib only, the directory mounted read-only) |
| `agent_boot.py` | how it gets in: its mount, PID 1's program, the capabilities it keeps |
| `agent_link.py`, `agent_execution.py` | its host side: the link, an exec through it |
| `agent_frames.py`, `agent_pipes.py` | the link's frames and answers; its pipes (transports) |
| `agent_hold.py` | what the link holds back around a checkpoint, and for how long |
| `cgroups.py`, `host_memory.py` | host cgroups; the host memory all sandboxes may hold |
| `sandbox_cgroups.py` | where sandboxes' cgroups go: `/airlock`, or below the node's own cgroup |
| `reaper.py`, `hostproc.py` | child-subreaper reaping; host process helpers |
| `inside.py` | scripts run inside a sandbox (kill a tree, find held pipes) |
"""

from .leftovers import destroy_left
from .platform import PlatformChoice, choose_platform
from .runtime import GVisorRuntime

__all__ = ["GVisorRuntime", "PlatformChoice", "choose_platform", "destroy_left"]

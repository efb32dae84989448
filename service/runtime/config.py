"""The runtimes' configuration: one typed value built once from the settings.

`create_app` (and the `airlock review` command) build a `RuntimeConfig` from `Settings` once
and hand it whole to `select.open_runtime`, which hands it whole to the runtime it picks
(`GVisorRuntime.from_config`, `BoxliteRuntime.from_config`). Nothing on the way picks
settings out one by one, so a runtime setting cannot be dropped between the environment and
the runtime: a new one is a field here, read in `from_settings`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from service.settings import Settings

RuntimeName = Literal["auto", "boxlite", "gvisor"]
# gVisor: where the addresses of sandbox networks come from unless the operator says.
DEFAULT_RANGE = "10.231.0.0/16"


@dataclass(frozen=True)
class RuntimeConfig:
    state_dir: Path
    # `auto` probes BoxLite and falls back to gVisor (select.py).
    runtime: RuntimeName = "auto"
    # gVisor: the runsc platform (None: systrap where a probe runs, else ptrace; platform.py).
    runsc_platform: str | None = None
    # gVisor: the private IPv4 range the addresses of sandbox networks come from.
    network_range: str = DEFAULT_RANGE
    # gVisor: the host memory all sandboxes may be promised together (None: from MemTotal).
    host_memory_mib: int | None = None
    # gVisor: the exec agent as PID 1 where the image has python3.
    use_agent: bool = True
    # gVisor: sandboxes count `ceil(vcpus)` CPUs (else at least 2; see bundle.boot_cpus).
    exact_nproc: bool = True
    # gVisor: the cgroup sandboxes go below: an absolute path of the host's cgroup tree, or
    # `self` (below the cgroup this process runs in; gvisor/sandbox_cgroups.py).
    cgroup_parent: str = "/airlock"
    # BoxLite: the registries (or repository prefixes) a tenant's image may be pulled from;
    # empty: none, only local images; "*": any.
    image_registries: tuple[str, ...] = ()
    # Templates are snapshotted (AIRLOCK_TEMPLATE_SNAPSHOTS=auto); False (off): the warm pool
    # pre-starts members from the image with the template's setup run. `airlock doctor` says so.
    template_snapshots: bool = True

    @classmethod
    def from_settings(cls, settings: Settings) -> RuntimeConfig:
        return cls(
            state_dir=Path(settings.state_dir),
            runtime=settings.runtime,  # type: ignore[arg-type]  (Settings.validate checks it)
            runsc_platform=settings.runsc_platform,
            network_range=settings.sandbox_network_range,
            host_memory_mib=settings.host_memory_mib,
            exact_nproc=settings.exact_nproc,
            cgroup_parent=settings.cgroup_parent,
            image_registries=settings.image_registry_list,
            template_snapshots=settings.template_snapshots != "off",
        )

"""A sandbox's record, `<root>/sandboxes/<id>/sandbox.json`: what a restarted service finds.

Written whole on every change (`records.write_json`). Records of earlier versions lack the
keys added since (`writable`, `net_stack`, `memory_limit_mib`, `cgroup`, a string `agent`):
each reads as None, and the code that reads it says what None means there. Keys this version
does not know are ignored. The keys set during a sandbox's life (its network, disk, rootfs,
pause, failure, whether `runsc exec` ran) are written only once set, as they always were.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec

from .. import records
from ..types import SandboxSpec

FILE = "sandbox.json"


class SandboxRecord(msgspec.Struct, kw_only=True):
    id: str = ""
    image: str = ""
    image_digest: str = ""
    spec: SandboxSpec = msgspec.field(default_factory=SandboxSpec)
    path_env: str | None = None  # the image's PATH
    created_at: float = 0.0
    owner: dict[str, Any] | None = None  # the service process: {"pid", "start"}
    from_snapshot: str | None = None
    cgroup: str | None = None  # its host cgroup (None: below the store's parent)
    agent: str | bool | None = None  # where its exec agent is mounted (agent_boot.mounted_at)
    memory_limit_mib: int | None = None  # admitted against the host's memory
    writable: str | None = None  # where its writable space is (bundle.layout_of)
    net_stack: str | None = None  # the stack its network runs on (network.stack_of)
    # Set during its life.
    net: dict[str, Any] | None = None  # its network slot (network.Slot)
    disk: str | None = None  # its disk's mount point (disk.py)
    rootfs: str | None = None
    runsc_execs: bool | None = None  # something ran through `runsc exec` since it started
    paused: dict[str, Any] | None = None  # {"at", "size_bytes", "snapshot"} while paused
    failure_reason: str | None = None

    @classmethod
    def read(cls, path: Path) -> SandboxRecord:
        """The record in `path`; OSError when unreadable, msgspec.DecodeError when malformed
        (ValidationError, one kind of it, when a key holds the wrong type)."""
        return msgspec.json.decode(path.read_bytes(), type=cls)

    def write(self, path: Path) -> None:
        records.write_json(path, self.to_dict())

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = msgspec.to_builtins(self)
        return {
            key: value for key, value in data.items() if key not in SET_LATER or value is not None
        }

    def __getitem__(self, key: str) -> Any:
        """A field by its key in sandbox.json (for tools and tests that know the file)."""
        if key not in self.__struct_fields__:
            raise KeyError(key)
        return getattr(self, key)


SET_LATER = frozenset({"net", "disk", "rootfs", "runsc_execs", "paused", "failure_reason"})

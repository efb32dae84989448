"""What the parts of the BoxLite runtime share: the boxes this process made, and starting one.

`BoxliteRuntime` (runtime.py) is assembled from parts by responsibility: images.py (local
layouts and registry pulls), execs.py, files.py, snapshots.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import RuntimeUnavailable, SandboxNotFound
from ..types import SandboxInfo, SandboxSpec
from .errors import typed_error
from .execution import BoxExecution
from .native import bounded, describe, log_excerpts
from .options import Security, box_options

START_TIMEOUT_S = 180.0  # image preparation from the layout happens inside the first start


@dataclass(frozen=True)
class ImageSource:
    """Where a box's root filesystem comes from: a local OCI layout or a registry reference."""

    name: str
    digest: str
    rootfs_path: Path | None = None
    reference: str | None = None


@dataclass
class Sandbox:
    box: Any
    info: SandboxInfo
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    execs: dict[str, BoxExecution] = field(default_factory=dict)
    starting: int = 0  # execs being started and file reads in flight

    def __post_init__(self) -> None:
        self.ready.set()

    @property
    def busy(self) -> bool:
        return self.starting > 0 or any(not e.done for e in self.execs.values())


class Core:
    name = "boxlite"

    state_dir: Path
    home: Path  # BoxLite's home: its boxes, images and logs
    snapshots_dir: Path
    security: Security
    start_timeout_s: float
    _runtime: Any  # the native `boxlite.Boxlite`
    _sandboxes: dict[str, Sandbox]

    def _sandbox(self, sandbox_id: str) -> Sandbox:
        sandbox = self._sandboxes.get(sandbox_id)
        if sandbox is None:
            raise SandboxNotFound(sandbox_id)
        return sandbox

    def _track(self, box: Any, info: SandboxInfo) -> Sandbox:
        sandbox = Sandbox(box, info)
        self._sandboxes[info.id] = sandbox
        return sandbox

    async def _new_box(self, source: ImageSource, spec: SandboxSpec) -> Any:
        # Resolving the allowlist's names may wait on DNS: not on the event loop.
        options = await asyncio.to_thread(
            box_options, spec, source.rootfs_path, image=source.reference, security=self.security
        )
        try:
            return await self._runtime.create(options, name=None)
        except Exception as exc:
            raise typed_error(exc, "create") from exc

    async def _discard(self, box_id: str) -> None:
        with contextlib.suppress(Exception):
            await bounded(self._runtime.remove(box_id, force=True), 30)

    async def _start_box(self, box: Any, *, discard: bool = True) -> None:
        """Start (boot) a box within `start_timeout_s`; a failure says what BoxLite saw.

        A VM that cannot boot is RuntimeUnavailable with BoxLite's error and the telling lines
        of its logs. The box is removed unless `discard` is false.
        """
        try:
            await bounded(box.start(), self.start_timeout_s)
            return
        except TimeoutError:
            failure: BaseException | None = None
            head = f"the box did not boot within {self.start_timeout_s:g} s"
        except Exception as exc:
            failure, head = exc, describe(exc)
        diagnosis = f"{head}\n{log_excerpts(self.home, box.id)}".strip()
        if discard:
            await self._discard(box.id)
        if failure is None:
            raise RuntimeUnavailable("boxlite", diagnosis)
        raise typed_error(failure, "start", diagnosis=diagnosis) from failure

"""BoxLite's exceptions as the runtime's typed errors (by BoxLite's own error classes)."""

from __future__ import annotations

from ..errors import (
    ImageNotFound,
    InvalidSpec,
    ResourceExhausted,
    RuntimeUnavailable,
    SandboxBusy,
    SandboxFailed,
    SandboxNotFound,
    SandboxRuntimeError,
    SnapshotNotFound,
)
from .native import describe


class ImagePullFailed(ImageNotFound):
    """A registry image could not be pulled; `detail` carries BoxLite's own message."""

    def __init__(self, image: str, detail: str) -> None:
        super().__init__(image)
        self.detail = detail
        self.args = (f"image not found: {image} (pull failed: {detail})",)

    def public(self) -> str:
        return f"image not found: {self.image} (the registry pull failed)"


def typed_error(
    exc: BaseException,
    what: str,
    *,
    sandbox_id: str | None = None,
    snapshot_id: str | None = None,
    diagnosis: str | None = None,
) -> SandboxRuntimeError:
    """The runtime error for a BoxLite exception (by BoxLite's own error classes)."""
    if isinstance(exc, SandboxRuntimeError):
        return exc
    from boxlite import errors as lib

    text = describe(exc)
    if isinstance(exc, lib.EngineError):  # the VM could not be started or died
        return RuntimeUnavailable("boxlite", diagnosis or text)
    if isinstance(exc, lib.NotFoundError):
        if snapshot_id is not None:
            return SnapshotNotFound(snapshot_id)
        if sandbox_id is not None:
            return SandboxNotFound(sandbox_id)
    if isinstance(exc, lib.InvalidStateError):
        return SandboxBusy(f"{what}: {text}")
    if isinstance(exc, lib.StoppedError) and sandbox_id is not None:
        return SandboxFailed(sandbox_id, "stopped", text)
    if isinstance(exc, lib.ResourceExhaustedError):
        return ResourceExhausted(f"{what}: {text}")
    if isinstance(exc, lib.InvalidArgumentError):
        return InvalidSpec(f"{what}: {text}")
    return SandboxRuntimeError(f"boxlite {what} failed: {text}")

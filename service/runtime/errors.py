"""Typed runtime errors.

Callers map these by type (for example to HTTP problem codes); the message is for humans only.
A message may carry what runsc, iptables or BoxLite said, with host paths and ids: a tenant sees
`public()` instead, and the whole message goes to the server's log.
"""

from __future__ import annotations

from typing import ClassVar


class SandboxRuntimeError(Exception):
    """Base of every error raised by a sandbox runtime."""

    # Whether the message is the runtime's own words about the tenant's request (then the
    # tenant reads it as it is), rather than a host tool's output.
    tenant_safe: ClassVar[bool] = False

    def public(self) -> str:
        """What a tenant may read of this error."""
        return str(self) if self.tenant_safe else "the sandbox runtime failed on the host"


class RuntimeUnavailable(SandboxRuntimeError):
    """The runtime cannot work on this machine; `diagnosis` says why and what would fix it."""

    def __init__(self, runtime: str, diagnosis: str) -> None:
        super().__init__(f"{runtime} runtime unavailable: {diagnosis}")
        self.runtime = runtime
        self.diagnosis = diagnosis

    def public(self) -> str:
        return f"the {self.runtime} runtime is unavailable on this host"


class ImageNotFound(SandboxRuntimeError):
    tenant_safe = True

    def __init__(self, image: str) -> None:
        super().__init__(f"image not found: {image}")
        self.image = image


class ImageNotAllowed(SandboxRuntimeError):
    """A registry reference outside the registries the operator allows (IMAGE_REGISTRIES)."""

    tenant_safe = True

    def __init__(self, image: str) -> None:
        super().__init__(f"image {image!r} is not in a registry this service may pull from")
        self.image = image


class ImageBuildFailed(SandboxRuntimeError):
    """Building or importing an image failed; the message carries the failing step."""


class InvalidImage(SandboxRuntimeError):
    """An OCI layout is malformed or uses something this runtime does not support."""

    def public(self) -> str:
        return "the image cannot be used by this runtime"


class SandboxNotFound(SandboxRuntimeError):
    tenant_safe = True

    def __init__(self, sandbox_id: str) -> None:
        super().__init__(f"sandbox not found: {sandbox_id}")
        self.sandbox_id = sandbox_id


class SnapshotNotFound(SandboxRuntimeError):
    tenant_safe = True

    def __init__(self, snapshot_id: str) -> None:
        super().__init__(f"snapshot not found: {snapshot_id}")
        self.snapshot_id = snapshot_id


class ExecNotFound(SandboxRuntimeError):
    tenant_safe = True

    def __init__(self, exec_id: str) -> None:
        super().__init__(f"exec not found: {exec_id}")
        self.exec_id = exec_id


class SandboxFailed(SandboxRuntimeError):
    """The sandbox died (for example killed by the memory cap: reason "oom") and cannot be used."""

    def __init__(self, sandbox_id: str, reason: str, detail: str = "") -> None:
        text = f"sandbox {sandbox_id} failed: {reason}"
        super().__init__(f"{text} ({detail})" if detail else text)
        self.sandbox_id = sandbox_id
        self.reason = reason
        self.detail = detail

    def public(self) -> str:
        return f"the sandbox failed: {self.reason}"


class SandboxBusy(SandboxRuntimeError):
    """The operation needs the sandbox idle (for example a snapshot while an exec runs)."""

    tenant_safe = True


class NotSupported(SandboxRuntimeError):
    """This runtime lacks an optional capability (see `protocol.Capability`); callers ask
    `runtime.supports(...)` first, so this reaches a tenant only as a 501."""

    tenant_safe = True

    def __init__(self, runtime: str, capability: str) -> None:
        super().__init__(f"the {runtime} runtime cannot {capability}")
        self.runtime = runtime
        self.capability = capability


class PortNotListening(SandboxRuntimeError):
    """Nothing inside the sandbox accepts connections on this TCP port."""

    tenant_safe = True

    def __init__(self, port: int, why: str = "nothing listens there") -> None:
        super().__init__(f"port {port} inside the sandbox (127.0.0.1 or ::1): {why}")
        self.port = port


class ResourceExhausted(SandboxRuntimeError):
    """The host cannot take more (disk, processes) or a request exceeds a hard runtime limit."""

    tenant_safe = True


class InvalidSpec(SandboxRuntimeError):
    """A sandbox spec or exec request is out of range."""

    tenant_safe = True


class TtyUnsupported(InvalidSpec):
    """An exec asked for a terminal (`ExecRequest.tty`) where this sandbox cannot give one,
    or a resize of an exec that has none."""


class InvalidPath(SandboxRuntimeError):
    """A sandbox file path is not acceptable (`..`, NUL, empty, ...)."""

    tenant_safe = True

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"invalid path {path!r}: {why}")
        self.path = path
        self.why = why


class PathNotFound(SandboxRuntimeError):
    tenant_safe = True

    def __init__(self, path: str) -> None:
        super().__init__(f"no such file in sandbox: {path}")
        self.path = path


class FileTooLarge(SandboxRuntimeError):
    """A read with a limit met a file longer than it. `size` is the file's own (its target's,
    for a link) when it is a regular file, None when more bytes came than the limit allows
    (a device, a pipe, a file that grew while it was read)."""

    tenant_safe = True

    def __init__(self, path: str, limit: int, size: int | None = None) -> None:
        how = f"is {size} bytes" if size is not None else "gave more bytes than that"
        super().__init__(f"{path} {how}; at most {limit} bytes may be read from it here")
        self.path = path
        self.limit = limit
        self.size = size


class PathNotAllowed(SandboxRuntimeError):
    """The sandbox refused the file operation (permission denied, is a directory, disk full...)."""

    tenant_safe = True

    def __init__(self, path: str, why: str) -> None:
        super().__init__(f"cannot access {path!r} in sandbox: {why}")
        self.path = path
        self.why = why

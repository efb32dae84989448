"""Starting sandboxes from a template build: the setup steps, the snapshot, and starts from it.

Shared by the template builder, the sandbox create path (a cold start from a template) and the
pool refiller. No database here: callers pass a `Recipe` read in their own short transaction.

Networks: the setup steps run under the template's policy. A gVisor sandbox with a network
runs on the host stack of its own namespace, which runsc cannot checkpoint, and a checkpoint
taken without a network cannot be restored onto a host stack (see runtime/README.md). So the
files the setup wrote are carried (`copy_files`: tar inside both sandboxes) from the networked
build sandbox into a fresh one without network, and that one is snapshotted; a sandbox asked
for with a network starts from the image with that network and gets the files of a sandbox
restored from the snapshot. Such a start carries files, not processes or memory.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shlex
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from service.db.models import TemplateVersion
from service.runtime import (
    ExecRequest,
    InvalidSpec,
    SandboxInfo,
    SandboxRuntime,
    SandboxRuntimeError,
    SandboxSpec,
    SnapshotInfo,
)
from service.sandboxes.schemas import SandboxNetwork
from service.sandboxes.service import check_network
from service.tenants.schemas import Quotas

log = logging.getLogger("airlock.templates")

LOG_CAP = 64 << 10  # bytes of build log kept per version; the rest is cut
STEP_OUTPUT_CAP = 16 << 10
STEP_TIMEOUT_S = 600.0


# A network policy: mode ("none", "allowlist", "open") and the allow entries.
Policy = tuple[str, tuple[str, ...]]
NO_NETWORK: Policy = ("none", ())


def policy_of(network: dict[str, Any] | None) -> Policy:
    network = network or {}
    return str(network.get("mode", "none")), tuple(network.get("allow") or ())


def describe(policy: Policy) -> str:
    mode, allow = policy
    return f"allowlist {', '.join(allow) or '(empty)'}" if mode == "allowlist" else mode


@dataclass(frozen=True)
class Recipe:
    version_id: str
    image: str
    size: str
    setup: list[list[str]]
    cpus: int
    memory_mib: int
    disk_mib: int
    env: dict[str, str]
    snapshot_id: str | None
    # The template's network policy, under which the setup steps run.
    network: Policy = NO_NETWORK
    # The private ranges granted to whoever starts its sandboxes (the template's owner for a
    # build, the creating tenant otherwise): see runtime/egress.py.
    private: tuple[str, ...] = ()

    @classmethod
    def of(cls, row: TemplateVersion, private: Sequence[str] = ()) -> Recipe:
        return cls(
            version_id=row.id,
            image=row.image,
            size=row.size,
            setup=[list(step) for step in row.setup],
            cpus=row.cpus,
            memory_mib=row.memory_mib,
            disk_mib=row.disk_mib,
            env=dict(row.env),
            snapshot_id=row.snapshot_id,
            network=policy_of(row.network),
            private=tuple(private),
        )

    def spec(self, network: Policy = NO_NETWORK) -> SandboxSpec:
        mode, allow = network
        return SandboxSpec(
            vcpus=float(self.cpus),
            memory_mib=self.memory_mib,
            disk_mib=self.disk_mib,
            env=dict(self.env),
            network=mode,  # type: ignore[arg-type]
            network_allow=list(allow),
            network_private=list(self.private),
        )


def check_policy(recipe: Recipe, owner: Quotas | None, *, building: bool = False) -> None:
    """Raise unless the template's network is one its owner may have now, wherever it is in
    force: in a build (the setup runs under it) and in a start of a build without a snapshot
    (the setup runs again in each new sandbox). `owner`: the owning tenant's quotas as they
    are now; None for the operator's templates (the operator is who grants)."""
    if owner is None or not (building or recipe.snapshot_id is None):
        return
    mode, allow = recipe.network
    check_network(msgspec.convert({"mode": mode, "allow": list(allow)}, SandboxNetwork), owner)


def with_grants(recipe: Recipe, private: Sequence[str]) -> Recipe:
    """The recipe for sandboxes started by a tenant granted `private`."""
    return dataclasses.replace(recipe, private=tuple(private))


@dataclass
class BuildLog:
    text: str = ""
    cut: bool = False
    lines: list[str] = field(default_factory=list)

    def add(self, piece: str) -> None:
        if self.cut:
            return
        room = LOG_CAP - len(self.text.encode())
        data = piece.encode()
        if len(data) > room:
            self.text += data[:room].decode(errors="ignore") + "\n[build log cut]\n"
            self.cut = True
        else:
            self.text += piece


class SetupFailed(Exception):
    def __init__(self, step: int, why: str) -> None:
        super().__init__(f"setup step {step} {why}")


async def run_setup(
    runtime: SandboxRuntime, sandbox_id: str, steps: list[list[str]], log_out: BuildLog
) -> None:
    """Run each step in order, as the sandbox user in /work; the first failure stops it."""
    for number, argv in enumerate(steps, 1):
        log_out.add(f"$ {shlex.join(argv)}\n")
        result = await runtime.run(
            sandbox_id,
            ExecRequest(
                argv=argv, cwd="/work", timeout_s=STEP_TIMEOUT_S, output_cap=STEP_OUTPUT_CAP
            ),
        )
        for data, truncated in (
            (result.stdout, result.stdout_truncated),
            (result.stderr, result.stderr_truncated),
        ):
            if data:
                log_out.add(data.decode(errors="replace"))
                if not data.endswith(b"\n"):
                    log_out.add("\n")
            if truncated:
                log_out.add("[output cut]\n")
        log_out.add(f"[{result.outcome} {result.exit_code}]\n")
        if result.outcome != "exited" or result.exit_code != 0:
            raise SetupFailed(number, f"ended {result.outcome} with {result.exit_code}")


def can_carry(runtime: SandboxRuntime) -> bool:
    return runtime.supports("copy_files")


async def prepare(
    runtime: SandboxRuntime, recipe: Recipe, log_out: BuildLog, network: Policy | None = None
) -> SandboxInfo:
    """A sandbox from the image with the setup steps run under `network` (the template's
    policy by default); destroyed again if a step fails."""
    policy = recipe.network if network is None else network
    if policy != NO_NETWORK:
        log_out.add(f"network: {describe(policy)}\n")
    return await _created(
        runtime, recipe, policy, lambda box: run_setup(runtime, box, recipe.setup, log_out)
    )


async def carry(
    runtime: SandboxRuntime, recipe: Recipe, source_id: str, network: Policy
) -> SandboxInfo:
    """A new sandbox from the image with `network`, holding the files `source_id` wrote."""
    return await _created(runtime, recipe, network, lambda box: runtime.copy_files(source_id, box))


async def _created(
    runtime: SandboxRuntime,
    recipe: Recipe,
    network: Policy,
    then: Callable[[str], Awaitable[object]],
) -> SandboxInfo:
    """A new sandbox from the image with `network`, once `then` is done with it (given its
    id); destroyed again if that fails."""
    info = await runtime.create(recipe.image, recipe.spec(network))
    try:
        await then(info.id)
    except BaseException:
        with contextlib.suppress(SandboxRuntimeError):
            await runtime.destroy(info.id)
        raise
    return info


async def build(
    runtime: SandboxRuntime, recipe: Recipe, log_out: BuildLog, *, snapshots: bool = True
) -> SnapshotInfo | None:
    """Prepare a sandbox and snapshot it. None: the runtime cannot snapshot here, and
    sandboxes of this version start from the image with the setup run again."""
    info = await prepare(runtime, recipe, log_out)
    sources = [info.id]
    try:
        if not snapshots:
            log_out.add("snapshots are off on this server: sandboxes start from the image\n")
            return None
        if recipe.network != NO_NETWORK:
            if not can_carry(runtime):
                log_out.add(
                    f"the {runtime.name} runtime cannot move files out of a sandbox with a "
                    "network: sandboxes start from the image with the setup run again\n"
                )
                return None
            # The networked sandbox cannot be checkpointed: its files go to one without network.
            info = await carry(runtime, recipe, info.id, NO_NETWORK)
            sources.append(info.id)
            log_out.add("files carried to a sandbox without network for the snapshot\n")
        try:
            snapshot = await runtime.snapshot(info.id)
        except SandboxRuntimeError as exc:
            log.warning("snapshot of a template build failed: %s", exc)
            log_out.add(f"snapshot not possible here ({type(exc).__name__}: {exc.public()}); ")
            log_out.add("sandboxes start from the image with the setup run again\n")
            return None
        log_out.add(f"snapshot {snapshot.id}: {snapshot.size_bytes} bytes\n")
        return snapshot
    finally:
        for sandbox_id in sources:
            with contextlib.suppress(SandboxRuntimeError):
                await runtime.destroy(sandbox_id)


async def start(
    runtime: SandboxRuntime, recipe: Recipe, network: Policy = NO_NETWORK
) -> SandboxInfo:
    """A running sandbox of this build with `network`: restored from its snapshot, or
    prepared from the image; with a network the build's files are carried into a sandbox
    started from the image with that network (see the module's docstring)."""
    if network == NO_NETWORK and recipe.snapshot_id is not None:
        return await runtime.create_from_snapshot(recipe.snapshot_id, list(recipe.private))
    if recipe.snapshot_id is None and network == recipe.network:
        return await prepare(runtime, recipe, BuildLog())
    if not can_carry(runtime):
        raise InvalidSpec(
            f"the {runtime.name} runtime cannot start a sandbox from a template with a network "
            "other than the template's own"
        )
    if recipe.snapshot_id is not None:
        source = await runtime.create_from_snapshot(recipe.snapshot_id, list(recipe.private))
    else:
        source = await prepare(runtime, recipe, BuildLog())
    try:
        return await carry(runtime, recipe, source.id, network)
    finally:
        with contextlib.suppress(SandboxRuntimeError):
            await runtime.destroy(source.id)

"""Fixtures for the runtime conformance suite.

`runtime` is parametrized over every runtime: gVisor must work (the setup script installs it),
once with execs through the in-sandbox exec agent (`gvisor`, on the platform the service
would choose) and once through `runsc exec` only (`gvisor-runsc`, the fallback), and again on
ptrace when the chosen platform is systrap (`gvisor-ptrace`); BoxLite end-to-end cases skip
with the boot probe's own diagnosis where no VM can boot.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from service.runtime import SandboxInfo, SandboxRuntime, SandboxSpec, images, select
from service.runtime.boxlite import BoxliteRuntime, ProbeResult
from service.runtime.errors import RuntimeUnavailable
from service.runtime.gvisor import GVisorRuntime

REPO = Path(__file__).resolve().parents[2]


def runtime_state_dir() -> Path:
    """The same state dir the service and `scripts/runtime-setup.sh` use, so images are shared."""
    return Path(os.environ.get("AIRLOCK_STATE_DIR") or REPO / ".airlock").resolve()


@pytest.fixture(scope="session")
def state_dir() -> Path:
    path = runtime_state_dir()
    images.build_default_image(path)  # instant when the image is already built
    return path


def runsc_platform() -> str | None:
    """`AIRLOCK_RUNSC_PLATFORM` as the service reads it (None: chosen by the probe), so the
    suite runs on either platform: `AIRLOCK_RUNSC_PLATFORM=ptrace pytest tests/runtime`."""
    return os.environ.get("AIRLOCK_RUNSC_PLATFORM") or None


@pytest.fixture(scope="session")
async def boxlite_probe(state_dir: Path) -> ProbeResult:
    return await select.probe_boxlite(state_dir)


@pytest.fixture(scope="session")
async def gvisor(state_dir: Path) -> AsyncIterator[GVisorRuntime]:
    try:
        runtime = await GVisorRuntime.open(state_dir, runsc_platform())
    except RuntimeUnavailable as exc:
        pytest.fail(f"gVisor must work on test machines: {exc.diagnosis}")
    yield runtime
    await runtime.close()


@pytest.fixture(scope="session")
async def gvisor_runsc(state_dir: Path) -> AsyncIterator[GVisorRuntime]:
    """gVisor without the exec agent: every exec is a `runsc exec`."""
    runtime = await GVisorRuntime.open(state_dir, runsc_platform(), use_agent=False)
    yield runtime
    await runtime.close()


@pytest.fixture(scope="session")
async def gvisor_ptrace(
    state_dir: Path, gvisor: GVisorRuntime
) -> AsyncIterator[GVisorRuntime | None]:
    """gVisor on ptrace, the fallback platform, when the chosen one is another (systrap);
    None when `gvisor` is on ptrace already."""
    if gvisor.platform == "ptrace":
        yield None
        return
    runtime = await GVisorRuntime.open(state_dir, "ptrace")
    yield runtime
    await runtime.close()


@pytest.fixture(scope="session", params=["gvisor", "gvisor-runsc", "gvisor-ptrace", "boxlite"])
async def runtime(
    request: pytest.FixtureRequest,
    state_dir: Path,
    boxlite_probe: ProbeResult,
    gvisor: GVisorRuntime,
    gvisor_runsc: GVisorRuntime,
    gvisor_ptrace: GVisorRuntime | None,
) -> AsyncIterator[SandboxRuntime]:
    if request.param == "gvisor":
        yield gvisor
        return
    if request.param == "gvisor-runsc":
        yield gvisor_runsc
        return
    if request.param == "gvisor-ptrace":
        if gvisor_ptrace is None:
            pytest.skip(f"gvisor runs on ptrace here already ({gvisor.platform_choice.reason})")
        yield gvisor_ptrace
        return
    if not boxlite_probe.ok:
        pytest.skip(f"BoxLite cannot boot a VM on this host: {boxlite_probe.diagnosis[:400]}")
    runtime = await BoxliteRuntime.open(state_dir, boxlite_probe)
    yield runtime
    await runtime.close()


SandboxFactory = Callable[..., Awaitable[SandboxInfo]]


@pytest.fixture
async def make_sandbox(runtime: SandboxRuntime) -> AsyncIterator[SandboxFactory]:
    """Create sandboxes (default image, small caps unless given); all destroyed afterwards."""
    made: list[str] = []

    async def make(**caps: object) -> SandboxInfo:
        spec = SandboxSpec(**{"memory_mib": 256, "disk_mib": 64, "pids": 64, **caps})
        info = await runtime.create(images.DEFAULT_IMAGE, spec)
        made.append(info.id)
        if uses_agent(runtime):
            # execs use `runsc exec` until the agent said hello: wait, so they take its path
            assert await runtime.agent_ready(info.id), "the exec agent did not come up"
        return info

    yield make
    for sandbox_id in made:
        await runtime.destroy(sandbox_id)


@pytest.fixture
async def sandbox(make_sandbox: SandboxFactory) -> SandboxInfo:
    return await make_sandbox()


def uses_agent(runtime: SandboxRuntime) -> bool:
    return isinstance(runtime, GVisorRuntime) and runtime.use_agent


def init_name(runtime: SandboxRuntime) -> str:
    """The command name of PID 1 in the default image."""
    return "airlock-agent" if uses_agent(runtime) else "airlock-init"

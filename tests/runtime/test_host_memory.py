"""gVisor host admission: sandboxes are started only while their memory limits (memory +
writable space + the sandbox kernel) fit the host budget, counted across a restart."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.runtime import ResourceExhausted, images
from service.runtime.gvisor import GVisorRuntime, bundle
from service.runtime.types import SandboxSpec

SPEC = SandboxSpec(memory_mib=128, disk_mib=64, pids=64)
LIMIT = bundle.memory_limit_mib(SPEC, with_home=True)  # the default image has a home


@pytest.fixture
def own_state(state_dir: Path, tmp_path: Path) -> Path:
    (tmp_path / "images").symlink_to(images.images_dir(state_dir).resolve())
    return tmp_path


async def test_admission_holds_across_a_restart(own_state: Path) -> None:
    budget = LIMIT + LIMIT // 2  # room for one such sandbox
    first = await GVisorRuntime.open(own_state, host_memory_mib=budget)
    made = []
    try:
        made.append((await first.create(images.DEFAULT_IMAGE, SPEC)).id)
        with pytest.raises(ResourceExhausted):
            await first.create(images.DEFAULT_IMAGE, SPEC)
        assert first.host_memory.held_mib == LIMIT
        # A new process on the same state dir counts the sandbox the last one left running.
        second = await GVisorRuntime.open(own_state, host_memory_mib=budget)
        try:
            assert second.host_memory.held_mib == LIMIT
            with pytest.raises(ResourceExhausted):
                await second.create(images.DEFAULT_IMAGE, SPEC)
            await second.destroy(made.pop())
            assert second.host_memory.held_mib == 0
            made.append((await second.create(images.DEFAULT_IMAGE, SPEC)).id)
            await second.destroy(made.pop())
        finally:
            await second.close()
    finally:
        for sandbox_id in made:
            await first.destroy(sandbox_id)
        await first.close()

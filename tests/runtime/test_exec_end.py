"""How an exec that did not succeed is named, from the memory cgroup's OOM count and whether
the sandbox ended with it; and that count as the kernel keeps it."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.runtime import ExecRequest, SandboxSpec
from service.runtime.gvisor import GVisorRuntime, cgroups
from service.runtime.gvisor.outcomes import exec_end

from .helpers import MEMORY_HOG


@pytest.mark.parametrize(
    ("code", "oom_killed", "ended", "recent_oom", "pids_hit", "expected"),
    [
        # the OOM killer struck: `oom`, the sandbox failed only if it went too
        (None, True, False, False, False, ("oom", None)),
        (1, True, False, False, False, ("oom", None)),
        (None, True, True, False, False, ("oom", "oom")),
        (None, True, True, True, False, ("oom", "oom")),
        # found dead just after an exec saw the OOM killer: this exec was cut, the sandbox oom
        (128, False, True, True, False, ("killed", "oom")),
        (None, False, True, True, False, ("killed", "oom")),
        # died otherwise: `killed`, why as far as the counters tell
        (None, False, True, False, False, ("killed", "crashed")),
        (None, False, True, False, True, ("killed", "pids")),
        (137, False, True, True, True, ("killed", "pids")),
        # the sandbox lives on: the exec's own failure
        (137, False, False, True, False, ("exited", None)),
        (1, False, True, True, False, ("exited", None)),
        (1, False, False, False, False, ("exited", None)),
    ],
)
def test_an_exec_that_did_not_succeed_is_named_by_what_the_cgroup_saw(
    code: int | None,
    oom_killed: bool,
    ended: bool,
    recent_oom: bool,
    pids_hit: bool,
    expected: tuple[str, str | None],
) -> None:
    got = exec_end(code, oom_killed, sandbox_ended=ended, recent_oom=recent_oom, pids_hit=pids_hit)
    assert got == expected


def test_oom_kills_read_v1_and_v2_files_and_none_once_gone(tmp_path: Path) -> None:
    v1 = tmp_path / "v1"
    (v1 / "memory" / "box").mkdir(parents=True)
    (v1 / "memory" / "box" / "memory.oom_control").write_text(
        "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"
    )
    assert cgroups.Cgroup("/box", root=v1).oom_kills() == 3

    v2 = tmp_path / "v2"
    (v2 / "box").mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpu memory pids\n")
    (v2 / "box" / "memory.events").write_text(
        "low 0\nhigh 0\nmax 42\noom 2\noom_kill 2\noom_group_kill 0\n"
    )
    assert cgroups.Cgroup("/box", root=v2).oom_kills() == 2

    assert cgroups.Cgroup("/gone", root=v1).oom_kills() is None
    assert cgroups.Cgroup("/gone", root=v2).oom_kills() is None


async def test_a_hog_at_the_cap_shows_in_the_sandbox_cgroups_count(gvisor: GVisorRuntime) -> None:
    """On the real runtime: a hog past the cap is OOM-killed and the sandbox's own cgroup
    counts it; a quiet exec does not move the count."""
    box = await gvisor.create("default", SandboxSpec(memory_mib=64, disk_mib=16))
    try:
        cgroup = cgroups.Cgroup(gvisor.cgroup_path(box.id))
        before = cgroup.oom_kills()
        assert before is not None
        quiet = await gvisor.run(box.id, ExecRequest(argv=["true"], timeout_s=30))
        assert quiet.outcome == "exited"
        assert cgroup.oom_kills() == before
        hog = ExecRequest(argv=["python3", "-c", MEMORY_HOG], timeout_s=60)
        result = await gvisor.run(box.id, hog)
        assert result.outcome == "oom"
        after = cgroup.oom_kills()
        assert after is not None and after > before
    finally:
        await gvisor.destroy(box.id)

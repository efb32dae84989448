"""How an exec that did not succeed is named, from the memory cgroup's counters and whether
the sandbox ended with it; and those counters as the kernel writes them."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.runtime import ExecRequest, SandboxSpec
from service.runtime.gvisor import GVisorRuntime, cgroups
from service.runtime.gvisor.execs import exec_end

NONE = cgroups.MemoryEvents(0, 0)
AT_LIMIT = cgroups.MemoryEvents(0, 40)
OOM_KILL = cgroups.MemoryEvents(1, 40)


@pytest.mark.parametrize(
    ("code", "rose", "ended", "recent_oom", "pids_hit", "expected"),
    [
        # the OOM killer struck: `oom`, the sandbox failed only if it went too
        (None, OOM_KILL, False, False, False, ("oom", None)),
        (1, OOM_KILL, False, False, False, ("oom", None)),
        (None, OOM_KILL, True, False, False, ("oom", "oom")),
        (None, OOM_KILL, True, True, False, ("oom", "oom")),
        # the sandbox died at its memory limit with no kill counted: still `oom`
        (None, AT_LIMIT, True, False, False, ("oom", "oom")),
        (137, AT_LIMIT, True, False, True, ("oom", "oom")),
        # found dead just after an exec saw the OOM killer: this exec was cut, the sandbox oom
        (128, NONE, True, True, False, ("killed", "oom")),
        (None, None, True, True, False, ("killed", "oom")),
        # died otherwise: `killed`, why as far as the counters tell
        (None, NONE, True, False, False, ("killed", "crashed")),
        (None, NONE, True, False, True, ("killed", "pids")),
        (None, None, True, False, False, ("killed", "crashed")),  # its cgroup is unreadable
        # the sandbox lives on: the exec's own failure, whatever the memory did
        (137, AT_LIMIT, False, True, False, ("exited", None)),
        (1, AT_LIMIT, True, True, False, ("exited", None)),
        (1, NONE, False, False, False, ("exited", None)),
    ],
)
def test_an_exec_that_did_not_succeed_is_named_by_what_the_cgroup_saw(
    code: int | None,
    rose: cgroups.MemoryEvents | None,
    ended: bool,
    recent_oom: bool,
    pids_hit: bool,
    expected: tuple[str, str | None],
) -> None:
    got = exec_end(code, rose, sandbox_ended=ended, recent_oom=recent_oom, pids_hit=pids_hit)
    assert got == expected


def test_the_counters_since_a_reading_and_since_none() -> None:
    before = cgroups.MemoryEvents(2, 100)
    assert cgroups.MemoryEvents(3, 160).since(before) == cgroups.MemoryEvents(1, 60)
    assert cgroups.MemoryEvents(2, 100).since(before) == NONE
    assert cgroups.MemoryEvents(3, 5).since(None) == cgroups.MemoryEvents(3, 5)


def test_memory_events_read_v1_and_v2_files_and_none_once_gone(tmp_path: Path) -> None:
    v1 = tmp_path / "v1"
    (v1 / "memory" / "box").mkdir(parents=True)
    (v1 / "memory" / "box" / "memory.oom_control").write_text(
        "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"
    )
    (v1 / "memory" / "box" / "memory.failcnt").write_text("1875\n")
    assert cgroups.Cgroup("/box", root=v1).memory_events() == cgroups.MemoryEvents(3, 1875)

    v2 = tmp_path / "v2"
    (v2 / "box").mkdir(parents=True)
    (v2 / "cgroup.controllers").write_text("cpu memory pids\n")
    (v2 / "box" / "memory.events").write_text(
        "low 0\nhigh 0\nmax 42\noom 2\noom_kill 2\noom_group_kill 0\n"
    )
    assert cgroups.Cgroup("/box", root=v2).memory_events() == cgroups.MemoryEvents(2, 42)

    assert cgroups.Cgroup("/gone", root=v1).memory_events() is None
    assert cgroups.Cgroup("/gone", root=v2).memory_events() is None


async def test_a_hog_at_the_cap_shows_in_the_sandbox_cgroups_counters(
    gvisor: GVisorRuntime,
) -> None:
    """On the real runtime: a hog reaches the limit and is OOM-killed, and the counters of
    the sandbox's own cgroup say both; a quiet exec moves neither."""
    box = await gvisor.create("default", SandboxSpec(memory_mib=64, disk_mib=16))
    try:
        cgroup = cgroups.Cgroup(gvisor.cgroup_path(box.id))
        quiet_before = cgroup.memory_events()
        assert quiet_before is not None
        quiet = await gvisor.run(box.id, ExecRequest(argv=["true"], timeout_s=30))
        assert quiet.outcome == "exited"
        after_quiet = cgroup.memory_events()
        assert after_quiet is not None and after_quiet.since(quiet_before) == NONE
        hog = "x = []\nwhile True:\n    x.append(bytearray(16 << 20))\n"
        result = await gvisor.run(box.id, ExecRequest(argv=["python3", "-c", hog], timeout_s=60))
        assert result.outcome == "oom"
        after = cgroup.memory_events()
        assert after is not None
        rose = after.since(after_quiet)
        assert rose.oom_kills >= 1 and rose.limit_hits >= 1
    finally:
        await gvisor.destroy(box.id)

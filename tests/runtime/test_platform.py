"""The runsc platform: systrap where this runsc offers it and a probe sandbox runs on it,
ptrace otherwise, `AIRLOCK_RUNSC_PLATFORM` forcing one; the choice says why."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from service.runtime.errors import RuntimeUnavailable
from service.runtime.gvisor import GVisorRuntime, choose_platform, platform


def installed_runsc() -> str:
    runsc = shutil.which("runsc")
    assert runsc, "gVisor must be installed on test machines"
    return runsc


def test_the_choice_follows_what_this_runsc_offers() -> None:
    runsc = installed_runsc()
    offered = platform.offered(runsc)
    choice = choose_platform(runsc)
    assert "ptrace" in offered
    if "systrap" in offered:
        # this machine runs systrap sandboxes (measured); the probe says so
        assert choice.name == "systrap" and "probe sandbox ran /bin/true on it" in choice.reason
    else:
        assert choice.name == "ptrace" and "offers no systrap" in choice.reason


def test_the_setting_forces_a_platform_this_runsc_offers() -> None:
    runsc = installed_runsc()
    assert choose_platform(runsc, "ptrace").reason == "AIRLOCK_RUNSC_PLATFORM=ptrace"
    with pytest.raises(RuntimeUnavailable) as refused:
        choose_platform(runsc, "nosuchplatform")
    assert "offers only" in refused.value.diagnosis


def fake_runsc(tmp_path: Path, do_exit: int) -> str:
    """A stand-in runsc offering systrap whose sandboxes fail (a kernel without what
    systrap needs); only the choice's logic is tested with it."""
    script = tmp_path / "runsc"
    script.write_text(
        "#!/bin/sh\n"
        'case "$1" in flags) echo "  -platform string"; '
        'echo "    specifies which platform to use: systrap (default), ptrace, kvm.";; esac\n'
        f'for a; do [ "$a" = do ] && {{ echo "FATAL: no seccomp" >&2; exit {do_exit}; }}; done\n'
        "exit 0\n"
    )
    script.chmod(0o755)
    return str(script)


def test_a_failing_systrap_probe_falls_back_to_ptrace(tmp_path: Path) -> None:
    choice = choose_platform(fake_runsc(tmp_path, 128))
    assert choice.name == "ptrace"
    assert "systrap is offered but a probe sandbox failed" in choice.reason
    assert "no seccomp" in choice.reason


async def test_the_log_says_the_platform_and_why(
    state_dir: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="service.runtime.gvisor.runtime")
    runtime = await GVisorRuntime.open(state_dir)
    try:
        line = next(r.getMessage() for r in caplog.records if "runtime ready" in r.getMessage())
        assert f"platform {runtime.platform_choice}" in line
        assert "runsc version" in line
    finally:
        await runtime.close()


def test_runsc_builds_that_keep_exec_processes_across_a_restore() -> None:
    # measured: bookworm's build restores them, the bookworm-backports one does not
    assert platform.keeps_exec_processes("runsc version 0.0~20221219.0")
    assert not platform.keeps_exec_processes("runsc version 0.0~20240729.0")
    assert not platform.keeps_exec_processes("unknown")  # refusing a snapshot loses nothing


def test_runsc_builds_whose_checkpoint_leaves_the_sandbox_running() -> None:
    # measured: the bookworm-backports build returns with the sandbox running, bookworm's
    # blocks until the sandbox exits (so it checkpoints and restores in place)
    assert platform.checkpoint_leaves_running("runsc version 0.0~20240729.0")
    assert not platform.checkpoint_leaves_running("runsc version 0.0~20221219.0")
    assert not platform.checkpoint_leaves_running("unknown")  # restore in place works anywhere

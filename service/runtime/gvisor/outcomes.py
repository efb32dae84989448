"""How an exec that did not succeed ended, and what its end says of its sandbox."""

from __future__ import annotations

from ..types import Outcome


def exec_end(
    code: int | None,
    oom_killed: bool,
    *,
    sandbox_ended: bool,
    recent_oom: bool,
    pids_hit: bool,
) -> tuple[Outcome, str | None]:
    """An exec that did not succeed: its outcome, and why the sandbox failed if it ended
    with it. `oom_killed`: the memory cgroup counted an OOM kill while the exec ran;
    `recent_oom`: an exec saw one within `execs.OOM_AFTERMATH_S` before this one ended.

    The OOM killer striking means `oom`; under systrap it takes only the address space that
    grew (its process ends, no message) and the sandbox lives on, so counting from each
    exec's own start keeps later execs from being called OOM too. The sandbox may still die
    of it a moment later, with no second kill counted: the next exec to find it gone is
    `killed` (it did not ask for the memory) and the sandbox failed `oom`."""
    if oom_killed:
        return "oom", "oom" if sandbox_ended else None
    if (code is None or code >= 128) and sandbox_ended:
        if pids_hit:
            return "killed", "pids"
        return "killed", "oom" if recent_oom else "crashed"
    return "exited", None

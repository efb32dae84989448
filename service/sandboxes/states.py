"""The sandbox state machine, as data."""

from __future__ import annotations

from enum import StrEnum

from service.errors import InvalidTransition


class State(StrEnum):
    CREATING = "creating"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"
    PAUSING = "pausing"
    PAUSED = "paused"
    RESUMING = "resuming"


ALLOWED: dict[State | None, frozenset[State]] = {
    None: frozenset({State.CREATING}),
    State.CREATING: frozenset({State.RUNNING, State.FAILED, State.STOPPING}),
    State.RUNNING: frozenset({State.STOPPING, State.FAILED, State.PAUSING}),
    # A pause that did not happen leaves the sandbox running.
    State.PAUSING: frozenset({State.PAUSED, State.RUNNING, State.FAILED, State.STOPPING}),
    State.PAUSED: frozenset({State.RESUMING, State.STOPPING, State.FAILED}),
    # A resume the host had no room for leaves the sandbox paused.
    State.RESUMING: frozenset({State.RUNNING, State.PAUSED, State.FAILED, State.STOPPING}),
    State.FAILED: frozenset({State.STOPPING}),
    State.STOPPING: frozenset({State.STOPPED, State.FAILED}),
    State.STOPPED: frozenset(),
}

# States in which a sandbox holds (or may hold) runtime resources and counts against quotas.
ACTIVE = frozenset({State.CREATING, State.RUNNING, State.STOPPING, State.PAUSING, State.RESUMING})
# The states of a sandbox that still exists on its node (its checkpoint, when paused).
LIVE = ACTIVE | {State.PAUSED}


def check(current: State | None, target: State) -> None:
    if target not in ALLOWED[current]:
        raise InvalidTransition(
            f"a sandbox that is {current.value if current else 'new'} cannot become {target.value}",
            extra={"state": current.value if current else None},
        )

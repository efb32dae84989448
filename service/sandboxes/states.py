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


ALLOWED: dict[State | None, frozenset[State]] = {
    None: frozenset({State.CREATING}),
    State.CREATING: frozenset({State.RUNNING, State.FAILED, State.STOPPING}),
    State.RUNNING: frozenset({State.STOPPING, State.FAILED}),
    State.FAILED: frozenset({State.STOPPING}),
    State.STOPPING: frozenset({State.STOPPED, State.FAILED}),
    State.STOPPED: frozenset(),
}

# States in which a sandbox holds (or may hold) runtime resources and counts against quotas.
ACTIVE = frozenset({State.CREATING, State.RUNNING, State.STOPPING})


def check(current: State | None, target: State) -> None:
    if target not in ALLOWED[current]:
        raise InvalidTransition(
            f"a sandbox that is {current.value if current else 'new'} cannot become {target.value}",
            extra={"state": current.value if current else None},
        )

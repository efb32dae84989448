from typing import Literal, cast

State = Literal["creating", "failed", "paused", "pausing", "resuming", "running", "stopped", "stopping"]

STATE_VALUES: set[State] = {
    "creating",
    "failed",
    "paused",
    "pausing",
    "resuming",
    "running",
    "stopped",
    "stopping",
}


def check_state(value: str) -> State:
    if value in STATE_VALUES:
        return cast(State, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {STATE_VALUES!r}")

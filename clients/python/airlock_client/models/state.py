from typing import Literal, cast

State = Literal["creating", "failed", "running", "stopped", "stopping"]

STATE_VALUES: set[State] = {
    "creating",
    "failed",
    "running",
    "stopped",
    "stopping",
}


def check_state(value: str) -> State:
    if value in STATE_VALUES:
        return cast(State, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {STATE_VALUES!r}")

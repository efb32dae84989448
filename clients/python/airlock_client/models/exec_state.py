from typing import Literal, cast

ExecState = Literal["failed", "finished", "interrupted", "running"]

EXEC_STATE_VALUES: set[ExecState] = {
    "failed",
    "finished",
    "interrupted",
    "running",
}


def check_exec_state(value: str) -> ExecState:
    if value in EXEC_STATE_VALUES:
        return cast(ExecState, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {EXEC_STATE_VALUES!r}")

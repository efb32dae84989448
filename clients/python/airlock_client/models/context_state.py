from typing import Literal, cast

ContextState = Literal["busy", "gone", "ready"]

CONTEXT_STATE_VALUES: set[ContextState] = {
    "busy",
    "gone",
    "ready",
}


def check_context_state(value: str) -> ContextState:
    if value in CONTEXT_STATE_VALUES:
        return cast(ContextState, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {CONTEXT_STATE_VALUES!r}")

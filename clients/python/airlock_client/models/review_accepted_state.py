from typing import Literal, cast

ReviewAcceptedState = Literal["failed", "finished", "queued", "running"]

REVIEW_ACCEPTED_STATE_VALUES: set[ReviewAcceptedState] = {
    "failed",
    "finished",
    "queued",
    "running",
}


def check_review_accepted_state(value: str) -> ReviewAcceptedState:
    if value in REVIEW_ACCEPTED_STATE_VALUES:
        return cast(ReviewAcceptedState, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {REVIEW_ACCEPTED_STATE_VALUES!r}")

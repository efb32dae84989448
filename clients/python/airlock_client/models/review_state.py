from typing import Literal, cast

ReviewState = Literal["failed", "finished", "queued", "running"]

REVIEW_STATE_VALUES: set[ReviewState] = {
    "failed",
    "finished",
    "queued",
    "running",
}


def check_review_state(value: str) -> ReviewState:
    if value in REVIEW_STATE_VALUES:
        return cast(ReviewState, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {REVIEW_STATE_VALUES!r}")

from typing import Literal, cast

ReviewSummaryState = Literal["failed", "finished", "queued", "running"]

REVIEW_SUMMARY_STATE_VALUES: set[ReviewSummaryState] = {
    "failed",
    "finished",
    "queued",
    "running",
}


def check_review_summary_state(value: str) -> ReviewSummaryState:
    if value in REVIEW_SUMMARY_STATE_VALUES:
        return cast(ReviewSummaryState, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {REVIEW_SUMMARY_STATE_VALUES!r}")

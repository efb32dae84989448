from typing import Literal, cast

ExecSummaryState = Literal["failed", "finished", "interrupted", "running"]

EXEC_SUMMARY_STATE_VALUES: set[ExecSummaryState] = {
    "failed",
    "finished",
    "interrupted",
    "running",
}


def check_exec_summary_state(value: str) -> ExecSummaryState:
    if value in EXEC_SUMMARY_STATE_VALUES:
        return cast(ExecSummaryState, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {EXEC_SUMMARY_STATE_VALUES!r}")

from typing import Literal, cast

TemplateState = Literal["building", "failed", "queued", "ready"]

TEMPLATE_STATE_VALUES: set[TemplateState] = {
    "building",
    "failed",
    "queued",
    "ready",
}


def check_template_state(value: str) -> TemplateState:
    if value in TEMPLATE_STATE_VALUES:
        return cast(TemplateState, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TEMPLATE_STATE_VALUES!r}")

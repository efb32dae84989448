from typing import Literal, cast

TemplateVersionState = Literal["building", "failed", "queued", "ready"]

TEMPLATE_VERSION_STATE_VALUES: set[TemplateVersionState] = {
    "building",
    "failed",
    "queued",
    "ready",
}


def check_template_version_state(value: str) -> TemplateVersionState:
    if value in TEMPLATE_VERSION_STATE_VALUES:
        return cast(TemplateVersionState, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TEMPLATE_VERSION_STATE_VALUES!r}")

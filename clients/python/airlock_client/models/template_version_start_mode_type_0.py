from typing import Literal, cast

TemplateVersionStartModeType0 = Literal["image", "snapshot"]

TEMPLATE_VERSION_START_MODE_TYPE_0_VALUES: set[TemplateVersionStartModeType0] = {
    "image",
    "snapshot",
}


def check_template_version_start_mode_type_0(value: str) -> TemplateVersionStartModeType0:
    if value in TEMPLATE_VERSION_START_MODE_TYPE_0_VALUES:
        return cast(TemplateVersionStartModeType0, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TEMPLATE_VERSION_START_MODE_TYPE_0_VALUES!r}")

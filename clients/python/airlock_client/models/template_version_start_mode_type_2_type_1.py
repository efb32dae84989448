from typing import Literal, cast

TemplateVersionStartModeType2Type1 = Literal["image", "snapshot"]

TEMPLATE_VERSION_START_MODE_TYPE_2_TYPE_1_VALUES: set[TemplateVersionStartModeType2Type1] = {
    "image",
    "snapshot",
}


def check_template_version_start_mode_type_2_type_1(value: str) -> TemplateVersionStartModeType2Type1:
    if value in TEMPLATE_VERSION_START_MODE_TYPE_2_TYPE_1_VALUES:
        return cast(TemplateVersionStartModeType2Type1, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TEMPLATE_VERSION_START_MODE_TYPE_2_TYPE_1_VALUES!r}")

from typing import Literal, cast

TemplateCreateSize = Literal["large", "medium", "small"]

TEMPLATE_CREATE_SIZE_VALUES: set[TemplateCreateSize] = {
    "large",
    "medium",
    "small",
}


def check_template_create_size(value: str) -> TemplateCreateSize:
    if value in TEMPLATE_CREATE_SIZE_VALUES:
        return cast(TemplateCreateSize, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TEMPLATE_CREATE_SIZE_VALUES!r}")

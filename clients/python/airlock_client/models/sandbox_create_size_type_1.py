from typing import Literal, cast

SandboxCreateSizeType1 = Literal["large", "medium", "small"]

SANDBOX_CREATE_SIZE_TYPE_1_VALUES: set[SandboxCreateSizeType1] = {
    "large",
    "medium",
    "small",
}


def check_sandbox_create_size_type_1(value: str) -> SandboxCreateSizeType1:
    if value in SANDBOX_CREATE_SIZE_TYPE_1_VALUES:
        return cast(SandboxCreateSizeType1, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SANDBOX_CREATE_SIZE_TYPE_1_VALUES!r}")

from typing import Literal, cast

SandboxCreateSizeType3Type1 = Literal["large", "medium", "small"]

SANDBOX_CREATE_SIZE_TYPE_3_TYPE_1_VALUES: set[SandboxCreateSizeType3Type1] = {
    "large",
    "medium",
    "small",
}


def check_sandbox_create_size_type_3_type_1(value: str) -> SandboxCreateSizeType3Type1:
    if value in SANDBOX_CREATE_SIZE_TYPE_3_TYPE_1_VALUES:
        return cast(SandboxCreateSizeType3Type1, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SANDBOX_CREATE_SIZE_TYPE_3_TYPE_1_VALUES!r}")

from typing import Literal, cast

SandboxCreateSizeType0 = Literal["large", "medium", "small"]

SANDBOX_CREATE_SIZE_TYPE_0_VALUES: set[SandboxCreateSizeType0] = {
    "large",
    "medium",
    "small",
}


def check_sandbox_create_size_type_0(value: str) -> SandboxCreateSizeType0:
    if value in SANDBOX_CREATE_SIZE_TYPE_0_VALUES:
        return cast(SandboxCreateSizeType0, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SANDBOX_CREATE_SIZE_TYPE_0_VALUES!r}")

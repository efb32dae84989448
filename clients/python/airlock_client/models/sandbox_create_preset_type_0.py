from typing import Literal, cast

SandboxCreatePresetType0 = Literal["ci", "untrusted-tool"]

SANDBOX_CREATE_PRESET_TYPE_0_VALUES: set[SandboxCreatePresetType0] = {
    "ci",
    "untrusted-tool",
}


def check_sandbox_create_preset_type_0(value: str) -> SandboxCreatePresetType0:
    if value in SANDBOX_CREATE_PRESET_TYPE_0_VALUES:
        return cast(SandboxCreatePresetType0, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SANDBOX_CREATE_PRESET_TYPE_0_VALUES!r}")

from typing import Literal, cast

SandboxCreatePresetType3Type1 = Literal["ci", "untrusted-tool"]

SANDBOX_CREATE_PRESET_TYPE_3_TYPE_1_VALUES: set[SandboxCreatePresetType3Type1] = {
    "ci",
    "untrusted-tool",
}


def check_sandbox_create_preset_type_3_type_1(value: str) -> SandboxCreatePresetType3Type1:
    if value in SANDBOX_CREATE_PRESET_TYPE_3_TYPE_1_VALUES:
        return cast(SandboxCreatePresetType3Type1, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SANDBOX_CREATE_PRESET_TYPE_3_TYPE_1_VALUES!r}")

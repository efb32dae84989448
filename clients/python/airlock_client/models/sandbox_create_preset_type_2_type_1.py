from typing import Literal, cast

SandboxCreatePresetType2Type1 = Literal["ci", "untrusted-tool"]

SANDBOX_CREATE_PRESET_TYPE_2_TYPE_1_VALUES: set[SandboxCreatePresetType2Type1] = {
    "ci",
    "untrusted-tool",
}


def check_sandbox_create_preset_type_2_type_1(value: str) -> SandboxCreatePresetType2Type1:
    if value in SANDBOX_CREATE_PRESET_TYPE_2_TYPE_1_VALUES:
        return cast(SandboxCreatePresetType2Type1, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SANDBOX_CREATE_PRESET_TYPE_2_TYPE_1_VALUES!r}")

from typing import Literal, cast

SandboxNetworkMode = Literal["allowlist", "none", "open"]

SANDBOX_NETWORK_MODE_VALUES: set[SandboxNetworkMode] = {
    "allowlist",
    "none",
    "open",
}


def check_sandbox_network_mode(value: str) -> SandboxNetworkMode:
    if value in SANDBOX_NETWORK_MODE_VALUES:
        return cast(SandboxNetworkMode, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {SANDBOX_NETWORK_MODE_VALUES!r}")

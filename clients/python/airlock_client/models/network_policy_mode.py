from typing import Literal, cast

NetworkPolicyMode = Literal["allowlist", "none", "open"]

NETWORK_POLICY_MODE_VALUES: set[NetworkPolicyMode] = {
    "allowlist",
    "none",
    "open",
}


def check_network_policy_mode(value: str) -> NetworkPolicyMode:
    if value in NETWORK_POLICY_MODE_VALUES:
        return cast(NetworkPolicyMode, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {NETWORK_POLICY_MODE_VALUES!r}")

from typing import Literal, cast

NetworkChangeMode = Literal["allowlist", "open"]

NETWORK_CHANGE_MODE_VALUES: set[NetworkChangeMode] = {
    "allowlist",
    "open",
}


def check_network_change_mode(value: str) -> NetworkChangeMode:
    if value in NETWORK_CHANGE_MODE_VALUES:
        return cast(NetworkChangeMode, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {NETWORK_CHANGE_MODE_VALUES!r}")

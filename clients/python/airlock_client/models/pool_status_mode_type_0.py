from typing import Literal, cast

PoolStatusModeType0 = Literal["image", "snapshot"]

POOL_STATUS_MODE_TYPE_0_VALUES: set[PoolStatusModeType0] = {
    "image",
    "snapshot",
}


def check_pool_status_mode_type_0(value: str) -> PoolStatusModeType0:
    if value in POOL_STATUS_MODE_TYPE_0_VALUES:
        return cast(PoolStatusModeType0, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {POOL_STATUS_MODE_TYPE_0_VALUES!r}")

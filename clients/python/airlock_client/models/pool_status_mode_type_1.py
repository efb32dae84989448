from typing import Literal, cast

PoolStatusModeType1 = Literal["image", "snapshot"]

POOL_STATUS_MODE_TYPE_1_VALUES: set[PoolStatusModeType1] = {
    "image",
    "snapshot",
}


def check_pool_status_mode_type_1(value: str) -> PoolStatusModeType1:
    if value in POOL_STATUS_MODE_TYPE_1_VALUES:
        return cast(PoolStatusModeType1, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {POOL_STATUS_MODE_TYPE_1_VALUES!r}")

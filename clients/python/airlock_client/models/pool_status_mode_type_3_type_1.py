from typing import Literal, cast

PoolStatusModeType3Type1 = Literal["image", "snapshot"]

POOL_STATUS_MODE_TYPE_3_TYPE_1_VALUES: set[PoolStatusModeType3Type1] = {
    "image",
    "snapshot",
}


def check_pool_status_mode_type_3_type_1(value: str) -> PoolStatusModeType3Type1:
    if value in POOL_STATUS_MODE_TYPE_3_TYPE_1_VALUES:
        return cast(PoolStatusModeType3Type1, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {POOL_STATUS_MODE_TYPE_3_TYPE_1_VALUES!r}")

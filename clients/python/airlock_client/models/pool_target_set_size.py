from typing import Literal, cast

PoolTargetSetSize = Literal["large", "medium", "small"]

POOL_TARGET_SET_SIZE_VALUES: set[PoolTargetSetSize] = {
    "large",
    "medium",
    "small",
}


def check_pool_target_set_size(value: str) -> PoolTargetSetSize:
    if value in POOL_TARGET_SET_SIZE_VALUES:
        return cast(PoolTargetSetSize, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {POOL_TARGET_SET_SIZE_VALUES!r}")

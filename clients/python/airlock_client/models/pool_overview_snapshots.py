from typing import Literal, cast

PoolOverviewSnapshots = Literal["disabled", "supported", "unknown", "unsupported"]

POOL_OVERVIEW_SNAPSHOTS_VALUES: set[PoolOverviewSnapshots] = {
    "disabled",
    "supported",
    "unknown",
    "unsupported",
}


def check_pool_overview_snapshots(value: str) -> PoolOverviewSnapshots:
    if value in POOL_OVERVIEW_SNAPSHOTS_VALUES:
        return cast(PoolOverviewSnapshots, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {POOL_OVERVIEW_SNAPSHOTS_VALUES!r}")

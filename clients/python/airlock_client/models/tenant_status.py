from typing import Literal, cast

TenantStatus = Literal["active", "suspended"]

TENANT_STATUS_VALUES: set[TenantStatus] = {
    "active",
    "suspended",
}


def check_tenant_status(value: str) -> TenantStatus:
    if value in TENANT_STATUS_VALUES:
        return cast(TenantStatus, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TENANT_STATUS_VALUES!r}")

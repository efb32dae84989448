from typing import Literal, cast

TenantUpdateStatusType0 = Literal["active", "suspended"]

TENANT_UPDATE_STATUS_TYPE_0_VALUES: set[TenantUpdateStatusType0] = {
    "active",
    "suspended",
}


def check_tenant_update_status_type_0(value: str) -> TenantUpdateStatusType0:
    if value in TENANT_UPDATE_STATUS_TYPE_0_VALUES:
        return cast(TenantUpdateStatusType0, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TENANT_UPDATE_STATUS_TYPE_0_VALUES!r}")

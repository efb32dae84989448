from typing import Literal, cast

TenantUpdateStatusType1 = Literal["active", "suspended"]

TENANT_UPDATE_STATUS_TYPE_1_VALUES: set[TenantUpdateStatusType1] = {
    "active",
    "suspended",
}


def check_tenant_update_status_type_1(value: str) -> TenantUpdateStatusType1:
    if value in TENANT_UPDATE_STATUS_TYPE_1_VALUES:
        return cast(TenantUpdateStatusType1, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TENANT_UPDATE_STATUS_TYPE_1_VALUES!r}")

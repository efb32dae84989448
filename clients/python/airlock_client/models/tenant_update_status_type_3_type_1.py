from typing import Literal, cast

TenantUpdateStatusType3Type1 = Literal["active", "suspended"]

TENANT_UPDATE_STATUS_TYPE_3_TYPE_1_VALUES: set[TenantUpdateStatusType3Type1] = {
    "active",
    "suspended",
}


def check_tenant_update_status_type_3_type_1(value: str) -> TenantUpdateStatusType3Type1:
    if value in TENANT_UPDATE_STATUS_TYPE_3_TYPE_1_VALUES:
        return cast(TenantUpdateStatusType3Type1, value)
    raise TypeError(f"Unexpected value {value!r}. Expected one of {TENANT_UPDATE_STATUS_TYPE_3_TYPE_1_VALUES!r}")
